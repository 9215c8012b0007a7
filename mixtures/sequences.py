"""The tokens of a compiled mixture's sequences, read from the curated Parquet a row group at a time and kept in
a small cache, never the whole dataset: what the trainer's batches and `loom mix export` are made of.

On an object store a row group miss is one ranged read of that row group's `input_ids` column chunk (after the
part's footer, once per part per process): a reader fetches only the tokens it reads, never a part's text."""

from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, closing
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow.parquet as pq
from numpy.lib.stride_tricks import sliding_window_view

from base.parquet_files import parquet_row_groups
from base.store import as_path
from base.workspace import Generation
from mixtures.manifest import shard_sources
from mixtures.schedule import Schedule, SequenceIndex


JOIN_FROM = 32  # runs of a row group from which joining them pays for its ~10 us


class RowGroupPieces(NamedTuple):
    """The pieces of a gather's sequences that lie in one row group, of one component."""
    shard: str
    group: int
    component: int
    sequence: np.ndarray  # the sequence each piece is of
    row: np.ndarray  # its document's row in the row group
    start_in_doc: np.ndarray
    length: np.ndarray
    target: np.ndarray  # where it goes in the flattened output


class RowGroupCache:
    """`input_ids` of curated rows, by (shard, row): one Parquet row group read per miss, the last
    `capacity` row groups kept (and no more than `max_bytes` of them, when given)."""

    def __init__(self, root: Path, capacity: int = 16, max_bytes: int | None = None):
        self.root, self.capacity, self.max_bytes = as_path(root), capacity, max_bytes
        self._files: dict[str, tuple[pq.ParquetFile, np.ndarray]] = {}
        self._groups: OrderedDict = OrderedDict()
        self._bytes = 0

    def _file(self, shard: str):
        if shard not in self._files:
            file = parquet_row_groups(self.root / shard)
            starts = np.cumsum([0] + [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)])
            self._files[shard] = (file, starts)
        return self._files[shard]

    def tokens(self, shard: str, row: int, start: int, length: int) -> np.ndarray:
        groups, rows = self.row_groups(shard, np.array([row]))
        offsets, values = self.group(shard, int(groups[0]))
        begin = offsets[rows[0]] + start
        return values[begin : begin + length]

    def row_groups(self, shard: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The row group of each of a shard's `rows`, and each row's index within its group."""
        _, starts = self._file(shard)
        groups = np.searchsorted(starts, rows, side="right") - 1
        return groups, rows - starts[groups]

    def group(self, shard: str, group: int) -> tuple[np.ndarray, np.ndarray]:
        """One row group's `input_ids`: the list offsets of its rows, and all their tokens."""
        key = (shard, group)
        if key in self._groups:
            self._groups.move_to_end(key)
            return self._groups[key]
        return self.keep(key, self.read(shard, group))

    def read(self, shard: str, group: int) -> tuple[np.ndarray, np.ndarray]:
        """A row group's `input_ids` read from its part, past the cache (what `group` keeps of a miss)."""
        file, _ = self._file(shard)
        # one column chunk: pyarrow's threads have nothing to share out, and cost a hand-over each read
        column = file.read_row_group(group, columns=["input_ids"], use_threads=False).column("input_ids")
        column = column.combine_chunks()
        return column.offsets.to_numpy(), column.values.to_numpy()

    def keep(self, key: tuple[str, int], found: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        self._groups[key] = found
        self._bytes += sum(array.nbytes for array in found)
        while len(self._groups) > 1 and (len(self._groups) > self.capacity
                                         or self.max_bytes is not None and self._bytes > self.max_bytes):
            _, dropped = self._groups.popitem(last=False)
            self._bytes -= sum(array.nbytes for array in dropped)
        return found

    def read_ahead(self, keys: list[tuple[str, int]], ahead: int = 4, readers: int = 2):
        """Each of `keys` (shard, row group) in order, as `group` gives it, the next `ahead` misses read meanwhile
        on `readers` threads: pyarrow decodes without the GIL, so reading row groups overlaps copying from the
        last. A shard's row groups are all read on one thread (a ParquetFile is not shared between threads), its
        shards taking turns; a key not read ahead is submitted at its turn. At most `ahead` row groups are held
        beyond the cache."""
        with ExitStack() as stack:
            threads = [stack.enter_context(ThreadPoolExecutor(max_workers=1, thread_name_prefix="row-group-reader"))
                       for _ in range(readers)]
            thread_of: dict[str, ThreadPoolExecutor] = {}
            pending: dict[tuple[str, int], Future] = {}
            for i, key in enumerate(keys):
                for later in keys[i : i + ahead + 1]:
                    if later not in self._groups and later not in pending:
                        shard = later[0]
                        self._file(shard)  # opened here: its footer read on this thread
                        thread = thread_of.setdefault(shard, threads[len(thread_of) % readers])
                        pending[later] = thread.submit(self.read, *later)
                if key in pending:
                    yield self.keep(key, pending.pop(key).result())
                else:
                    yield self.group(*key)


class SequenceReader:
    """The tokens of any sequence of any component, with the source of each token (its index in `sources`)."""

    def __init__(self, schedule: Schedule, folder: Path, data: Generation, sources: list[str],
                 cache: RowGroupCache | None = None):
        meta = schedule.meta
        self.width = meta["seq_len"] + 1
        self.folder = as_path(folder)
        self.indexes = [SequenceIndex(self.folder / c["file"], meta["seq_len"]) for c in meta["components"]]
        self.source_id = {name: i for i, name in enumerate(sources)}
        self.shard_source = shard_sources(data)
        self.cache = cache or RowGroupCache(data.root)  # the trainer's: the last 16 row groups
        self._backwards = False  # the direction of the next gather's row groups

    def read(self, component: int, sequence: int) -> tuple[np.ndarray, np.ndarray]:
        return self.read_from(self.indexes[component], sequence, f"component {component}")

    def gather(self, components: np.ndarray, sequences: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """The tokens `read` gives of many (component, sequence) pairs at once, a row each, as `dtype`: each row
        group the sequences touch is read once (through the cache, the next ones read ahead on a thread) and all
        its pieces of them copied by `copy_runs`, with no Python per sequence. Memory: the output, a few int64 per
        token of it (the copy's indices), and the cache's row groups, whatever the size of the data. Reads are
        another matter: a schedule's sequences are spread over their whole component, so every call reads most
        of the row groups of a large one for a few sequences each. Row groups go in (shard, row group) order, every
        other call backwards: the last ones a call read, those still in the cache, are the first the next reads."""
        out = np.empty((len(sequences), self.width), dtype=dtype)
        work = [piece for component in np.unique(components).tolist()
                for piece in self._row_group_pieces(component, sequences, np.flatnonzero(components == component))]
        work.sort(key=lambda piece: (piece.shard, piece.group), reverse=self._backwards)  # a shard shared: read once
        self._backwards = not self._backwards
        with closing(self.cache.read_ahead([(piece.shard, piece.group) for piece in work])) as groups:
            for piece, (offsets, values) in zip(work, groups):
                self._copy(piece, offsets, values, out)
        return out

    def _copy(self, piece: RowGroupPieces, offsets: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
        """The pieces copied from their row group's tokens (`offsets`, `values`) to their places in `out`."""
        source, target, length = offsets[piece.row] + piece.start_in_doc, piece.target, piece.length
        beyond = np.flatnonzero(source + length > offsets[piece.row + 1])
        if len(beyond):
            raise self._changed(piece.component, int(piece.sequence[beyond[0]]))
        if len(source) >= JOIN_FROM:
            source, target, length = joined_runs(source, target, length)
        whole = length == self.width  # most sequences lie in one document: a row each, in one copy
        if whole.any():
            out[target[whole] // self.width] = sliding_window_view(values, self.width)[source[whole]]
            source, target, length = source[~whole], target[~whole], length[~whole]
        copy_runs(values, source, out.reshape(-1), target, length)

    def _row_group_pieces(self, component: int, sequences: np.ndarray, rows: np.ndarray) -> list[RowGroupPieces]:
        """The pieces of one component's `sequences[rows]` (bound for rows `rows` of the output), a row group
        at a time."""
        index = self.indexes[component]
        chosen = sequences[rows]
        owner, doc, start_in_doc, length, start_in_sequence = self._pieces(component, chosen)
        target = rows[owner] * self.width + start_in_sequence
        shard = index.shard_codes[doc]
        work = []
        for code in np.unique(shard).tolist():
            name, in_shard = index.shard_names[code], np.flatnonzero(shard == code)
            groups, row_in_group = self.cache.row_groups(name, index.rows[doc[in_shard]])
            for group in np.unique(groups).tolist():
                here = groups == group
                pieces = in_shard[here]
                work.append(RowGroupPieces(name, group, component, chosen[owner[pieces]], row_in_group[here],
                                           start_in_doc[pieces], length[pieces], target[pieces]))
        return work

    def _pieces(self, component: int, sequences: np.ndarray) -> tuple[np.ndarray, ...]:
        """`SequenceIndex.locate` of many sequences at once: for each document piece of them, the sequence it is
        of (its position in `sequences`), its document, where it starts in the document, its length, and where it
        starts in the sequence."""
        index, width = self.indexes[component], self.width
        starts = sequences * width
        first = np.searchsorted(index.offsets, starts, side="right") - 1
        count = np.searchsorted(index.offsets, starts + width, side="left") - first
        owner = np.repeat(np.arange(len(sequences)), count)
        doc = first[owner] + within_runs(count)
        lo = np.maximum(starts[owner], index.offsets[doc])
        length = np.maximum(np.minimum(starts[owner] + width, index.offsets[doc] + index.n_tokens[doc]) - lo, 0)
        short = np.flatnonzero(np.bincount(owner, weights=length, minlength=len(sequences)) != width)
        if len(short):
            raise self._changed(component, int(sequences[short[0]]))
        return owner, doc, lo - index.offsets[doc], length, lo - starts[owner]

    def _changed(self, component: int, sequence: int) -> RuntimeError:
        return RuntimeError(f"sequence {sequence} of component {component} does not lie in the curated data as the "
                            "schedule says: the curated data changed under the schedule; rebuild the mixture")

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


def copy_runs(source: np.ndarray, starts: np.ndarray, target: np.ndarray, target_starts: np.ndarray,
              lengths: np.ndarray) -> None:
    """target[target_starts[i]:][:lengths[i]] = source[starts[i]:][:lengths[i]] for every i: a slice a run when
    runs are long, else one fancy index for them all (a slice costs ~0.5 us, a fancy-indexed token ~7 ns: they
    break even near 64 tokens a run)."""
    if lengths.sum() >= 64 * len(lengths) > 0:
        for begin, to, length in zip(starts.tolist(), target_starts.tolist(), lengths.tolist()):
            target[to : to + length] = source[begin : begin + length]
        return
    along = within_runs(lengths)
    target[np.repeat(target_starts, lengths) + along] = source[np.repeat(starts, lengths) + along]


def joined_runs(starts: np.ndarray, target_starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, ...]:
    """The runs of a copy, each joined to the one before where it goes on from it in both source and target: a
    sequence over consecutive rows of a row group (a component's documents mostly are) is then one run."""
    if len(starts) < 2:
        return starts, target_starts, lengths
    ends, target_ends = starts[:-1] + lengths[:-1], target_starts[:-1] + lengths[:-1]
    first = np.flatnonzero(np.concatenate(([True], (starts[1:] != ends) | (target_starts[1:] != target_ends))))
    if len(first) == len(starts):
        return starts, target_starts, lengths
    return starts[first], target_starts[first], np.add.reduceat(lengths, first)


def within_runs(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., n-1 for each run length n, one after another: [2, 3] -> [0, 1, 0, 1, 2]."""
    ends = np.cumsum(lengths)
    return np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - lengths, lengths)
