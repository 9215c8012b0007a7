"""One writer per target, and readers that only see published data: real `loom` processes racing, killed with
SIGKILL and interrupted with SIGINT in the middle of a re-curation."""

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import (
    FORTUNES_FILTERS, LOOM, TINY_MODEL, as_in_a_terminal, copy_curated, published, run_loom, stacks_then_kill,
    write_spec,
)
from base.errors import UserError
from base.lock import exclusive, is_held
from base.workspace import Workspace, mixture_lock

SPEC = """seq_len = 32
global_batch = 8
steps = 12
[weights]
web = 0.4
docs = 0.4
fortunes = 0.2
"""
SMALL = [*TINY_MODEL, "--eval-every", 6, "--report-every", 6]


@pytest.fixture
def ws(tmp_path, curated_slice, slice_tokenizer, slice_sources) -> Path:
    """The curated slice in a workspace of its own, with its sources.toml and the `tinymix` mixture built."""
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "bob's ws")
    text = slice_sources.read_text(encoding="utf-8")
    (ws / "sources.toml").write_text(f'root = "{slice_sources.parent}"\n{text}', encoding="utf-8")
    write_spec(ws, "tinymix", SPEC)
    run_loom("-w", ws, "mix", "build", "tinymix")
    return ws


def change_sources(ws: Path, drop: str | None = None) -> None:
    """Another config: fortunes filtered differently (its shards are redone), and `drop` left out."""
    text = (ws / "sources.toml").read_text(encoding="utf-8")
    text = text.replace(FORTUNES_FILTERS, 'filters = ["c4"]')
    if drop:
        blocks = text.split("[[source]]")
        text = "[[source]]".join(b for b in blocks if f'name = "{drop}"' not in b)
    (ws / "sources.toml").write_text(text, encoding="utf-8")


def start(*args) -> subprocess.Popen:
    """A `loom` command in a session of its own, so that a signal can reach it and its Dask workers at once."""
    return subprocess.Popen([*LOOM, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "COLUMNS": "200", "PYTHONFAULTHANDLER": "1"},
                            preexec_fn=as_in_a_terminal)


