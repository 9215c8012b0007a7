"""The tokens of a compiled mixture's sequences, read from the curated Parquet a row group at a time and kept in
a small cache, never the whole dataset: what the trainer's batches and `loom mix export` are made of.

On an object store a row group miss is one ranged read of that row group's `input_ids` column chunk (after the
part's footer, once per part per process): a reader fetches only the tokens it reads, never a part's text."""

from collections import OrderedDict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from loom.io import as_path, parquet_row_groups
from loom.workspace import Generation
from mixtures.manifest import shard_sources
from mixtures.schedule import Schedule, SequenceIndex


class RowGroupCache:
    """`input_ids` of curated rows, by (shard, row): one Parquet row group read per miss, the last
    `capacity` row groups kept."""

    def __init__(self, root: Path, capacity: int = 16):
        self.root, self.capacity = as_path(root), capacity
        self._files: dict[str, tuple[pq.ParquetFile, np.ndarray]] = {}
        self._groups: OrderedDict = OrderedDict()

    def _file(self, shard: str):
        if shard not in self._files:
            file = parquet_row_groups(self.root / shard)
            starts = np.cumsum([0] + [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)])
            self._files[shard] = (file, starts)
        return self._files[shard]

    def tokens(self, shard: str, row: int, start: int, length: int) -> np.ndarray:
        file, starts = self._file(shard)
        group = int(np.searchsorted(starts, row, side="right")) - 1
        key = (shard, group)
        if key in self._groups:
            self._groups.move_to_end(key)
        else:
            column = file.read_row_group(group, columns=["input_ids"]).column("input_ids").combine_chunks()
            self._groups[key] = (column.offsets.to_numpy(), column.values.to_numpy())
            if len(self._groups) > self.capacity:
                self._groups.popitem(last=False)
        offsets, values = self._groups[key]
        begin = offsets[row - starts[group]] + start
        return values[begin : begin + length]


class SequenceReader:
    """The tokens of any sequence of any component, with the source of each token (its index in `sources`)."""

    def __init__(self, schedule: Schedule, folder: Path, data: Generation, sources: list[str]):
        meta = schedule.meta
        self.width = meta["seq_len"] + 1
        self.folder = as_path(folder)
        self.indexes = [SequenceIndex(self.folder / c["file"], meta["seq_len"]) for c in meta["components"]]
        self.source_id = {name: i for i, name in enumerate(sources)}
        self.shard_source = shard_sources(data)
        self.cache = RowGroupCache(data.root)

    def read(self, component: int, sequence: int) -> tuple[np.ndarray, np.ndarray]:
        return self.read_from(self.indexes[component], sequence, f"component {component}")

    def tokens(self, component: int, sequence: int) -> np.ndarray:
        """The tokens of `read`, without their sources (what an export writes), as the curated data stores them."""
        pieces = [self.cache.tokens(*piece) for piece in self.indexes[component].locate(sequence)]
        tokens = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        if len(tokens) != self.width:
            raise RuntimeError(f"sequence {sequence} of component {component} has {len(tokens)} tokens, not "
                               f"{self.width}: the curated data changed under the schedule; rebuild the mixture")
        return tokens

    def read_from(self, index: SequenceIndex, sequence: int, what: str) -> tuple[np.ndarray, np.ndarray]:
        tokens, sources = [], []
        for shard, row, start, length in index.locate(sequence):
            tokens.append(self.cache.tokens(shard, row, start, length))
            sources.append(np.full(length, self.source_id[self.shard_source[shard]], dtype=np.int64))
        tokens, sources = np.concatenate(tokens).astype(np.int64), np.concatenate(sources)
        if len(tokens) != self.width:
            raise RuntimeError(f"sequence {sequence} of {what} has {len(tokens)} tokens, not "
                               f"{self.width}: the curated data changed under the schedule; rebuild the mixture")
        return tokens, sources
