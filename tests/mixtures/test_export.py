"""`loom mix export`: every format read back with its own reader (Megatron's IndexedDataset, numpy.memmap,
pyarrow) holds, step by step, the very sequences the trainer reads (SequenceReader over Schedule.batch); a killed
export resumed ends byte for byte as an uninterrupted one; wrong settings and a second export of one target are
one line each."""

import json
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest

from helpers import compiled, LOOM, copy_curated, run_loom, training_spec, write_spec
from base.workspace import Workspace
from mixtures import RowGroupCache, SequenceReader, load_schedule
from mixtures.export import FORMATS, plan_export, run_export
from mixtures.export.formats import ExportFormat
from mixtures.export.numpy_memmap import NumpyWriter, numpy_dtype
from mixtures.export.runner import CACHE_BYTES
from mixtures.sequences import copy_runs, joined_runs

with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # Megatron says Transformer Engine and Apex are not installed
    from megatron.core.datasets.indexed_dataset import IndexedDataset

STEPS = 400  # 3,200 sequences of 33 tokens: a chunk a step makes an export slow enough (~1 s) to stop midway


@pytest.fixture(scope="module")
def export_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("exportws") / "ws")
    write_spec(ws, "exportmix", training_spec(STEPS))
    run_loom("-w", ws, "mix", "build", "exportmix")
    return ws


def export(ws, *args, check=True, **kwargs):
    return run_loom("-w", ws, "mix", "export", "exportmix", *args, check=check, **kwargs)


