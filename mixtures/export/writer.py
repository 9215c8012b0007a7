"""What every export format shares: the writer's interface, and the append-only token file that Megatron's and
the numpy format's writers both are (one flat array of token ids, sequence after sequence, grown a chunk at a
time, each chunk on disk before the runner records it, cut back to the recorded length on resume)."""

import os
from pathlib import Path

import numpy as np


class FormatWriter:
    """One export format in one folder. The runner hands it chunks of whole steps, in order, as a
    (sequences, seq_len + 1) array; after each `write` the chunk is on disk (fsync'd) and `state()` says how far
    the files go, which is all `resume` needs to cut them back to exactly that point."""

    name = ""

    def __init__(self, folder: Path, dtype: np.dtype, width: int):
        self.folder, self.dtype, self.width = Path(folder), np.dtype(dtype), width

    def files(self) -> list[str]:
        """Every file the format writes into its folder (a former export's are the ones removed on restart)."""
        raise NotImplementedError

    def owns(self, name: str) -> bool:
        """Whether an entry of the folder is the format's (what a restart may remove)."""
        return name in self.files()

    def clear(self) -> None:
        """Every file of the format removed, for an export started afresh."""
        for name in self.files():
            (self.folder / name).unlink(missing_ok=True)

    def resume(self, state: dict | None) -> None:
        """Cut the files back to what `state` recorded (None: nothing recorded, start empty)."""
        raise NotImplementedError

    def write(self, first_step: int, tokens: np.ndarray, steps: np.ndarray) -> None:
        """`tokens` (sequences, width) of consecutive steps from `first_step`, `steps` the step of each row."""
        raise NotImplementedError

    def state(self) -> dict:
        raise NotImplementedError

    def finish(self, sequences: int) -> None:
        """Whatever is written once every chunk is (Megatron's index)."""


class TokenFile:
    """A flat binary file of tokens, appended to chunk by chunk: the .bin of Megatron and of the numpy format."""

    def __init__(self, path: Path, dtype: np.dtype):
        self.path, self.dtype = path, np.dtype(dtype)
        self.bytes = 0

    def resume(self, recorded_bytes: int) -> None:
        """Cut the file to the recorded length: bytes a killed export wrote after its last record are dropped."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as file:
            if file.tell() < recorded_bytes:
                raise RuntimeError(f"{self.path} is shorter ({file.tell():,} bytes) than its progress record "
                                   f"({recorded_bytes:,}): it was changed outside the export")
            file.truncate(recorded_bytes)
        self.bytes = recorded_bytes

    def append(self, tokens: np.ndarray) -> None:
        with open(self.path, "ab") as file:
            file.write(np.ascontiguousarray(tokens, dtype=self.dtype).tobytes())
            file.flush()
            os.fsync(file.fileno())
            self.bytes = file.tell()


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
