"""Parquet parts, `data/part-NNNNN.parquet`, one per chunk of steps, or two for a chunk of at least twice
MIN_PART_TOKENS: a row per sequence, its `input_ids` (list<int32>, seq_len + 1 ids) and its `step`, rows in schedule
order and parts in name order. The parts have
their own folder so that readers given a folder (`datasets.load_dataset("parquet", data_dir=".../data")`,
`pyarrow.parquet.read_table(".../data")`) find nothing else there: both would try export.json as Parquet.
A part appears whole or not at all (a temporary name, then a rename), so resuming rewrites only the parts after
the last one recorded.

`input_ids` is written plain: no dictionary, no compression, no statistics, 4 bytes a token, what HF datasets keeps
in its own Arrow cache of the parts anyway. Encoding is what makes this format slower than the others (about what
reading the curated tokens costs), so it is the cheapest pyarrow has. Encoding a part of the bundled corpora's
tokens (2.0M, ids below 8,192) took, in CPU time: dictionary + snappy (pyarrow's default) 33 ms for 3.3 MB,
DELTA_BINARY_PACKED 27 ms for 3.7 MB, BYTE_STREAM_SPLIT + lz4 26 ms for 3.5 MB (readers before pyarrow 16 cannot
read it), plain lz4 37 ms for 4.3 MB, plain uncompressed 17 ms for 8.1 MB. A smaller copy is one
`pyarrow.parquet.write_table` (or DuckDB `COPY`) away."""

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from loom.io import atomic_path
from loom.workspace import part_name
from mixtures.export.writer import FormatWriter, fsync_path

PARTS_DIR = "data"
PART = re.compile(r"part-\d{5,}\.parquet")
SCHEMA = pa.schema([("input_ids", pa.list_(pa.int32())), ("step", pa.int64())])
PARTS_A_CHUNK = 2
MIN_PART_TOKENS = 1 << 20
WRITE_OPTIONS = {"compression": "none", "use_dictionary": ["step"], "write_statistics": ["step"]}


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
        """The chunk as up to PARTS_A_CHUNK parts of at least MIN_PART_TOKENS, encoded on as many threads: pyarrow
        encodes without the GIL, and a chunk is an export's last as often as not, with nothing else to overlap.
        (A part has a cost of its own, ~2 ms: smaller chunks are written whole.)"""
        parts = max(1, min(PARTS_A_CHUNK, tokens.size // MIN_PART_TOKENS, len(tokens)))
        bounds = [len(tokens) * i // parts for i in range(parts + 1)]
        with ThreadPoolExecutor(max_workers=parts, thread_name_prefix="parquet-part") as encoding:
            written = [encoding.submit(self.write_part, part_name(self.parts + i), tokens[lo:hi], steps[lo:hi])
                       for i, (lo, hi) in enumerate(zip(bounds, bounds[1:]))]
            for part in written:
                part.result()
        self.parts += parts

    def write_part(self, name: str, tokens: np.ndarray, steps: np.ndarray) -> None:
        flat = pa.array(np.ascontiguousarray(tokens, dtype=np.int32).reshape(-1))
        offsets = pa.array(np.arange(0, tokens.size + 1, self.width, dtype=np.int32))
        table = pa.table([pa.ListArray.from_arrays(offsets, flat), pa.array(steps, pa.int64())], schema=SCHEMA)
        with atomic_path(self.folder / PARTS_DIR / name) as tmp:
            pq.write_table(table, tmp, **WRITE_OPTIONS)
            fsync_path(tmp)

    def state(self) -> dict:
        return {"parts": self.parts}
