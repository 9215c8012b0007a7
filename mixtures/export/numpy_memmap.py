"""The flat token file nanoGPT and OLMo read: `tokens.bin`, every sequence's seq_len + 1 token ids one after
another, no header (uint16 when the vocabulary fits, else uint32). `np.memmap(path, dtype).reshape(-1, width)`
gives the sequences in schedule order; export.json beside it says the dtype and the width."""

from pathlib import Path

import numpy as np

from mixtures.export.writer import FormatWriter, TokenFile

TOKENS_FILE = "tokens.bin"


def numpy_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


class NumpyWriter(FormatWriter):
    name = "numpy"

    def __init__(self, folder: Path, dtype: np.dtype, width: int):
        super().__init__(folder, dtype, width)
        self.bin = TokenFile(self.folder / TOKENS_FILE, dtype)

    def files(self) -> list[str]:
        return [TOKENS_FILE]

    def resume(self, state: dict | None) -> None:
        self.bin.resume(state["bin_bytes"] if state else 0)

    def write(self, first_step: int, tokens: np.ndarray, steps: np.ndarray) -> None:
        self.bin.append(tokens)

    def state(self) -> dict:
        return {"bin_bytes": self.bin.bytes}