def expected(ws, phase: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """What the trainer reads: every step's global batch in order, each sequence as SequenceReader gives it; and
    the step of each sequence."""
    schedule, reader = reader_of(ws)
    component = {key: i for i, key in enumerate(schedule.components)}
    first, end = next(((p.start_step, p.end_step) for p in schedule.phases if p.name == phase), (0, schedule.steps))
    rows = [(step, reader.read(component[key], sequence)[0]) for step in range(first, end)
            for key, sequence in schedule.batch(step)]
    return np.stack([tokens for _, tokens in rows]), np.array([step for step, _ in rows])


def reader_of(ws):
    """The mixture's schedule, and the trainer's reader of its sequences."""
    folder = compiled(ws, "exportmix")
    schedule, data = load_schedule(folder, Workspace(ws))
    sources = sorted({s for c in schedule.meta["components"] for s in c["sources"]})
    return schedule, SequenceReader(schedule, folder, data, sources)


def sidecar(folder) -> dict:
    return json.loads((folder / "export.json").read_text())


@pytest.mark.parametrize("phase", [None, "midtrain"])
def test_every_format_read_back_by_its_own_reader_is_the_trainers_stream(export_ws, phase, tmp_path, monkeypatch):
    want, steps = expected(export_ws, phase)
    suffix = f"-{phase}" if phase else ""
    phase_args = ("--phase", phase) if phase else ()
    for fmt in ("megatron", "numpy", "parquet"):
        export(export_ws, "--format", fmt, "--chunk-steps", 7, *phase_args)  # chunks that do not divide the steps
    exports = export_ws / "exports" / "exportmix"

    megatron = IndexedDataset(str(exports / f"megatron{suffix}" / "tokens"))
    assert megatron.index.dtype == np.uint16  # a vocabulary of 2,000: Megatron's DType.optimal_dtype
    assert np.array_equal(megatron.document_indices, np.arange(len(want) + 1))  # one document per sequence
    assert np.array_equal(np.stack([megatron[i] for i in range(len(megatron))]), want)

    info = sidecar(exports / f"numpy{suffix}")
    flat = np.memmap(exports / f"numpy{suffix}" / "tokens.bin", dtype=info["dtype"], mode="r")
    assert info["dtype"] == "uint16" and np.array_equal(flat.reshape(-1, info["tokens_per_sequence"]), want)

    table = pq.read_table(exports / f"parquet{suffix}" / "data")  # the folder of parts, as one table
    assert len(list((exports / f"parquet{suffix}" / "data").glob("part-*.parquet"))) == -(-len(set(steps)) // 7)
    assert np.array_equal(np.array(table["input_ids"].to_pylist()), want)
    assert np.array_equal(table["step"].to_numpy(), steps)
    rows = hf_parquet(exports / f"parquet{suffix}" / "data", tmp_path, monkeypatch)
    assert rows.num_rows == len(want) and rows[0]["input_ids"] == want[0].tolist()

    for fmt in ("megatron", "numpy", "parquet"):
        info = sidecar(exports / f"{fmt}{suffix}")
        assert (info["steps"]["start"], info["steps"]["end"]) == (steps[0], steps[-1] + 1)
        assert info["sequences"] == len(want) and info["tokens"] == want.size and info["vocab_size"] == 2000
        assert [p["name"] for p in info["phases"]] == ([phase] if phase else ["pretrain", "midtrain"])
        licenses = {s["source"]: (s["license"], s["origin"]) for s in info["provenance"]["sources"]}
        assert licenses == {"web": ("GPL-2.0-or-later OR CC-BY-SA-3.0", "debian:debian-handbook=11.20220922"),
                            "docs": ("PSF-2.0", "debian:python3.11-doc=3.11.2-6+deb12u9"), "code": ("unknown", ""),
                            "fortunes": ("unknown", "")}  # tests/helpers.py's slice: two licences, two not set
        tokens = info["provenance"]["tokens_per_license"]  # the plan's: seq_len tokens a sequence
        assert sum(tokens.values()) == info["sequences"] * (info["tokens_per_sequence"] - 1)
        web = "GPL-2.0-or-later OR CC-BY-SA-3.0"  # pretrain only
        assert set(tokens) == ({"PSF-2.0", "unknown"} if phase else {web, "PSF-2.0", "unknown"})


@pytest.mark.parametrize("row_group_rows", [None, 3])
def test_gather_reads_what_read_reads_one_sequence_at_a_time(export_ws, tmp_path, row_group_rows):
    """SequenceReader.gather (what an export reads a chunk with) against `read`: every sequence of every component,
    shuffled, twice, the components interleaved, with the curated parts as written and rewritten in row groups of 3
    rows read through a cache of 2 (sequences across row groups, row groups read again after eviction)."""
    schedule, reader = reader_of(export_ws)
    components = np.repeat(np.arange(len(schedule.components)), schedule.available)
    sequences = np.concatenate([np.arange(n) for n in schedule.available])
    order = np.random.default_rng(0).permutation(np.tile(np.arange(len(sequences)), 2))
    components, sequences = components[order], sequences[order]
    want = np.stack([reader.read(c, s)[0] for c, s in zip(components.tolist(), sequences.tolist())])
    pieces = [reader.indexes[c].locate(s) for c, s in zip(components.tolist(), sequences.tolist())]
    assert max(map(len, pieces)) >= 3 and any(len({shard for shard, *_ in p}) > 1 for p in pieces)
    if row_group_rows:
        reader.cache = RowGroupCache(rewritten_in_row_groups(reader.cache.root, tmp_path, row_group_rows), capacity=2)

    assert np.array_equal(reader.gather(components, sequences, np.int64), want)
    assert np.array_equal(reader.gather(components, sequences, np.uint16), want.astype(np.uint16))
    assert reader.gather(components[:0], sequences[:0], np.int64).shape == (0, reader.width)
    beyond = schedule.available[0] + 1  # past the end of component 0's tokens
    with pytest.raises(RuntimeError, match="changed under the schedule"):
        reader.gather(np.array([1, 0]), np.array([0, beyond]), np.int64)


def test_an_exports_reads_take_each_row_group_once_whatever_its_chunks(export_ws, tmp_path, monkeypatch):
    """Chunks of a step over curated parts rewritten in row groups of 3 rows: through the export's cache every row
    group is read once in all (through the trainer's cache of 16 row groups, many again), and the tokens are
    `read`'s."""
    schedule, reader = reader_of(export_ws)
    root = rewritten_in_row_groups(reader.cache.root, tmp_path, 3)
    reads = []
    real_read = RowGroupCache.read
    monkeypatch.setattr(RowGroupCache, "read", lambda cache, *key: reads.append(key) or real_read(cache, *key))
    want, _ = expected(export_ws)
    for cache, read_once in ((RowGroupCache(root), False),
                             (RowGroupCache(root, capacity=sys.maxsize, max_bytes=CACHE_BYTES), True)):
        reader.cache = cache
        reads.clear()
        chunks = [reader.gather(*schedule.batches(step, step + 1), np.int64) for step in range(60)]
        assert np.array_equal(np.concatenate(chunks), want[: 60 * schedule.global_batch])
        assert len(set(reads)) > 16 and (len(reads) == len(set(reads))) == read_once


@pytest.mark.parametrize("longest", [8, 400])  # one fancy index for short runs, a slice each for long ones
def test_copy_runs_copies_every_run_to_its_place(longest):
    rng = np.random.default_rng(longest)
    lengths = rng.integers(0, longest, 300)  # some runs empty
    source = rng.integers(0, 60_000, 100_000).astype(np.uint32)
    starts = rng.integers(0, len(source) - longest, len(lengths))
    order = rng.permutation(len(lengths))  # runs land in the target in another order than they are given
    target_starts = np.empty_like(lengths)
    target_starts[order] = np.cumsum(lengths[order]) - lengths[order]
    target = np.zeros(lengths.sum(), dtype=np.uint16)
    copy_runs(source, starts, target, target_starts, lengths)
    want = np.concatenate([source[starts[i] : starts[i] + lengths[i]] for i in order]).astype(np.uint16)
    assert np.array_equal(target, want)


def test_runs_are_joined_only_where_they_go_on_in_both_source_and_target():
    runs = [(0, 100, 5), (5, 105, 4),  # goes on in both: one run
            (9, 200, 3),  # on from the last in the source only
            (12, 203, 2),  # on in both: joined to the one before
            (30, 205, 1)]  # on in the target only
    joined = joined_runs(*(np.array(column) for column in zip(*runs)))
    assert [column.tolist() for column in joined] == [[0, 9, 30], [100, 200, 205], [9, 5, 1]]
    one = (np.array([3]), np.array([7]), np.array([2]))
    assert [c.tolist() for c in joined_runs(*one)] == [[3], [7], [2]]
    assert all(len(column) == 0 for column in joined_runs(*(np.array([], int),) * 3))


def rewritten_in_row_groups(root, tmp_path, rows: int):
    """A copy of a generation's curated parts, the same rows in row groups of `rows`."""
    for part in root.glob("curated/*/part-*.parquet"):
        copy = tmp_path / part.relative_to(root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pq.read_table(part), copy, row_group_size=rows)
    return tmp_path


@pytest.mark.parametrize("fmt", ["megatron", "parquet"])
def test_a_killed_export_resumes_to_the_same_bytes_and_a_finished_one_is_left_alone(export_ws, fmt):
    exports = export_ws / "exports"
    export(export_ws, "--format", fmt, "--chunk-steps", 1, "--out", exports / f"straight-{fmt}")
    killed = exports / f"killed-{fmt}"
    process = start_export(export_ws, "--format", fmt, "--chunk-steps", 1, "--out", killed)
    recorded = wait_for_progress(process, killed)
    process.kill()
    process.wait()
    assert 0 < recorded < STEPS and not (killed / "export.json").exists()

    resumed = export(export_ws, "--format", fmt, "--chunk-steps", 1, "--out", killed)
    assert "Resumed at step" in resumed.stdout
    assert contents(killed) == contents(exports / f"straight-{fmt}")

    before = {p: p.stat().st_mtime_ns for p in killed.rglob("*")}
    again = export(export_ws, "--format", fmt, "--chunk-steps", 1, "--out", killed)
    assert "finished already" in again.stdout and {p: p.stat().st_mtime_ns for p in killed.rglob("*")} == before


def contents(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


class FailsAtStep14(NumpyWriter):
    """The numpy format, but its disk fills up at the chunk of step 14; `written` keeps the first step of every
    write."""

    written: list[int] = []

    def write(self, first_step, tokens, steps):
        self.written.append(first_step)
        if first_step == 14:
            raise OSError(28, "No space left on device (planted)")
        super().write(first_step, tokens, steps)


@pytest.mark.timeout(120)  # the writer thread's error must end the export, not leave it waiting
def test_a_write_that_fails_on_the_writer_thread_fails_the_export_with_its_error(export_ws, monkeypatch):
    monkeypatch.setitem(FORMATS, "numpy", ExportFormat("fails at step 14", FailsAtStep14, numpy_dtype))
    monkeypatch.setattr(FailsAtStep14, "written", [])
    plan = plan_export(Workspace(export_ws), "exportmix", "numpy", out=str(export_ws / "exports" / "failing"),
                       chunk_steps=7)
    with pytest.raises(OSError, match="planted"):
        run_export(plan)
    assert FailsAtStep14.written == [0, 7, 14]  # nothing written after the failed chunk
    progress = json.loads((plan.out / "progress.json").read_text())
    per_step = plan.info["global_batch"] * plan.info["tokens_per_sequence"] * 2
    assert progress["next_step"] == 14 and (plan.out / "tokens.bin").stat().st_size == 14 * per_step
    assert not (plan.out / "export.json").exists()


def test_a_rebuilt_mixture_starts_the_export_again(curated_slice, slice_tokenizer, tmp_path):
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws")
    write_spec(ws, "exportmix", training_spec(20))
    run_loom("-w", ws, "mix", "build", "exportmix")
    export(ws, "--format", "numpy")
    first = sidecar(ws / "exports" / "exportmix" / "numpy")
    write_spec(ws, "exportmix", training_spec(24))
    run_loom("-w", ws, "mix", "build", "exportmix")
    again = export(ws, "--format", "numpy")
    assert "another build of the mixture" in again.stdout
    info = sidecar(ws / "exports" / "exportmix" / "numpy")
    assert info["schedule_fingerprint"] != first["schedule_fingerprint"] and info["steps"]["end"] == 24
    assert (ws / "exports" / "exportmix" / "numpy" / "tokens.bin").stat().st_size == info["tokens"] * 2


def test_two_exports_of_one_target_at_once_the_second_is_refused(export_ws):
    out = export_ws / "exports" / "contended"
    first = start_export(export_ws, "--format", "numpy", "--chunk-steps", 1, "--out", out)
    wait_for_progress(first, out)
    first.send_signal(signal.SIGSTOP)  # holds its lock, mid-export, for as long as the second one takes
    try:
        second = export(export_ws, "--format", "numpy", "--chunk-steps", 1, "--out", out, check=False)
    finally:
        first.send_signal(signal.SIGCONT)
    assert first.wait(timeout=120) == 0
    assert second.returncode == 2 and len(second.stderr.strip().splitlines()) == 1
    assert "is in use by" in second.stderr and "wait for it to finish" in second.stderr
    assert (out / "tokens.bin").stat().st_size == sidecar(out)["tokens"] * 2


@pytest.mark.parametrize("args, says", [
    (("--phase", "cooldown"), "has no phase 'cooldown'; its phases are pretrain, midtrain"),
    (("--out", "OUTSIDE"), "leads outside the workspace"),
    (("--out", "LINK"), "leads outside the workspace"),  # a link inside the workspace to a folder outside it
    (("--out", "WORKSPACE"), "holds other files than a numpy export"),
    (("--out", "FILE"), "is a file, not a folder"),
    (("--out", "LINKED"), "tokens.bin is not a file an export wrote (a symbolic link"),  # it is never written through
])
def test_wrong_settings_are_one_line_and_exit_2(export_ws, tmp_path, args, says):
    link = export_ws / "exports" / "elsewhere"
    link.parent.mkdir(exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(tmp_path.parent)
    places = {"OUTSIDE": tmp_path / "out", "LINK": link / tmp_path.name / "out", "WORKSPACE": export_ws,
              "FILE": export_ws / "exports" / "a-file", "LINKED": export_ws / "exports" / f"linked-{tmp_path.name}"}
    places["FILE"].write_text("mine")
    places["LINKED"].mkdir()
    (places["LINKED"] / "tokens.bin").symlink_to(tmp_path / "victim.bin")
    (tmp_path / "victim.bin").write_text("mine")
    result = export(export_ws, "--format", "numpy", *[places.get(a, a) for a in args], check=False)
    assert result.returncode == 2 and result.stderr.startswith("error: ") and says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    assert places["FILE"].read_text() == "mine" and (tmp_path / "victim.bin").read_text() == "mine"


def test_an_unknown_format_is_clicks_choice_error(export_ws):
    result = export(export_ws, "--format", "hdf5", check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("Error: Invalid value for '--format': 'hdf5' is not one of")


def test_a_mixture_not_compiled_names_the_build_command(export_ws):
    result = run_loom("-w", export_ws, "mix", "export", "nosuchmix", "--format", "parquet", check=False)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "run `loom mix build nosuchmix`" in result.stderr


def hf_parquet(folder, tmp_path, monkeypatch):
    """The parts as Hugging Face `datasets` loads a folder of Parquet (offline, its cache in tmp_path)."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets

    return datasets.load_dataset("parquet", data_dir=str(folder), split="train", cache_dir=str(tmp_path / "hf"))


def start_export(ws, *args) -> subprocess.Popen:
    return subprocess.Popen([*LOOM, "-w", str(ws), "mix", "export", "exportmix", *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for_progress(process: subprocess.Popen, out, timeout: float = 60) -> int:
    """The step the export's progress record says is next, once it shows a chunk written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return json.loads((out / "progress.json").read_text())["next_step"]
        except (FileNotFoundError, json.JSONDecodeError):
            assert process.poll() is None, f"the export ended before its first chunk: {process.stderr.read()}"
            time.sleep(0.005)
    raise AssertionError("no progress record within the timeout")
