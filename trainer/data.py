"""Batches for a rank, straight from a compiled schedule: which sequences (schedule), where their tokens lie
(the sequence index), and the curated Parquet rows themselves, read a row group at a time and kept in a small
cache, never the whole dataset. A background thread prepares the next steps while the model trains.

On an object store a row group miss is one ranged read of that row group's `input_ids` column chunk (after the
part's footer, once per part per process): a rank fetches only the tokens it reads, never a part's text nor the
rows other ranks read."""

import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch

from loom.io import as_path, parquet_row_groups
from loom.workspace import Generation
from mixtures import Schedule, SequenceIndex, shard_sources


@dataclass
class Batch:
    step: int
    inputs: torch.Tensor  # (sequences, seq_len) int64
    targets: torch.Tensor  # (sequences, seq_len) int64
    sources: torch.Tensor  # (sequences, seq_len): the source id of each target token
    components: torch.Tensor  # (sequences,): the mixture component each sequence was drawn for


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
        self.indexes = [SequenceIndex(as_path(folder) / c["file"], meta["seq_len"]) for c in meta["components"]]
        self.source_id = {name: i for i, name in enumerate(sources)}
        self.shard_source = shard_sources(data)
        self.cache = RowGroupCache(data.root)

    def read(self, component: int, sequence: int) -> tuple[np.ndarray, np.ndarray]:
        tokens, sources = [], []
        for shard, row, start, length in self.indexes[component].locate(sequence):
            tokens.append(self.cache.tokens(shard, row, start, length))
            sources.append(np.full(length, self.source_id[self.shard_source[shard]], dtype=np.int64))
        tokens, sources = np.concatenate(tokens).astype(np.int64), np.concatenate(sources)
        if len(tokens) != self.width:
            raise RuntimeError(f"sequence {sequence} of component {component} has {len(tokens)} tokens, not "
                               f"{self.width}: the curated data changed under the schedule; rebuild the mixture")
        return tokens, sources


def collate(step: int, pieces: list[tuple[int, np.ndarray, np.ndarray]]) -> Batch:
    components = torch.tensor([c for c, _, _ in pieces], dtype=torch.int64)
    tokens = torch.from_numpy(np.stack([t for _, t, _ in pieces]))
    sources = torch.from_numpy(np.stack([s for _, _, s in pieces]))
    return Batch(step, tokens[:, :-1], tokens[:, 1:], sources[:, 1:], components)


class RankLoader:
    """The rank's slice of each step's global batch, from `start` to `end`, prepared `prefetch` steps ahead by
    a daemon thread. `wait_seconds` adds up the time the training loop spent blocked on it."""

    def __init__(self, schedule: Schedule, reader: SequenceReader, rank: int, world_size: int,
                 start: int, end: int, prefetch: int = 4):
        self.schedule, self.reader = schedule, reader
        self.rank, self.world_size = rank, world_size
        self.component_id = {key: i for i, key in enumerate(schedule.components)}
        self.steps = range(start, end)
        self.wait_seconds = 0.0
        self._queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self._thread = threading.Thread(target=self._produce, daemon=True)
        self._thread.start()

    def batch(self, step: int) -> Batch:
        pieces = []
        for key, sequence in self.schedule.rank_batch(step, self.rank, self.world_size):
            component = self.component_id[key]
            pieces.append((component, *self.reader.read(component, sequence)))
        return collate(step, pieces)

    def _produce(self):
        try:
            for step in self.steps:
                self._queue.put(self.batch(step))
        except BaseException as err:  # surfaces in the training loop, not as a silent hang
            self._queue.put(err)

    def __iter__(self):
        for _ in self.steps:
            began = time.perf_counter()
            item = self._queue.get()
            self.wait_seconds += time.perf_counter() - began
            if isinstance(item, BaseException):
                raise item
            yield item


def validation_batches(schedule: Schedule, reader: SequenceReader, rank: int, world_size: int,
                       batch_size: int) -> list[Batch]:
    """The held-out sequences (the tail of each component's stream, past what training may read), dealt
    round-robin to the ranks, in batches of at most `batch_size`. Every rank gets as many (FSDP2's forward is
    collective), so up to world_size - 1 of them are left out."""
    held_out = [(c, schedule.meta["components"][c]["available_sequences"] + j)
                for c in range(len(schedule.components))
                for j in range(schedule.meta["components"][c].get("validation_sequences", 0))]
    held_out = held_out[: len(held_out) - len(held_out) % world_size]
    mine = [(c, *reader.read(c, s)) for c, s in held_out[rank::world_size]]
    return [collate(-1, mine[i : i + batch_size]) for i in range(0, len(mine), batch_size)]
