"""A killed job, rerun on an existing cluster, ends with the same outputs as an uninterrupted one; a rerun redoes
only what changed."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from distributed import Client

from helpers import FORTUNES_FILTERS, LOOM, copy_curated, published, run_loom

from base.workspace import Workspace

MANIFEST_TABLES = ("documents", "funnel", "shards")


def read_outputs(ws: Path) -> dict:
    tables = {str(p.relative_to(ws)): pq.read_table(p) for p in sorted((published(ws) / "curated").glob("*/part-*.parquet"))}
    for name in MANIFEST_TABLES:
        table = pq.read_table(Workspace(ws).published().manifest_table(name))
        tables[name] = table.drop_columns(["created"]) if name == "shards" else table
    return tables


def done_markers(ws: Path, stage: str) -> dict[str, float]:
    return {str(p.relative_to(ws)): json.loads(p.read_text())["finished"] for p in (ws / "work" / stage).glob("*/*.done")}


@pytest.fixture
def dask_cluster(tmp_path):
    """A `dask scheduler` and a `dask worker`, separate processes on loopback."""
    dask = str(Path(sys.executable).with_name("dask"))
    scheduler_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(scheduler_file)], stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        procs.append(subprocess.Popen([dask, "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1",
                                       "--nthreads", "1", "--no-dashboard", "--local-directory", str(tmp_path / "w")],
                                      stderr=subprocess.DEVNULL))
        with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
            client.wait_for_workers(1, timeout=60)
            yield client
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=30)


@pytest.mark.slow
def test_a_killed_job_resumes_on_an_existing_cluster_to_the_same_outputs(tmp_path, dask_cluster, curated_slice,
                                                                         slice_sources, slice_tokenizer):
    """Killed in prepare on its own LocalCluster, the job is rerun on a `dask scheduler` of separate processes: the
    shards it had finished are not redone, the rest runs there, and the outputs equal an uninterrupted curation's."""
    clean_ws, _ = curated_slice
    ws = tmp_path / "ws"
    args = [*LOOM, "-w", str(ws), "curate", "--sources", str(slice_sources), "--tokenizer", str(slice_tokenizer),
            "--workers", "2"]
    job = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while not done_markers(ws, "prepare") and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.02)
    os.killpg(job.pid, signal.SIGKILL)  # the client and its LocalCluster's worker processes
    job.wait()
    finished_before_kill = done_markers(ws, "prepare")
    total_shards = len(done_markers(clean_ws, "prepare"))
    assert 0 < len(finished_before_kill) < total_shards, "the kill was meant to land part-way through prepare"
    assert not (published(ws) / "manifest" / "funnel").exists()

    address = dask_cluster.scheduler.address
    rerun = run_loom("-w", ws, "curate", "--sources", slice_sources, "--tokenizer", slice_tokenizer,
                     "--scheduler", address)
    assert "Curation funnel" in rerun.stdout and f"Dask: {address} with 1 workers" in rerun.stdout
    prefixes = dask_cluster.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert {"prepare", "exact_dedup", "tokenize"} <= set(prefixes)  # the unfinished shards' prepare among them
    after = done_markers(ws, "prepare")
    for marker, finished in finished_before_kill.items():
        assert after[marker] == finished, f"{marker} was redone although it had finished"
    resumed, clean = read_outputs(ws), read_outputs(clean_ws)
    assert resumed.keys() == clean.keys()
    for name in clean:
        assert resumed[name].equals(clean[name]), name


@pytest.mark.slow
def test_a_rerun_with_nothing_changed_redoes_nothing_and_a_changed_config_redoes_its_source(tmp_path, curated_slice,
                                                                                            slice_sources, slice_tokenizer):
    """A copy of the curated slice, curated again from a sources.toml in another folder whose `root` names the
    slice's: nothing is redone; then one source's filters changed: that source alone is."""
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws")
    sources = tmp_path / "sources.toml"
    sources.write_text(f'root = "{slice_sources.parent}"\n' + slice_sources.read_text())
    first = done_markers(ws, "prepare")
    assert first
    rerun = run_loom("-w", ws, "curate", "--sources", sources, "--tokenizer", slice_tokenizer, "--workers", 2)
    assert done_markers(ws, "prepare") == first
    assert f"note: nothing to do: generation {published(ws).name} is published already" in rerun.stdout
    assert "Dask:" not in rerun.stdout  # found from the markers: no cluster started
    sources.write_text(sources.read_text().replace(FORTUNES_FILTERS, 'filters = ["c4"]'))
    run_loom("-w", ws, "curate", "--sources", sources, "--tokenizer", slice_tokenizer, "--workers", 2)
    third = done_markers(ws, "prepare")
    redone = {marker for marker in first if third[marker] != first[marker]}
    assert redone == {"work/prepare/fortunes/part-00000.done"}
    reasons = {r["reason"] for r in pq.read_table(published(ws) / "manifest" / "funnel").to_pylist() if r["source"] == "fortunes"}
    assert "gopher_short_doc" not in reasons and reasons & {"too_few_sentences", "no_terminal_punct"}
