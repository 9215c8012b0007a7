"""Fingerprints: of a file's bytes (models and tokenizers), and of several strings (configs, paths)."""

import hashlib

from base.store import as_path


def file_digest(path, length: int = 16) -> str:
    """The first `length` hex digits of a file's SHA-256: models and tokenizers are fingerprinted by content."""
    digest = hashlib.sha256()
    with as_path(path).open("rb") as file:
        while chunk := file.read(1 << 20):  # a model may be hundreds of MB: never held whole
            digest.update(chunk)
    return digest.hexdigest()[:length]


def text_digest(*parts: str, length: int = 24) -> str:
    """A fingerprint of several strings (joined by a separator no config or path holds); a path's as its bytes."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:length]
