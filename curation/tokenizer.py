"""The BPE tokenizer: trained from the sources (`loom tokenizer train`), or any tokenizer.json given."""

import functools
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from base.atomic_files import atomic_path
from base.digests import file_digest
from base.errors import UserError
from base.inputs import local_file
from curation.config import SourceConfig
from curation.samples import source_texts

EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>", "[SEP]")
DEFAULT_VOCAB_SIZE = 8192


def training_texts(sources: list[SourceConfig], max_docs_per_source: int, progress=None) -> Iterator[str]:
    """Normalized (and HTML-extracted) texts, the first `max_docs_per_source` of each source; when no source has
    one, a UserError once they are read (a tokenizer of bytes alone would curate without a word of complaint).
    `progress(what, total)` gives a callable advanced once per text read (loom.api's shape; the total is unknown)."""
    advance = progress("read texts", None) if progress else (lambda n=1: None)
    read = 0
    for source in sources:
        for text in source_texts(source, max_docs_per_source):
            read += 1
            advance(1)
            yield text
    if not read:
        formats = ", ".join(sorted({f"{s.name}: {s.format}" for s in sources}))
        raise UserError(f"the sources hold no document to train a tokenizer on ({formats}); check each source's "
                        "`paths` and `format` (text-dir reads *.txt files, html-dir *.html and *.htm)")


def train_tokenizer(texts: Iterable[str], out_path: Path, vocab_size: int = DEFAULT_VOCAB_SIZE) -> Tokenizer:
    """Byte-level BPE (GPT-2 style): every string round-trips, whatever its language."""
    if vocab_size < 300:
        raise UserError(f"--vocab-size {vocab_size} is too small; byte-level BPE needs at least 300")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS_CANDIDATES[0]],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    with atomic_path(out_path) as tmp:
        tokenizer.save(str(tmp))
    return tokenizer


def tokenizer_fingerprint(path: Path) -> str:
    return file_digest(path)


@functools.cache
def load_tokenizer(path: str) -> tuple[Tokenizer, int]:
    """The tokenizer and its end-of-sequence id. Raises UserError for a missing or unusable file."""
    try:
        local = local_file(path)
    except FileNotFoundError:
        local = None
    if local is None or not local.is_file():
        raise UserError(f"no tokenizer at {path}; run `loom tokenizer train` or pass --tokenizer FILE")
    try:
        tokenizer = Tokenizer.from_file(str(local))
    except Exception as err:
        raise UserError(f"{path} is not a tokenizer.json the `tokenizers` library can load ({err})") from None
    for token in EOS_CANDIDATES:
        eos = tokenizer.token_to_id(token)
        if eos is not None:
            return tokenizer, eos
    raise UserError(f"{path} has no end-of-sequence token (looked for {', '.join(EOS_CANDIDATES)}); add one")


def encode_to_arrow(tokenizer: Tokenizer, eos_id: int, texts: list[str]) -> pa.ListArray:
    """Token ids of each text with EOS appended, as list<uint32>, built without a Python list per token."""
    encodings = tokenizer.encode_batch_fast(texts, add_special_tokens=False)
    lengths = np.fromiter((len(e) + 1 for e in encodings), dtype=np.int64, count=len(encodings))
    offsets = np.zeros(len(encodings) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty(int(offsets[-1]), dtype=np.uint32)
    for start, encoding in zip(offsets[:-1], encodings):
        ids = encoding.ids
        flat[start : start + len(ids)] = ids
        flat[start + len(ids)] = eos_id
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=pa.uint32()))
