"""Sources and the workspace on a real S3 server (SeaweedFS on loopback, tests/s3server.py): curated the same as
on local disk, resumed after kill -9, one clear line for a wrong endpoint or key, and no secret in any output."""

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from helpers import LOOM, run_loom
from s3server import start_s3_server

from distributed import Client

from base.lock import exclusive
from base.parquet_files import read_parquet
from base.store import as_path
from base.workspace import Workspace

MANIFEST_TABLES = ("shards", "documents", "funnel", "dedup_clusters", "quality_buckets")


def upload(local: Path, url: str) -> None:
    target = as_path(url)
    target.fs.put(f"{local}/", f"{target.path}/", recursive=True)


def s3_sources(slice_sources: Path, url: str, out: Path) -> Path:
    """The slice's sources.toml with every path under `url` (where the slice was uploaded)."""
    out.write_text(slice_sources.read_text().replace('paths = ["', f'paths = ["{url}/'))
    return out


def curation_tables(workspace: str, inputs: str) -> dict:
    """Everything a published generation says, as comparable values: each curated part and manifest table
    (with `inputs`, the prefix of the input paths, cut off; without the wall-clock `created` and the shards'
    fingerprints, which hold their inputs' paths and versions), the quarantine and the dedup report."""
    gen = Workspace.locate(workspace).published()
    normal = lambda value: value.replace(inputs + "/", "") if isinstance(value, str) else value  # noqa: E731
    tables = {}
    for name in MANIFEST_TABLES:
        table = read_parquet(gen.manifest_table(name))
        rows = table.drop(["created", "fingerprint"]).to_pylist() if name == "shards" else table.to_pylist()
        tables[name] = [{k: normal(v) for k, v in row.items()} for row in rows]
    for row in tables["shards"]:
        tables[row["path"]] = read_parquet(gen.root / row["path"]).to_pylist()
        quarantine = gen.quarantine_part(row["source"], int(row["path"].split("-")[-1].split(".")[0]))
        tables[f"quarantine {row['path']}"] = normal(quarantine.read_text())
    tables["dedup_report"] = json.loads((gen.manifest / "dedup_report.json").read_text())
    return tables


def assert_same_curation(a: str, a_inputs: str, b: str, b_inputs: str) -> None:
    tables_a, tables_b = curation_tables(a, a_inputs), curation_tables(b, b_inputs)
    assert tables_a.keys() == tables_b.keys()
    for name in tables_a:
        assert tables_a[name] == tables_b[name], f"{name} differs"
    funnel = tables_a["funnel"]
    assert len(funnel) > 1000 and len({r["source"] for r in funnel}) == 4  # the comparison saw real data


def generation_text(workspace: str) -> str:
    """Every byte of the published generation and the workspace's lock and marker objects, as text."""
    root = as_path(workspace)
    return "".join(root.fs.cat_file(name).decode("utf-8", "replace") for name in root.fs.find(root.path))


@pytest.fixture(scope="module")
def s3_slice(s3_server, slice_sources, tmp_path_factory) -> tuple[str, Path]:
    """The slice's corpora uploaded to the server, and a sources.toml naming them by s3:// URL."""
    url = s3_server.url("corpora")
    upload(slice_sources.parent, url)
    return url, s3_sources(slice_sources, url, tmp_path_factory.mktemp("s3sources") / "sources.toml")


@pytest.mark.slow
def test_kill_9_mid_curation_on_s3_then_rerun_is_identical(s3_server, s3_slice, slice_sources, slice_tokenizer,
                                                           curated_slice):
    corpora, sources = s3_slice
    workspace = s3_server.url("ws-killed")
    args = [*LOOM, "-w", workspace, "curate", "--sources", str(sources), "--tokenizer", str(slice_tokenizer),
            "--workers", "2"]
    job = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    work = as_path(workspace) / "work" / "prepare"
    deadline = time.monotonic() + 240
    while not (work.exists() and any(p.name.endswith(".done") for p in work.rglob("*.done"))):
        assert job.poll() is None and time.monotonic() < deadline, "curation ended before a shard was done"
        time.sleep(0.2)
    os.killpg(job.pid, signal.SIGKILL)  # the client and its Dask workers, mid-stage
    job.wait()
    assert as_path(workspace).joinpath("locks", "workspace.lock").exists()  # left behind by the killed holder
    assert not as_path(workspace).joinpath("published.json").exists()
    result = run_loom(*args[len(LOOM):])
    assert "took over the lock of workspace" in result.stdout
    assert_same_curation(workspace, corpora, str(curated_slice[0]), str(slice_sources.parent))


