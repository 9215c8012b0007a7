"""Fixtures that tests of several packages share: a small slice of the bundled corpora, a tokenizer trained on it,
one curated run, the quickstart's workspace (its tests are marked slow) and a real S3 server. What tests import
(paths, `run_loom`, specs) is in helpers.py; the report pages' Chromium helpers in report_pages.py."""

import functools
import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from helpers import REPO, built_once, run_loom, write_slice


QUICKSTART_GROUP = "quickstart_ws"
DOMAINS_GROUP = "domains_slice"
# The groups that take longest, in the order of their time in CI (measured 2026-12-06: the quickstart's 281 s, the
# docs pages' 265 s, ...), started first so that no long one starts last while the other worker runs out of work
# (longest first: 1,176 s of wall time against 1,206 s in the order before); a file not named here keeps its place.
# The order changes how soon the run ends, never a result.
LONGEST_FIRST = (QUICKSTART_GROUP, "test_docs_pages.py", "test_search.py", "test_object_storage.py",
                 "test_one_writer.py", "test_ladder.py", "test_dedup.py", "test_store_workspace.py",
                 "test_resume_and_cluster.py", "test_trainer.py", "test_store_training.py", "test_domain_models.py",
                 "test_accumulation.py", "test_filters_fast.py", DOMAINS_GROUP, "test_bad_input.py", "test_annotate.py",
                 "test_export.py", "test_tutorial.py", "test_moe.py", "test_api.py", "test_readme_python.py",
                 "test_throughput.py", "test_global_stages.py", "test_mixture_builds.py", "test_quality.py",
                 "test_plugin_steps.py", "test_shard_cutting.py")


@functools.cache
def worker_group(path: str) -> str:
    """The worker group of a test file: every file that uses the quickstart workspace in one group (that workspace
    is built once, by the worker that runs them), likewise the slice curated with domains; any other file a group
    of its own (its module fixtures built once)."""
    text = (REPO / path).read_text(encoding="utf-8")
    shared = [group for group in (QUICKSTART_GROUP, DOMAINS_GROUP) if group in text]
    return shared[0] if shared else Path(path).name


# Fixtures that take over 20 s to build (on CI's 2 cores): a test that uses one is slow, as the README's policy says.
SLOW_FIXTURES = {
    "quickstart_ws": "`loom quickstart` (about 4 minutes)",
    "toy_search": "a toy mixture search: 6 proxies, their fit and the confirm runs (~50 s)",
    "toy_ladder": "a toy ladder of 3 rungs trained and fitted (~45 s)",
    "run_ws": "three runs trained for the run report, one of them MoE (~35 s)",
    "runs": "a one-rank, a two-rank and a stopped-and-resumed run (~33 s)",
    "domains_slice": "the slice curated with [domains] (~21 s); the domain model and the cells stay tested by default",
    "annotated": "the slice curated with three annotators (~21 s); an edited scorer's tiny curate and every "
                 "config check stay in the default run",
}


def pytest_collection_modifyitems(items):
    """A test on a fixture of SLOW_FIXTURES is slow. The longest groups run first."""
    for item in items:
        if SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: start_order(worker_group(item.nodeid.split("::")[0])))


def start_order(group: str) -> int:
    return LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown, and so never called, without it
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (`make test` runs `-n 2 --dist loadgroup`), each test's group (worker_group) goes whole to
    one worker, in the order of the items. xdist's own loadgroup takes groups from a suffix it appends to node ids,
    which pytest 9 no longer lets it change (pytest-xdist issue 1386: every test was sent on its own)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid.split("::")[0])

    return ByGroup(config, log)


@pytest.fixture
def connections_tried(monkeypatch) -> list:
    """The addresses any socket tries to connect to during the test, each refused: a model folder is read as it is,
    nothing downloaded."""
    tried = []

    def connect(sock, address):
        tried.append(address)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", connect)
    return tried


@pytest.fixture
def short_tmp_path():
    """A temporary folder with a short path, removed after the test: a line that names a path must fit loom's 150
    columns, and pytest-xdist's popen-gwN/ folders made one wrap (the tutorial and the docs pages print paths)."""
    folder = Path(tempfile.mkdtemp(prefix="loom-t-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def slice_sources(tmp_path_factory) -> Path:
    return built_once(tmp_path_factory, "slice", lambda folder: (write_slice(folder), None))[0]


@pytest.fixture(scope="session")
def slice_tokenizer(tmp_path_factory, slice_sources) -> Path:
    def train(folder: Path):
        out = folder / "tokenizer.json"
        run_loom("tokenizer", "train", "--sources", slice_sources, "--vocab-size", 2000, "--output", out)
        return out, None

    return built_once(tmp_path_factory, "tokenizer", train)[0]


@pytest.fixture(scope="session")
def curated_slice(tmp_path_factory, slice_sources, slice_tokenizer):
    """One `loom curate` of the slice on a LocalCluster with 2 worker processes, into a workspace whose path holds a
    quote, spaces and non-ASCII letters (every path Loom builds SQL or files from must take them)."""
    def curate(folder: Path):
        workspace = folder / "it's a wörk space"
        return workspace, run_loom("--workspace", workspace, "curate", "--sources", slice_sources, "--tokenizer",
                                   slice_tokenizer, "--workers", 2)

    return built_once(tmp_path_factory, "ws", curate)


@pytest.fixture(scope="session")
def domains_slice(tmp_path_factory, slice_sources, slice_tokenizer):
    """The slice curated once with `[domains] k = 3` over web and docs, domain 1 named "first", the tokenizer in
    its models/: (workspace, its sources.toml, the tokenizer)."""
    root = tmp_path_factory.mktemp("domains")
    shutil.copytree(slice_sources.parent, root / "slice")
    sources = root / "slice" / "sources.toml"
    sources.write_text(sources.read_text() + '\n[domains]\nk = 3\nsources = ["web", "docs"]\nnames = {1 = "first"}\n')
    ws = root / "ws"
    run_loom("-w", ws, "curate", "--sources", sources, "--tokenizer", slice_tokenizer, "--workers", 2)
    (ws / "models").mkdir(exist_ok=True)
    shutil.copy(slice_tokenizer, ws / "models" / "tokenizer.json")
    return ws, sources, slice_tokenizer


@pytest.fixture(scope="session")
def quickstart_ws(tmp_path_factory):
    """`loom quickstart` into a fresh workspace, as a new user runs it."""
    ws = tmp_path_factory.mktemp("quickstart") / "ws"
    result = run_loom("-w", ws, "quickstart", timeout=900)
    return ws, result


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 server (SeaweedFS) on 127.0.0.1 with one bucket; its endpoint and keys are set in this process's
    environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL) for it and every `loom` it starts."""
    from s3server import start_s3_server

    server = start_s3_server(tmp_path_factory.mktemp("s3"))
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    try:
        yield server
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
