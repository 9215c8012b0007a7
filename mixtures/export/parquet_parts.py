"""Parquet parts, `data/part-NNNNN.parquet`, one per chunk of steps: a row per sequence, its `input_ids`
(list<int32>, seq_len + 1 ids) and its `step`, rows in schedule order and parts in name order. The parts have
their own folder so that readers given a folder (`datasets.load_dataset("parquet", data_dir=".../data")`,
`pyarrow.parquet.read_table(".../data")`) find nothing else there: both would try export.json as Parquet.
A part appears whole or not at all (a temporary name, then a rename), so resuming rewrites only the parts after
the last one recorded.

The parts are written by parquet_file.py, not pyarrow (its writer cost ~8 ns a token, that one ~1 ns): `input_ids`
plain, uncompressed, 4 bytes a token (what HF datasets keeps in its own Arrow cache of the parts anyway), `step`
with its min and max, so a reader after some steps skips the other parts. A smaller copy is one
`pyarrow.parquet.write_table` (or DuckDB `COPY`) away."""

import re
from pathlib import Path

import numpy as np

from base.atomic_files import atomic_path
from base.workspace import part_name
from mixtures.export.parquet_file import write_sequences
from mixtures.export.writer import FormatWriter, fsync_path

PARTS_DIR = "data"
PART = re.compile(r"part-\d{5,}\.parquet")


class ParquetWriter(FormatWriter):
    name = "parquet"

    def __init__(self, folder: Path, dtype: np.dtype, width: int):
        super().__init__(folder, np.dtype(np.int32), width)
        self.parts = 0

    def files(self) -> list[str]:
        parts = self.folder / PARTS_DIR
        return sorted(f"{PARTS_DIR}/{p.name}" for p in parts.glob("part-*.parquet") if PART.fullmatch(p.name))

    def owns(self, name: str) -> bool:
        return name == PARTS_DIR

    def clear(self) -> None:
        for name in self.files():
            (self.folder / name).unlink()

    def resume(self, state: dict | None) -> None:
        self.parts = state["parts"] if state else 0
        for name in self.files()[self.parts:]:  # written after the last record
            (self.folder / name).unlink()

    def write(self, first_step: int, tokens: np.ndarray, steps: np.ndarray) -> None:
        with atomic_path(self.folder / PARTS_DIR / part_name(self.parts)) as tmp:
            with open(tmp, "wb") as part:
                write_sequences(part, tokens, steps)
            fsync_path(tmp)
        self.parts += 1

    def state(self) -> dict:
        return {"parts": self.parts}