def test_a_second_writer_of_an_s3_workspace_is_refused(s3_server, slice_sources, slice_tokenizer):
    lock = as_path(s3_server.url("ws-busy")) / "locks" / "workspace.lock"
    lock.fs.pipe_file(lock.path, json.dumps({"pid": 1, "host": "elsewhere", "since": 0, "command": "loom curate"}).encode())
    result = run_loom("-w", s3_server.url("ws-busy"), "curate", "--sources", slice_sources, "--tokenizer",
                      slice_tokenizer, check=False)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"error: workspace {s3_server.url('ws-busy')} is in use by pid 1 on elsewhere")
    assert len(result.stderr.strip().splitlines()) == 1


def test_taking_over_a_dead_holders_lock_is_said_only_once_the_lock_is_held(s3_server):
    lock = as_path(s3_server.url("ws-stale")) / "locks" / "workspace.lock"
    lock.fs.pipe_file(lock.path, json.dumps({"pid": 2 ** 22 + 7, "host": socket.gethostname(), "since": 0,
                                             "command": "loom curate"}).encode())
    held_when_said = []
    with exclusive(lock, "workspace ws-stale", lambda line: held_when_said.append((line, lock_holder_pid(lock)))):
        pass
    assert [(line.split(" from ")[0], pid) for line, pid in held_when_said] == [
        ("took over the lock of workspace ws-stale", os.getpid())]
    assert not lock.exists()


def lock_holder_pid(lock) -> int | None:
    return json.loads(lock.read_text())["pid"] if lock.exists() else None


def test_a_store_failing_inside_the_lock_reports_that_failure_not_the_lock_release(tmp_path):
    """The server stops while the lock is held: the write that fails is the error; the release that fails too
    is a note saying the lock is left behind."""
    server = start_s3_server(tmp_path / "s3")
    try:
        options = {"key": server.access_key, "secret": server.secret_key,
                   "client_kwargs": {"endpoint_url": server.endpoint, "region_name": "us-east-1"},
                   "config_kwargs": {"retries": {"max_attempts": 1, "mode": "standard"}}}  # fail fast, once
        lock, published = (as_path(server.url(f"ws/{key}"), **options) for key in ("locks/x.lock", "published.json"))
        notes = []
        with pytest.raises(Exception) as raised:
            with exclusive(lock, "workspace ws", notes.append):
                os.killpg(server.process.pid, signal.SIGKILL)
                server.process.wait()
                published.write_text("{}")
    finally:
        server.stop()
    assert "published.json" in str(raised.value) and "x.lock" not in str(raised.value)
    assert len(notes) == 1 and notes[0].startswith(f"the lock {lock} could not be released")


@pytest.mark.parametrize("change", ["secret", "endpoint"])
def test_a_wrong_key_or_endpoint_is_one_line(s3_server, slice_sources, slice_tokenizer, change):
    env = dict(os.environ)
    if change == "secret":
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    else:
        env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:9"  # the discard port: nothing listens
        env["AWS_MAX_ATTEMPTS"] = "1"
    result = subprocess.run([*LOOM, "-w", s3_server.url("ws-wrong"), "curate", "--sources", str(slice_sources),
                             "--tokenizer", str(slice_tokenizer)], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot use {s3_server.url('ws-wrong')}: ")
    assert "credentials" in lines[0] and "Traceback" not in result.stdout
    assert s3_server.secret_key not in result.stdout + result.stderr


@pytest.mark.slow  # a curation on a separate cluster (~18 s); curating from and to S3 runs by default
def test_storage_options_in_sources_toml_reach_the_workers(s3_server, s3_slice, slice_tokenizer, tmp_path):
    """A local workspace, a source on S3 whose keys are only in sources.toml: the client and every worker read
    it with them, and neither the output nor the published generation holds the secret."""
    corpora, _ = s3_slice
    sources = tmp_path / "sources.toml"
    sources.write_text(f"""
[[source]]
name = "docs"
format = "jsonl.gz"
paths = ["{corpora}/docs/*.jsonl.gz"]
id_field = "id"
filters = []
storage_options = {{ key = "{s3_server.access_key}", secret = "{s3_server.secret_key}", endpoint_url = "{s3_server.endpoint}" }}
""")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["AWS_CONFIG_FILE"] = env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "none")
    result = subprocess.run([*LOOM, "-w", tmp_path / "ws", "curate", "--sources", sources, "--tokenizer",
                             slice_tokenizer, "--workers", "2"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    funnel = read_parquet(Workspace(tmp_path / "ws").published().manifest_table("funnel"))
    assert funnel.num_rows == 81 and funnel["input"][0].as_py().startswith(f"{corpora}/docs/")
    published = "".join(p.read_text(errors="replace") for p in (tmp_path / "ws").rglob("*") if p.is_file())
    assert s3_server.secret_key not in result.stdout + result.stderr + published


@pytest.mark.slow
def test_a_cluster_sharing_no_disk_curates_from_and_to_s3(s3_server, s3_slice, slice_sources, slice_tokenizer,
                                                           curated_slice, tmp_path):
    """`dask scheduler` and two `dask worker`s as separate processes, each in a folder of its own (cwd, TMPDIR,
    --local-directory), the tokenizer, the sources and the workspace on S3: the machines of a real cluster. The
    generation equals the local curation's, is committed, holds no secret, and the workspace's lock is released
    (one on S3 with --workers, killed and rerun: test_kill_9_mid_curation_on_s3_then_rerun_is_identical)."""
    corpora, sources = s3_slice
    tokenizer = s3_server.url("models/tokenizer.json")
    as_path(tokenizer).fs.put_file(str(slice_tokenizer), as_path(tokenizer).path)
    dask = str(Path(LOOM[0]).with_name("dask"))
    scheduler_file = tmp_path / "scheduler" / "scheduler.json"
    procs = []

    def start(name: str, *args: str) -> None:
        home = tmp_path / name
        home.mkdir(exist_ok=True)
        (home / "tmp").mkdir()
        env = {**os.environ, "TMPDIR": str(home / "tmp")}
        procs.append(subprocess.Popen([dask, *args], cwd=home, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))

    start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
          "--scheduler-file", str(scheduler_file))
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        for name in ("worker-a", "worker-b"):
            start(name, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                  "--local-directory", str(tmp_path / name / "dask"))
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=120)
        workspace = s3_server.url("ws-cluster")
        result = run_loom("-w", workspace, "curate", "--sources", sources, "--tokenizer", tokenizer,
                          "--scheduler", address, cwd=tmp_path / "scheduler")
        assert f"Dask: {address} with 2 workers" in result.stdout
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=30)
    assert f"Curated Parquet: {workspace}/generations/g-" in result.stdout
    assert Workspace.locate(workspace).published().success_marker.exists()  # written before published.json named it
    assert_same_curation(workspace, corpora, str(curated_slice[0]), str(slice_sources.parent))
    assert s3_server.secret_key not in result.stdout + result.stderr + generation_text(workspace)
    assert not as_path(workspace).joinpath("locks", "workspace.lock").exists()  # released


