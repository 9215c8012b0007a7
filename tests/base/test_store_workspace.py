"""`loom mix`, `loom sql` and `loom report` on a workspace on a real S3 server (SeaweedFS on loopback, see
tests/s3server.py): the same schedule files, query results and pages as on a local workspace curated from the same
sources; a query reaches the workspace's prefix and nothing else; a wrong bucket, no credentials or nothing curated
is one line."""

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import GOOD_SPEC, LOOM, copy_curated, run_loom, write_spec

from base.store import as_path
from mixtures import current_build

QUERIES = [
    "SELECT source, count(*) AS docs, sum(n_tokens) AS tokens FROM documents GROUP BY 1 ORDER BY 1",
    "SELECT source, fate, stage, reason, count(*) FROM funnel GROUP BY ALL ORDER BY ALL",
    "SELECT id, source, shard, row, lang, quality_bucket, n_tokens FROM doc_stats ORDER BY shard, row",
    "SELECT source, path, n_docs, n_tokens FROM shards ORDER BY path",
    "SELECT count(*) AS malformed FROM quarantine",  # none in the slice: the view is there, globbed on the store
    "SELECT * FROM dedup_clusters ORDER BY ALL",
    "SELECT * FROM mixture_plan ORDER BY ALL",
    "SELECT mixture, component, count(*), sum(n_tokens) FROM mixture_documents GROUP BY ALL ORDER BY ALL",
]


def put_text(url: str, text: str) -> None:
    target = as_path(url)
    target.fs.pipe_file(target.path, text.encode())


@pytest.fixture(scope="module")
def workspaces(s3_server, slice_sources, slice_tokenizer, curated_slice, tmp_path_factory) -> tuple[str, Path]:
    """The slice curated into a workspace on S3 (one curate per module) and the same data in a local workspace,
    each with the tokenizer in models/ and the mixture spec `good` in mixtures/; `good` built in both."""
    store = s3_server.url("ws-read")
    run_loom("-w", store, "curate", "--sources", slice_sources, "--tokenizer", slice_tokenizer, "--workers", 2)
    tokenizer = as_path(f"{store}/models/tokenizer.json")
    tokenizer.fs.put_file(str(slice_tokenizer), tokenizer.path)
    put_text(f"{store}/mixtures/good.toml", f'name = "good"\n{GOOD_SPEC}')
    local = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("local") / "ws")
    write_spec(local, "good", GOOD_SPEC)
    return store, local


@pytest.fixture(scope="module")
def built(workspaces) -> dict[str, subprocess.CompletedProcess]:
    store, local = workspaces
    return {name: run_loom("-w", ws, "mix", "build", "good") for name, ws in (("store", store), ("local", local))}


def compiled_files(root) -> dict[str, bytes]:
    """Every file of the compiled mixture `good` by its name inside the folder; schedule.json without the
    workspace's address and the generation it names, which are where each was built."""
    folder = current_build(as_path(f"{root}/mixtures/good")).root
    files = {str(p)[len(str(folder)) + 1:]: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    files.pop("readers.lock" if "readers.lock" in files else "_SUCCESS")  # a local build's lock, a store's marker
    meta = json.loads(files.pop("schedule.json"))
    for key in ("workspace", "generation", "manifest_fingerprint"):
        meta.pop(key)
    files["schedule.json"] = json.dumps(meta, sort_keys=True).encode()
    return files


@pytest.mark.slow  # a curate onto S3 (~30-60 s)
def test_mix_build_on_a_store_writes_the_same_schedule_files(workspaces, built):
    store, local = workspaces
    assert re.search(f"Build b-[0-9a-f-]+: {re.escape(store)}/mixtures/good/builds/b-[0-9a-f-]+/schedule.json",
                     built["store"].stdout)
    assert f"Report:   {store}/mixtures/good/report.html" in built["store"].stdout
    on_store, on_disk = compiled_files(store), compiled_files(local)
    assert sorted(on_store) == sorted(on_disk) and len(on_store) >= 5  # spec, schedule, plan, >= 2 sequence indexes
    assert on_store == on_disk
    meta = json.loads((current_build(as_path(f"{store}/mixtures/good")).schedule).read_text())
    assert meta["workspace"] == store and meta["generation"].startswith("g-")
    listed = run_loom("-w", store, "mix", "list").stdout
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in listed.splitlines() if "│" in line]
    assert [f"{store}/mixtures/good.toml", "yes"] in [row[1:] for row in rows if row[0] == "good"], listed
    shown = [run_loom("-w", ws, "mix", "show", "good").stdout for ws in (store, local)]
    assert shown[0] == shown[1] and "Plan of good" in shown[0]
    assert not as_path(f"{store}/locks/mixture-good.lock").exists()  # released


@pytest.mark.slow
def test_sql_on_a_store_answers_like_the_local_workspace(workspaces, built, tmp_path):
    store, local = workspaces
    for query in QUERIES:
        on_store = run_loom("-w", store, "sql", "--format", "csv", query)
        on_disk = run_loom("-w", local, "sql", "--format", "csv", query)
        assert on_store.stdout == on_disk.stdout, query
        assert len(on_store.stdout.splitlines()) > 1, query  # the views saw rows
        assert on_store.stderr == "", query
    output = tmp_path / "tokens.parquet"
    run_loom("-w", store, "sql", "--format", "parquet", "--output", output, QUERIES[0])
    assert output.stat().st_size > 0  # --output is the local file the user named


