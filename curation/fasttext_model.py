"""Loading a fastText model once per process (language ID and the quality classifier both use fastText), and
telling a fastText model file from any other file by its header, without loading it."""

import functools
import struct

FASTTEXT_MAGIC = 793712314  # the first little-endian int32 of every model fastText saves (.bin, quantized .ftz)
FASTTEXT_VERSION = 12  # the newest file version the fasttext package reads


def is_fasttext_header(head: bytes) -> bool:
    """Whether a file's first 8 bytes (magic, version) are those of a model this fasttext can load."""
    if len(head) < 8:
        return False
    magic, version = struct.unpack("<ii", head[:8])
    return magic == FASTTEXT_MAGIC and 0 < version <= FASTTEXT_VERSION


@functools.cache
def load_fasttext(path: str):
    import fasttext

    fasttext.FastText.eprint = lambda *args, **kwargs: None  # silences a load-time warning per process
    return fasttext.load_model(path)
