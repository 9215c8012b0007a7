"""Batches for a rank, straight from a compiled schedule: which sequences (schedule), and their tokens read
through the mixture's SequenceReader (the curated Parquet a row group at a time, in a small cache, never the
whole dataset). A background thread prepares the next steps while the model trains."""

import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow.compute as pc
import torch

from base.parquet_files import read_parquet
from base.store import as_path
from mixtures import Schedule, SequenceIndex, SequenceReader


@dataclass
class Batch:
    step: int
    inputs: torch.Tensor  # (sequences, seq_len) int64
    targets: torch.Tensor  # (sequences, seq_len) int64
    sources: torch.Tensor  # (sequences, seq_len): the source id of each target token
    components: torch.Tensor  # (sequences,): the mixture component each sequence was drawn for
    counted: torch.Tensor | None = None  # (sequences,) bool, evaluation only: False for a rank's padding


def collate(step: int, pieces: list[tuple[int, np.ndarray, np.ndarray]], counted: list[bool] | None = None) -> Batch:
    components = torch.tensor([c for c, _, _ in pieces], dtype=torch.int64)
    tokens = torch.from_numpy(np.stack([t for _, t, _ in pieces]))
    sources = torch.from_numpy(np.stack([s for _, _, s in pieces]))
    mask = None if counted is None else torch.tensor(counted, dtype=torch.bool)
    return Batch(step, tokens[:, :-1], tokens[:, 1:], sources[:, 1:], components, mask)


class RankLoader:
    """The rank's slice of each step's global batch, from `start` to `end`, prepared `prefetch` steps ahead by
    a daemon thread. Step s reads the mixture's step `stream_step(s)` (a shorter budget's mid-training phase is
    the mixture's, trainer.cooldowns). `wait_seconds` adds up the time the training loop spent blocked on it."""

    def __init__(self, schedule: Schedule, reader: SequenceReader, rank: int, world_size: int,
                 start: int, end: int, stream_step: Callable[[int], int] = lambda step: step, prefetch: int = 4):
        self.schedule, self.reader, self.stream_step = schedule, reader, stream_step
        self.rank, self.world_size = rank, world_size
        self.component_id = {key: i for i, key in enumerate(schedule.components)}
        self.steps = range(start, end)
        self.wait_seconds = 0.0
        self._queue: queue.Queue = queue.Queue(maxsize=prefetch)
        self._thread = threading.Thread(target=self._produce, daemon=True)
        self._thread.start()

    def batch(self, step: int) -> Batch:
        pieces = []
        for key, sequence in self.schedule.rank_batch(self.stream_step(step), self.rank, self.world_size):
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


def deal(items: list, rank: int, world_size: int) -> list[tuple[object, bool]]:
    """The rank's round-robin share of `items`, as (item, counted). Every rank gets as many (FSDP2's forward is
    collective): a short rank is padded with items[0], not counted, so the sums are the same on any number of
    ranks."""
    if not items:
        return []
    mine = items[rank::world_size]
    return [(item, True) for item in mine] + [(items[0], False)] * (-(-len(items) // world_size) - len(mine))


def evaluation_batches(pieces: list[tuple[tuple, bool]], batch_size: int) -> list[Batch]:
    """(component, tokens, group of each token) pieces with their `counted` flag, in batches of `batch_size`."""
    return [collate(-1, [p for p, _ in pieces[i : i + batch_size]], [c for _, c in pieces[i : i + batch_size]])
            for i in range(0, len(pieces), batch_size)]


def validation_batches(schedule: Schedule, reader: SequenceReader, rank: int, world_size: int,
                       batch_size: int) -> list[Batch]:
    """The rank's share of the held-out documents of every source (mixtures.heldout), packed per source into
    sequences of seq_len + 1 (a tail that fills none is left out); each token's group is its source."""
    validation = schedule.meta.get("validation")
    if not validation:
        return []  # compiled before held-out documents: rebuilding the mixture gives it a validation set
    held_out = read_parquet(reader.folder / validation["file"])
    indexes = {source: SequenceIndex(held_out.filter(pc.equal(held_out["source"], source)), schedule.meta["seq_len"])
               for source, counts in validation["sources"].items() if counts["sequences"]}
    items = [(source, i) for source in indexes for i in range(validation["sources"][source]["sequences"])]
    pieces = [((0, *reader.read_from(indexes[source], i, f"source {source}'s validation")), counted)
              for (source, i), counted in deal(items, rank, world_size)]
    return evaluation_batches(pieces, batch_size)


def eval_set_batches(schedule: Schedule, folder: Path, rank: int, world_size: int, batch_size: int) -> list[Batch]:
    """The rank's share of the mixture's eval sets (mixtures.evalsets), each packed into sequences of
    seq_len + 1; each token's group is its set's index in schedule.json's `evals`."""
    width = schedule.meta["seq_len"] + 1
    items = []
    for i, record in enumerate(schedule.meta.get("evals", [])):
        ids = read_parquet(as_path(folder) / record["file"])["input_ids"].combine_chunks()
        stream = ids.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
        items += [(i, sequence) for sequence in stream[: record["sequences"] * width].reshape(-1, width)]
    pieces = [((0, sequence, np.full(width, i, dtype=np.int64)), counted)
              for (i, sequence), counted in deal(items, rank, world_size)]
    return evaluation_batches(pieces, batch_size)