def wait_for(condition, timeout: float = 120, every: float = 0.02, watched: subprocess.Popen | None = None):
    """`condition()` once it is true; else the test fails, with the stacks of `watched`'s processes (the command
    waited on) and what it printed, so that a hang or an early exit says where."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(every)
    if watched is None:
        raise AssertionError("timed out")
    exited = watched.poll()
    out, err = watched.communicate() if exited is not None else stacks_then_kill(watched)
    state = "was still running" if exited is None else f"had exited with {exited}"
    raise AssertionError(f"timed out; the command {state}:\n{out}\n{err}")


def lock_holder(ws: Path, target: str) -> int | None:
    try:
        return json.loads(Workspace(ws).lock_file(target).read_text())["pid"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return None


def published_files(ws: Path) -> dict[str, bytes]:
    root = published(ws)
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def funnel_and_documents(ws: Path) -> tuple[int, int]:
    """Kept rows in the funnel, and documents `loom sql` sees."""
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    counted = run_loom("-w", ws, "sql", "SELECT count(*) AS n FROM documents", "--format", "json")
    return sum(r["fate"] == "kept" for r in funnel), json.loads(counted.stdout)[0]["n"]


@pytest.mark.slow  # a whole curation held open (~31 s); the training lock is checked by default
def test_a_second_curate_is_refused_while_the_first_runs(ws):
    change_sources(ws, drop="code")
    first = start("-w", ws, "curate", "--workers", 2)
    wait_for(lambda: lock_holder(ws, "workspace") == first.pid, watched=first)
    (ws / "other.toml").write_text((ws / "sources.toml").read_text().replace('"c4"', '"fineweb"'))
    second = run_loom("-w", ws, "curate", "--sources", ws / "other.toml", check=False)
    assert second.returncode == 2
    assert second.stderr.startswith(f"error: workspace {ws} is in use by pid {first.pid} on ")
    assert len(second.stderr.splitlines()) == 1
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    # the first writer's result, whole: its sources, and the funnel's kept rows are the curated rows
    info = json.loads((published(ws) / "manifest" / "curation.json").read_text())
    assert sorted(info["sources"]) == ["docs", "fortunes", "web"]
    kept, documents = funnel_and_documents(ws)
    assert kept == documents > 0
    # a source no longer configured is in no view, and curate said it left it out
    assert "sources no longer in sources.toml are left out: code (" in out  # only code: no global stage's parts/ folder
    listed = run_loom("-w", ws, "sql", "SELECT DISTINCT source FROM documents UNION SELECT source FROM funnel "
                      "UNION SELECT source FROM quarantine", "--format", "json")
    assert "code" not in {row["source"] for row in json.loads(listed.stdout)}


@pytest.mark.slow
def test_kill_9_in_a_recuration_leaves_the_published_data_and_train_refuses_once_it_changed(ws):
    before = published_files(ws)
    generation = Workspace(ws).published().id
    change_sources(ws)
    curate = start("-w", ws, "curate", "--workers", 2)
    rewritten = ws / "work" / "tokenize" / "fortunes" / "part-00000.parquet"
    mtime = rewritten.stat().st_mtime_ns
    wait_for(lambda: any(rewritten.parent.glob(".part-00000.parquet.tmp-*"))
             or rewritten.stat().st_mtime_ns != mtime, every=0.005, watched=curate)
    os.killpg(curate.pid, signal.SIGKILL)
    curate.communicate(timeout=60)

    # nothing was published: readers and a run see exactly the data the mixture was built on
    assert Workspace(ws).published().id == generation and published_files(ws) == before
    kept, documents = funnel_and_documents(ws)
    assert kept == documents
    run_loom("-w", ws, "train", "--mixture", "tinymix", "--run-name", "before", "--max-steps", 2, *SMALL)

    again = run_loom("-w", ws, "curate", "--workers", 2)
    assert "took over the lock of workspace" in again.stdout and "ended without releasing it" in again.stdout
    assert Workspace(ws).published().id != generation
    assert (ws / "generations" / generation).is_dir()  # kept as the previous generation, for readers still on it
    refused = run_loom("-w", ws, "train", "--mixture", "tinymix", "--run-name", "after", *SMALL, check=False)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1
    assert "mixture 'tinymix' was built on other curated data" in refused.stderr
    assert "loom mix build tinymix" in refused.stderr
    assert not (ws / "runs" / "after").exists()


@pytest.mark.slow
def test_ctrl_c_stops_a_curation_with_one_line_and_the_rerun_resumes(ws):
    generation = Workspace(ws).published().id
    change_sources(ws)
    started = time.time()
    curate = start("-w", ws, "curate", "--workers", 2)
    wait_for(lambda: any(p.stat().st_mtime > started for p in (ws / "work").rglob("*")), every=0.2, watched=curate)
    os.killpg(curate.pid, signal.SIGINT)
    out, err = curate.communicate(timeout=120)
    assert curate.returncode == 130
    assert err == "interrupted; run the same command again to resume\n"
    assert Workspace(ws).published().id == generation

    stale = ws / "work" / "tokenize" / "docs" / ".part-00000.parquet.tmp-999999"
    stale.write_bytes(b"left by a killed writer")
    again = run_loom("-w", ws, "curate", "--workers", 2)
    assert not stale.exists() and re.search(r"removed \d+ temporary files", again.stdout)  # the stopped job's too
    assert Workspace(ws).published().id != generation
    kept, documents = funnel_and_documents(ws)
    assert kept == documents


def test_two_trainings_of_one_run_at_once_one_is_refused(ws):
    write_spec(ws, "longmix", SPEC.replace("steps = 12", "steps = 400"))
    run_loom("-w", ws, "mix", "build", "longmix")  # still training when the second starts, however slow its start
    first = start("-w", ws, "train", "--mixture", "longmix", "--run-name", "dup", *SMALL)
    wait_for(lambda: lock_holder(ws, "run-dup") == first.pid, watched=first)
    second = run_loom("-w", ws, "train", "--mixture", "longmix", "--run-name", "dup", *SMALL, check=False)
    assert first.poll() is None, "the first training ended before the second started"
    assert second.returncode == 2 and len(second.stderr.splitlines()) == 1
    assert f"run 'dup' in {ws} is in use by pid {first.pid}" in second.stderr
    metrics = ws / "runs" / "dup" / "metrics.jsonl"
    wait_for(lambda: metrics.exists() and metrics.read_text().count("\n") >= 1, watched=first)
    os.killpg(first.pid, signal.SIGINT)
    first.communicate(timeout=120)
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()]
    assert steps and steps == list(range(len(steps)))  # one record per step, written by one writer


def test_a_mixture_being_built_is_not_built_twice(ws):
    with exclusive(Workspace(ws).lock_file("mixture-tinymix"), "mixture 'tinymix'"):
        refused = run_loom("-w", ws, "mix", "build", "tinymix", check=False)
    assert refused.returncode == 2 and f"is in use by pid {os.getpid()}" in refused.stderr
    run_loom("-w", ws, "mix", "build", "tinymix")  # released: builds


def test_a_sweeps_mixture_is_compiled_under_the_mixtures_own_lock(ws):
    """A ladder's or a search's mixtures are compiled through mixtures.build_mixture, which takes the mixture's lock
    itself: while another writer holds it the sweep is refused, as `loom mix build` is, and so is any caller."""
    from rich.console import Console

    from mixtures import build_mixture, load_spec
    from sweeps.compiling import compile_all

    layout = Workspace(ws)
    spec = dataclasses.replace(load_spec(layout.mixtures / "tinymix.toml"), steps=6)  # not the build there: compiled
    with exclusive(layout.lock_file(mixture_lock("tinymix")), "mixture 'tinymix'"):
        with pytest.raises(UserError, match=f"^rung 0: mixture 'tinymix' in .* is in use by pid {os.getpid()}"):
            compile_all(layout, [("rung 0", spec)], Console(), print, lambda label, err: f"{label}: {err}")
        with pytest.raises(UserError, match=f"is in use by pid {os.getpid()}"):
            build_mixture(spec, layout)


@pytest.mark.parametrize("nproc", [1, pytest.param(2, marks=pytest.mark.slow)])  # 2: torchrun and its ranks quiet
def test_ctrl_c_stops_a_run_with_one_line_and_resume_goes_on(ws, nproc):
    write_spec(ws, "longmix", SPEC.replace("steps = 12", "steps = 400"))
    run_loom("-w", ws, "mix", "build", "longmix")  # a run that is still going when it is stopped
    train = ["-w", ws, "train", "--mixture", "longmix", "--run-name", f"stopped{nproc}", "--nproc", nproc, *SMALL]
    run = start(*train)
    metrics = ws / "runs" / f"stopped{nproc}" / "metrics.jsonl"
    wait_for(lambda: metrics.exists() and metrics.read_text().count("\n") >= 1, watched=run)
    os.killpg(run.pid, signal.SIGINT)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130
    assert err == "interrupted; run the same command with --resume to go on from the last checkpoint\n"
    run_loom(*train, "--resume", "--max-steps", 12)
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()]
    assert steps == list(range(12))


@pytest.fixture
def bare_ws(tmp_path) -> Path:
    """A workspace `loom init` made (nothing curated): `loom curate` in it takes the workspace's lock first."""
    run_loom("-w", tmp_path / "ws", "init")
    (tmp_path / "ws" / "locks").mkdir()
    return tmp_path / "ws"