def test_a_missing_bucket_is_one_line(s3_server, slice_sources, slice_tokenizer):
    result = run_loom("-w", "s3://no-such-bucket/ws", "curate", "--sources", slice_sources, "--tokenizer",
                      slice_tokenizer, check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: cannot use s3://no-such-bucket/ws: The specified bucket does not exist; "
                                     "create the bucket, or fix the URL")


def test_an_https_style_source_is_read_over_http(slice_sources):
    """A source named by an http(s):// URL (read-only: fsspec's HTTP filesystem) reads the same records as the
    file on disk; served here by a real HTTP server on loopback."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from base.inputs import file_size, listing
    from curation.config import SourceConfig
    from curation.readers import read_shard, source_shards

    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(slice_sources.parent))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/docs/docs-00001.jsonl.gz"
        source = SourceConfig(name="docs", format="jsonl.gz", paths=(url,), id_field="id")
        [(shard, _)] = source_shards(source)
        local = slice_sources.parent / "docs" / "docs-00001.jsonl.gz"
        assert str(shard) == url and file_size(shard) == local.stat().st_size
        assert listing(shard)[0].startswith(f"{url}:{local.stat().st_size}:")
        remote_texts = [r.text for r in read_shard(source, shard)]
        assert remote_texts == [r.text for r in read_shard(source, local)] and len(remote_texts) == 41
    finally:
        server.shutdown()


def test_the_tokenizer_is_trained_into_a_workspace_on_a_store(s3_server, slice_sources):
    from tokenizers import Tokenizer

    models = as_path(s3_server.url("ws-models")) / "models"
    result = run_loom("-w", s3_server.url("ws-models"), "tokenizer", "train", "--sources", slice_sources,
                      "--vocab-size", 500)
    assert f"Tokenizer: {models / 'tokenizer.json'} (500 tokens" in result.stdout
    assert Tokenizer.from_str((models / "tokenizer.json").read_text()).get_vocab_size() == 500
    assert not models.parent.joinpath("locks", "workspace.lock").exists()  # it held the lock and let it go


@pytest.mark.parametrize("command", [["quickstart"], ["quality", "train", "--sources", "sources.toml"]])
def test_commands_that_cannot_use_a_store_yet_say_so_in_one_line(command):
    result = run_loom("-w", "s3://bucket/ws", *command, check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == (f"error: `loom {command[0]}` cannot use a workspace on object storage yet "
                                     "(s3://bucket/ws): copy it to a local folder (e.g. `aws s3 sync s3://bucket/ws "
                                     "./ws`) and run `loom -w ./ws ...` there")