@pytest.mark.slow
def test_reports_on_a_store_are_written_to_it(workspaces, built):
    store, local = workspaces
    mixture = run_loom("-w", store, "report", "mixture", "good")
    assert mixture.stdout.strip() == f"Report: {store}/mixtures/good/report.html"
    curation = run_loom("-w", store, "report", "curation")
    page = curation.stdout.strip().removeprefix("Report: ")
    assert page.startswith(f"{store}/generations/g-") and page.endswith("/manifest/report.html")
    run_loom("-w", local, "report", "curation")
    assert run_loom("-w", store, "report", "open").stdout.strip() == f"{store}/index.html"  # the index, rewritten
    assert f'href="{page.removeprefix(store + "/")}"' in as_path(f"{store}/index.html").read_text()
    assert run_loom("-w", store, "report", "open", "good").stdout.strip() == f"{store}/mixtures/good/report.html"
    html = as_path(page).read_text()
    local_html = Path(run_loom("-w", local, "report", "curation").stdout.strip().removeprefix("Report: ")).read_text()
    assert "<h1>Curation of 4 sources</h1>" in html and 'id="funnel-table"' in html
    assert html == local_html  # the same data, the same page
    mixture_html = as_path(f"{store}/mixtures/good/report.html").read_text()
    assert "<h1>Mixture good</h1>" in mixture_html and "<h2>The plan</h2>" in mixture_html


# ---- fast: the sandbox and the errors, on a workspace with only a run's metrics ----


@pytest.fixture(scope="module")
def small_store(s3_server, tmp_path_factory) -> tuple[str, Path]:
    """A workspace on S3 with one run's metrics, beside a prefix that shares its name's start (ws-small-other) and
    another (other/) with a Parquet file no query may read; and a local secret."""
    import pyarrow as pa

    from base.parquet_files import write_parquet

    store = s3_server.url("ws-small")
    lines = "".join(json.dumps({"step": step, "loss": 4.0 - step, "lr": 1e-3}) + "\n" for step in range(2))
    put_text(f"{store}/runs/r1/metrics.jsonl", lines)
    for other in ("other", "ws-small-other"):
        write_parquet(pa.table({"secret": ["s3 secret"]}), f"{s3_server.url(other)}/secret.parquet")
    secret = tmp_path_factory.mktemp("outside") / "secret.csv"
    secret.write_text("secret\nlocal\n")
    return store, secret


@pytest.mark.slow  # a second store workspace (~15 s); SQL on a store runs by default
def test_a_query_on_a_store_reaches_its_prefix_and_nothing_else(s3_server, small_store):
    store, secret = small_store
    result = run_loom("-w", store, "sql", "--format", "csv", "SELECT run, step, loss FROM metrics ORDER BY step")
    assert result.stdout == "run,step,loss\nr1,0,4.0\nr1,1,3.0\n"
    escapes = [f"SELECT * FROM read_parquet('{s3_server.url('other')}/secret.parquet')",
               f"SELECT * FROM read_parquet('{s3_server.url('ws-small-other')}/secret.parquet')",
               f"SELECT * FROM read_parquet('{store}/../other/secret.parquet')",
               f"SELECT * FROM glob('{s3_server.url()}/*')",
               f"SELECT * FROM read_csv('{secret}')",
               "SELECT * FROM read_text('/etc/passwd')",
               "SET allowed_directories = ['s3://']",
               f"COPY (SELECT 42) TO '{store}/copied.csv'"]
    with ThreadPoolExecutor(4) as pool:  # one `loom sql` each, a few at a time
        results = list(pool.map(lambda q: run_loom("-w", store, "sql", q, check=False), escapes))
    for query, result in zip(escapes, results):
        assert result.returncode == 2, (query, result.stdout)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "secret" not in result.stdout, (query, lines)
    refused = run_loom("-w", store, "sql", f"SELECT * FROM read_parquet('{s3_server.url('other')}/secret.parquet')",
                       check=False)
    assert "Permission Error" in refused.stderr and "file system operations are disabled" in refused.stderr
    assert not as_path(f"{store}/copied.csv").exists()


@pytest.mark.slow  # ~8 `loom` runs on S3; the same lines for curate and train are checked by default
def test_a_wrong_bucket_no_credentials_or_nothing_curated_is_one_line(s3_server, tmp_path):
    wrong_bucket = run_loom("-w", "s3://no-such-bucket/ws", "sql", "SELECT 1", check=False)
    assert wrong_bucket.returncode == 2
    assert wrong_bucket.stderr == ("error: cannot use s3://no-such-bucket/ws: The specified bucket does not exist; "
                                   "create the bucket, or fix the URL\n")
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    env.update(HOME=str(tmp_path), AWS_EC2_METADATA_DISABLED="true",
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_CONFIG_FILE="/nonexistent")
    empty = s3_server.url("ws-empty")
    no_keys = subprocess.run([*LOOM, "-w", empty, "report", "curation"], capture_output=True, text=True, env=env,
                             timeout=120)
    assert no_keys.returncode == 2
    assert no_keys.stderr.startswith(f"error: cannot use {empty}: NoCredentialsError (Unable to locate credentials); "
                                     "check the endpoint") and len(no_keys.stderr.splitlines()) == 1
    expected = {
        ("sql", "SELECT 1"): f"error: {empty} has nothing to query yet; run `loom curate` (or `loom quickstart`) first",
        ("report", "curation"): f"error: no curated data in {empty}; run `loom curate` first",
        ("mix", "build", "sample"): f"error: no curated data in {empty} (no {empty}/manifest/curation.json); run "
                                    "`loom curate` first",
    }
    for command, line in expected.items():
        result = run_loom("-w", empty, *command, check=False)
        assert (result.returncode, result.stderr.strip()) == (2, line), command
    listed = run_loom("-w", empty, "mix", "list").stdout  # the bundled specs, none compiled here
    assert any(line.split("│")[1].strip() == "sample" and line.split("│")[3].strip() == "no"
               for line in listed.splitlines() if "│" in line), listed
