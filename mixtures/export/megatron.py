"""Megatron-LM's indexed dataset (megatron.core.datasets.indexed_dataset): `tokens.bin`, the token ids one
sequence after another, and `tokens.idx`, the index Megatron's IndexedDataset reads. One document per sequence,
so Megatron's GPTDataset, which packs documents, gives back exactly these sequences in order when it neither
shuffles nor samples (or reads them with `IndexedDataset(prefix)[i]`).

The index, little-endian: the magic `MMIDIDX\\0\\0`, version 1 (uint64), the dtype code (uint8), the number of
sequences and of document boundaries (uint64 each), every sequence's length (int32), its byte offset into
.bin (int64), and the document boundaries (int64: 0, then the end of each document, counted in sequences). It is
written once, after the last chunk, in blocks, so no array the size of the export is ever held."""

import struct
from pathlib import Path

import numpy as np

from base.atomic_files import atomic_path
from mixtures.export.writer import FormatWriter, TokenFile, fsync_path

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}  # Megatron's DType enum
UINT16_BELOW = 65500  # Megatron's DType.optimal_dtype: uint16 below this vocabulary size, else int32
PREFIX = "tokens"  # Megatron's --data-path is the folder/tokens
INDEX_BLOCK = 1 << 20  # sequences per block of the index written


def megatron_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size < UINT16_BELOW else np.int32)


class MegatronWriter(FormatWriter):
    name = "megatron"

    def __init__(self, folder: Path, dtype: np.dtype, width: int):
        super().__init__(folder, dtype, width)
        self.bin = TokenFile(self.folder / f"{PREFIX}.bin", dtype)

    def files(self) -> list[str]:
        return [f"{PREFIX}.bin", f"{PREFIX}.idx"]

    def resume(self, state: dict | None) -> None:
        (self.folder / f"{PREFIX}.idx").unlink(missing_ok=True)
        self.bin.resume(state["bin_bytes"] if state else 0)

    def write(self, first_step: int, tokens: np.ndarray, steps: np.ndarray) -> None:
        self.bin.append(tokens)

    def state(self) -> dict:
        return {"bin_bytes": self.bin.bytes}

    def finish(self, sequences: int) -> None:
        path = self.folder / f"{PREFIX}.idx"
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as index:
                write_index(index, sequences, self.width, self.dtype)
            fsync_path(tmp)


def write_index(index, sequences: int, width: int, dtype: np.dtype) -> None:
    """The .idx of `sequences` documents of one sequence of `width` tokens each."""
    index.write(MAGIC)
    index.write(struct.pack("<Q", VERSION))
    index.write(struct.pack("<B", DTYPE_CODES[np.dtype(dtype)]))
    index.write(struct.pack("<Q", sequences))
    index.write(struct.pack("<Q", sequences + 1))
    for start in range(0, sequences, INDEX_BLOCK):
        index.write(np.full(min(INDEX_BLOCK, sequences - start), width, dtype="<i4").tobytes())
    for start in range(0, sequences, INDEX_BLOCK):
        block = np.arange(start, min(start + INDEX_BLOCK, sequences), dtype="<i8")
        index.write((block * (width * np.dtype(dtype).itemsize)).tobytes())
    for start in range(0, sequences + 1, INDEX_BLOCK):
        index.write(np.arange(start, min(start + INDEX_BLOCK, sequences + 1), dtype="<i8").tobytes())