def test_a_lock_that_is_a_symbolic_link_is_refused_and_what_it_points_at_is_left_alone(bare_ws):
    victim = bare_ws.parent / "victim.txt"
    victim.write_text("precious\n")
    (bare_ws / "locks" / "workspace.lock").symlink_to("../../victim.txt")
    refused = run_loom("-w", bare_ws, "curate", check=False)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "workspace.lock is a symbolic link" in refused.stderr and "remove the link" in refused.stderr
    assert victim.read_text() == "precious\n"


def test_a_lock_that_cannot_be_opened_says_so_in_one_line(bare_ws):
    lock = bare_ws / "locks" / "workspace.lock"
    lock.mkdir()
    refused = run_loom("-w", bare_ws, "curate", check=False)
    assert refused.returncode == 2 and refused.stderr == f"error: {lock} is a folder, not a lock file; remove it " \
                                                         "(Loom creates its lock anew) and run again\n"
    lock.rmdir()
    lock.write_text("")
    if subprocess.run(["chattr", "+i", lock], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable files (chattr +i), which root cannot write either")
    try:
        refused = run_loom("-w", bare_ws, "curate", check=False)
    finally:
        subprocess.run(["chattr", "-i", lock], check=True)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert f"cannot open the lock {lock}: Operation not permitted" in refused.stderr and "chattr -i" in refused.stderr


@pytest.mark.parametrize("kind", ["fifo", "hard link", "someone's data"])
def test_a_lock_file_loom_did_not_write_is_neither_truncated_nor_written(tmp_path, kind):
    lock, data = tmp_path / "x.lock", tmp_path / "notes.txt"
    data.write_text("my notes\n")
    if kind == "fifo":
        os.mkfifo(lock)
    elif kind == "hard link":
        os.link(data, lock)
    else:
        lock.write_text("my notes\n")
    with pytest.raises(UserError, match="x.lock is (not a regular file|a hard link to another file|not a Loom lock)"):
        with exclusive(lock, "the target"):
            pass
    assert data.read_text() == "my notes\n" and (kind == "fifo" or lock.read_text() == "my notes\n")


def test_a_lock_left_by_a_dead_holder_is_taken_over(tmp_path):
    lock, notes = tmp_path / "x.lock", []
    lock.write_text(json.dumps({"pid": 2 ** 22 + 7, "host": "h", "since": 0, "command": "loom curate"}))
    with exclusive(lock, "the target", notes.append):
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    assert lock.read_text() == "" and len(notes) == 1 and "took over the lock of the target from pid 4194311" in notes[0]


def test_a_reader_asking_whether_a_lock_is_held_never_makes_a_writer_refused(tmp_path):
    """`is_held` (how `loom status` tells a running run from an interrupted one) tries the flock shared for an
    instant; a writer taking the lock meanwhile tries again rather than saying "in use" of nobody. A reader
    process probing without pause, a writer taking the lock 200 times."""
    lock = tmp_path / "locks" / "run-x.lock"
    with exclusive(lock, "x"):
        pass
    probe = f"from base.lock import is_held\nwhile True:\n    is_held({str(lock)!r})"
    reader = subprocess.Popen([sys.executable, "-c", probe])
    try:
        time.sleep(1.0)  # the reader probing
        for _ in range(200):
            with exclusive(lock, "x"):
                assert is_held(lock)
        assert reader.poll() is None
    finally:
        reader.kill()
        reader.wait()
    assert not is_held(lock)
