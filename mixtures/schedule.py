"""The compiled schedule: which packed sequences of which component make up each global batch.

Every global batch is one block: each component gets its exact count of the batch (largest-remainder rounding
of its share in the phase), and the order inside the block is a permutation seeded by the step. A component's
n-th sequence overall is index `n % available` of epoch `n // available`, through a seeded permutation of that
epoch, so repeated epochs are reshuffled, not replayed. The permutation is a Feistel network with cycle walking,
so any index of it costs O(1): `batch(step)` is O(batch), whatever the step.

Under simulated epoching (MixtureSpec.target_tokens) an epoch is a component's pool, not all it has: the j-th
sequence of the pool is index j of one more seeded permutation of all `available`, so the pool is a uniform
random subset of the component. A pool of everything (the default) takes no such step.
"""

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from base.parquet_files import parquet_file
from base.small_files import read_text
from base.store import as_path
from mixtures.compiled import SCHEDULE_FILE, read_plan

MASK64 = np.uint64(2**64 - 1)


def largest_remainder(shares: list[float], total: int) -> list[int]:
    """Whole counts summing to `total`, each within one of its exact share (ties go to the earlier key)."""
    exact = [s / sum(shares) * total for s in shares]
    counts = [int(e) for e in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _key(*parts) -> int:
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little")


def permute(indices: np.ndarray, n: int, key: int) -> np.ndarray:
    """A bijection of range(n), keyed, applied elementwise: a 4-round Feistel network over the smallest
    even-bit domain >= n, walking cycles until the value falls in range."""
    half_bits = max(1, (int(n - 1).bit_length() + 1) // 2)
    half_mask = np.uint64((1 << half_bits) - 1)
    round_keys = [np.uint64(_key(key, r)) for r in range(4)]
    x = indices.astype(np.uint64)
    pending = np.ones(len(x), dtype=bool)
    with np.errstate(over="ignore"):
        while pending.any():
            left, right = x[pending] >> np.uint64(half_bits), x[pending] & half_mask
            for k in round_keys:
                mixed = (right * np.uint64(0x9E3779B97F4A7C15) + k) & MASK64
                mixed ^= mixed >> np.uint64(29)
                left, right = right, (left ^ (mixed & half_mask))
            x[pending] = (left << np.uint64(half_bits)) | right
            pending = x >= np.uint64(n)
    return x.astype(np.int64)


@dataclass(frozen=True)
class PhasePlan:
    name: str
    start_step: int
    end_step: int  # exclusive
    counts: tuple[int, ...]  # sequences of each component in every batch of this phase


class Schedule:
    def __init__(self, meta: dict):
        self.meta = meta
        self.seed = meta["seed"]
        self.global_batch = meta["global_batch"]
        self.steps = meta["steps"]
        self.components = [c["key"] for c in meta["components"]]
        self.available = np.array([c["available_sequences"] for c in meta["components"]], dtype=np.int64)
        # schedules compiled before simulated epoching have no pool: all they have is read
        self.pool = np.array([c.get("pool_sequences", c["available_sequences"]) for c in meta["components"]],
                             dtype=np.int64)
        self.phases = [PhasePlan(p["name"], p["start_step"], p["end_step"], tuple(p["counts"])) for p in meta["phases"]]
        self._slot_order = [np.repeat(np.arange(len(p.counts)), p.counts) for p in self.phases]
        consumed = np.zeros(len(self.components), dtype=np.int64)
        self._consumed_before_phase = []
        for phase in self.phases:
            self._consumed_before_phase.append(consumed.copy())
            consumed += np.array(phase.counts, dtype=np.int64) * (phase.end_step - phase.start_step)

    @classmethod
    def load(cls, folder: Path) -> "Schedule":
        return cls(json.loads(read_text(as_path(folder) / SCHEDULE_FILE)))

    def phase_of(self, step: int) -> int:
        if not 0 <= step < self.steps:
            raise IndexError(f"step {step} is outside the schedule's {self.steps} steps")
        return next(i for i, p in enumerate(self.phases) if p.start_step <= step < p.end_step)

    def slots(self, step: int) -> np.ndarray:
        """The component of each position of the step's batch, in the block's seeded order."""
        return self._shuffled(self._slot_order[self.phase_of(step)], step)

    def _shuffled(self, ordered: np.ndarray, step: int) -> np.ndarray:
        return ordered[np.random.default_rng([self.seed, step]).permutation(len(ordered))]

    def epoch_sequence(self, component: int, consumed: np.ndarray) -> np.ndarray:
        """The sequence index of a component's `consumed`-th use (0-based), epoch by epoch of its pool reshuffled."""
        pool = int(self.pool[component])
        epochs, within = np.divmod(consumed, pool)
        out = np.empty(len(consumed), dtype=np.int64)
        for epoch in np.unique(epochs):
            chosen = epochs == epoch
            out[chosen] = permute(within[chosen], pool, _key(int(self.seed), int(component), int(epoch)))
        return self.pool_sequence(component, out)

    def pool_sequence(self, component: int, in_pool: np.ndarray) -> np.ndarray:
        """The sequence index, in all the component has, of positions in its pool."""
        available = int(self.available[component])
        if self.pool[component] == available:
            return in_pool
        return permute(in_pool, available, _key(int(self.seed), int(component), "pool"))

    def batch(self, step: int) -> list[tuple[str, int]]:
        """The global batch of a step as (component key, sequence index) pairs, in O(batch)."""
        phase_index = self.phase_of(step)
        phase = self.phases[phase_index]
        slots = self.slots(step)
        sequences = np.empty(len(slots), dtype=np.int64)
        for component in np.unique(slots):
            positions = np.flatnonzero(slots == component)
            start = self._consumed_before_phase[phase_index][component] + phase.counts[component] * (step - phase.start_step)
            sequences[positions] = self.epoch_sequence(component, start + np.arange(len(positions)))
        return [(self.components[c], int(s)) for c, s in zip(slots, sequences)]

    def batches(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """The global batches of steps [start, end), one after another, as `batch` gives each: the component index
        and the sequence index of every position. A component's uses within a phase are consecutive, so its
        sequences for all those steps are found at once (what an export reads, a chunk of steps at a time)."""
        components, sequences = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
        step = start
        while step < end:
            phase_index = self.phase_of(step)
            phase = self.phases[phase_index]
            stop = min(end, phase.end_step)
            slots = np.concatenate([self._shuffled(self._slot_order[phase_index], s) for s in range(step, stop)])
            chosen = np.empty(len(slots), dtype=np.int64)
            for component in np.unique(slots):
                positions = np.flatnonzero(slots == component)
                first = (self._consumed_before_phase[phase_index][component]
                         + phase.counts[component] * (step - phase.start_step))
                chosen[positions] = self.epoch_sequence(component, first + np.arange(len(positions)))
            components.append(slots)
            sequences.append(chosen)
            step = stop
        return np.concatenate(components), np.concatenate(sequences)

    def rank_batch(self, step: int, rank: int, world_size: int) -> list[tuple[str, int]]:
        """A rank's contiguous share of the global batch; the global batch itself does not depend on ranks."""
        if self.global_batch % world_size:
            raise ValueError(f"global_batch {self.global_batch} does not divide over {world_size} ranks")
        per_rank = self.global_batch // world_size
        return self.batch(step)[rank * per_rank : (rank + 1) * per_rank]

    def iterate(self):
        """Every batch from step 0, counting uses as it goes: the sequential twin of `batch`."""
        uses = np.zeros(len(self.components), dtype=np.int64)
        for step in range(self.steps):
            slots = self.slots(step)
            batch = []
            for component in slots:
                sequence = self.epoch_sequence(int(component), np.array([uses[component]]))[0]
                uses[component] += 1
                batch.append((self.components[component], int(sequence)))
            yield batch


def schedule_fingerprint(meta: dict) -> str:
    """One build of a mixture: a run resumes, and an export continues, only on the build they began with."""
    return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:24]


def target_shares(folder: Path, schedule: Schedule) -> dict[str, list[float]]:
    """Each phase's intended share of every component (from the compiler's plan), in schedule order."""
    shares = {p.name: [0.0] * len(schedule.components) for p in schedule.phases}
    for row in read_plan(folder):
        shares[row["phase"]][schedule.components.index(row["component"])] = row["target_share"]
    return shares


class SequenceIndex:
    """Where a component's (or a source's held-out) packed sequences lie: its documents in order, with their
    token offsets into its concatenated stream. Sequence i is tokens [i*(seq_len+1), (i+1)*(seq_len+1)) of that stream."""

    def __init__(self, path_or_table, seq_len: int):
        table = path_or_table if isinstance(path_or_table, pa.Table) else parquet_file(path_or_table).read()
        shards = table["shard"].combine_chunks()
        encoded = shards if pa.types.is_dictionary(shards.type) else shards.dictionary_encode()
        self.shard_names = encoded.dictionary.to_pylist()  # each document's shard is shard_names[shard_codes[doc]]
        self.shard_codes = encoded.indices.to_numpy()
        self.rows = table["row"].to_numpy()
        self.n_tokens = table["n_tokens"].to_numpy()
        self.offsets = table["offset"].to_numpy()
        self.width = seq_len + 1

    def locate(self, index: int) -> list[tuple[str, int, int, int]]:
        """(shard, row, start token in the document, length) pieces that make up sequence `index`."""
        start, end = index * self.width, (index + 1) * self.width
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        pieces = []
        doc = first
        while doc < len(self.offsets) and self.offsets[doc] < end:
            lo = max(start, int(self.offsets[doc]))
            hi = min(end, int(self.offsets[doc] + self.n_tokens[doc]))
            pieces.append((self.shard_names[self.shard_codes[doc]], int(self.rows[doc]), lo - int(self.offsets[doc]),
                           hi - lo))
            doc += 1
        return pieces
