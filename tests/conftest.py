"""Shared fixtures: a small slice of the bundled corpora, a tokenizer trained on it, and one curated run; and the
helpers that open report pages in a real headless Chromium."""

import functools
import gzip
import os
import shutil
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
LOOM = [sys.executable, "-m", "loom"]
LOOM_SCRIPT = [str(Path(sys.executable).with_name("loom"))]  # the installed command, which adds no folder to sys.path
WEB_LANGUAGES = ("en-US", "de-DE", "ja-JP")
PAGES_PER_LANGUAGE = 6
DOCS_PER_SHARD = 40
# The slice's fortunes are not web text, so they get no filter unless they name them; tests count on all four.
FORTUNES_FILTERS = 'filters = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]'


QUICKSTART_GROUP = "quickstart_ws"
# The groups that take longest (a minute or more in CI with their slow tests), started first so that no long one
# starts last while the other worker runs out of work; a file not named here keeps its place. The order changes
# how soon the run ends, never a result.
LONGEST_FIRST = (QUICKSTART_GROUP, "test_dedup.py", "test_object_storage.py", "test_ladder.py", "test_one_writer.py",
                 "test_search.py", "test_filters_fast.py", "test_store_training.py", "test_resume_and_cluster.py",
                 "test_shard_cutting.py", "test_store_workspace.py", "test_global_stages.py",
                 "test_mixture_builds.py", "test_export.py", "test_quality.py", "test_trainer.py")


@functools.cache
def worker_group(path: str) -> str:
    """The worker group of a test file: every file that uses the quickstart workspace in one group (that workspace
    is built once, by the worker that runs them), any other file a group of its own (its module fixtures built once)."""
    uses_quickstart = "quickstart_ws" in (REPO / path).read_text(encoding="utf-8")
    return QUICKSTART_GROUP if uses_quickstart else Path(path).name


def pytest_collection_modifyitems(items):
    """A test on the quickstart workspace is slow: the fixture alone runs `loom quickstart` (about 4 minutes). The
    longest groups run first."""
    for item in items:
        if "quickstart_ws" in getattr(item, "fixturenames", ()):
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


def published(workspace: Path) -> Path:
    """The folder of a workspace's published generation: its curated/, manifest/ and quarantine/."""
    from loom.workspace import Workspace

    return Workspace(Path(workspace)).published().root


def compiled(workspace: Path, mixture: str) -> Path:
    """The folder of a compiled mixture's current build: its schedule.json, plan.parquet, sequences/."""
    from mixtures import current_build

    return current_build(Path(workspace) / "mixtures" / mixture).root


def run_loom(*args, check=True, timeout=300, command=LOOM, input=None, **kwargs) -> subprocess.CompletedProcess:
    """`loom ARGS` to its end. One that outlives `timeout` fails the test with every thread's stack of each of its
    processes (Dask workers too): each gets SIGABRT, which faulthandler answers with the stacks on stderr."""
    env = {**os.environ, "COLUMNS": "200", "PYTHONFAULTHANDLER": "1", **kwargs.pop("env", {})}
    argv = [*command, *map(str, args)]
    with subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else None, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = stacks_then_kill(process)
            raise AssertionError(f"loom {' '.join(map(str, args))} still running after {timeout} s; the stacks of its "
                                 f"processes:\n{stdout}\n{stderr}") from None
    result = subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
    if check and result.returncode != 0:
        raise AssertionError(f"loom {' '.join(map(str, args))} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def stacks_then_kill(process: subprocess.Popen) -> tuple[str, str]:
    import psutil

    tree = [*psutil.Process(process.pid).children(recursive=True), psutil.Process(process.pid)]
    for member in tree:  # children first, while the parent still passes on their stderr; one at a time, so that
        try:             # their stacks do not interleave
            member.send_signal(signal.SIGABRT)
            time.sleep(0.5)
        except psutil.NoSuchProcess:
            pass
    try:
        return process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        for member in tree:
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass
        return process.communicate()


def write_slice(root: Path) -> Path:
    """Copies a few real pages and records of each bundled source into `root`; returns its sources.toml.
    One docs record is planted again in a second shard, so exact dedup has a known duplicate."""
    for lang in WEB_LANGUAGES:
        pages = sorted((EXAMPLES / "corpora" / "web" / lang).glob("*.html"))[:PAGES_PER_LANGUAGE]
        (root / "web" / lang).mkdir(parents=True)
        for page in pages:
            shutil.copy(page, root / "web" / lang / page.name)
    docs_shards = sorted((EXAMPLES / "corpora" / "docs").glob("*.jsonl.gz"))[:2]
    (root / "docs").mkdir()
    first_record = None
    for i, shard in enumerate(docs_shards):
        with gzip.open(shard, "rt", encoding="utf-8") as fh:
            lines = [next(fh) for _ in range(DOCS_PER_SHARD)]
        first_record = first_record or lines[0]
        if i == 1:
            lines.append(first_record)  # the planted exact duplicate
        with gzip.open(root / "docs" / f"docs-{i:05d}.jsonl.gz", "wt", encoding="utf-8") as fh:
            fh.writelines(lines)
    (root / "code").mkdir()
    shutil.copy(sorted((EXAMPLES / "corpora" / "code").glob("*.parquet"))[0], root / "code")
    (root / "fortunes").mkdir()
    shutil.copy(sorted((EXAMPLES / "corpora" / "fortunes").glob("*.jsonl.zst"))[0], root / "fortunes")
    sources = root / "sources.toml"
    sources.write_text(
        """
[[source]]
name = "web"
format = "html-dir"
paths = ["web/*"]
tags = ["web"]

[[source]]
name = "docs"
format = "jsonl.gz"
paths = ["docs/*.jsonl.gz"]
id_field = "id"
filters = []

[[source]]
name = "code"
format = "parquet"
paths = ["code/*.parquet"]
text_field = "content"
id_field = "path"
filters = []

[[source]]
name = "fortunes"
format = "jsonl.zst"
paths = ["fortunes/*.jsonl.zst"]
""" + FORTUNES_FILTERS + "\n",
        encoding="utf-8",
    )
    return sources


@pytest.fixture(scope="session")
def slice_sources(tmp_path_factory) -> Path:
    return write_slice(tmp_path_factory.mktemp("slice"))


@pytest.fixture(scope="session")
def slice_tokenizer(tmp_path_factory, slice_sources) -> Path:
    out = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    run_loom("tokenizer", "train", "--sources", slice_sources, "--vocab-size", 2000, "--output", out)
    return out


@pytest.fixture(scope="session")
def bundled_quality_model(tmp_path_factory):
    """A quality model trained on the bundled corpora: docs and code against the first fortunes shard."""
    out = tmp_path_factory.mktemp("quality") / "quality.bin"
    result = run_loom("quality", "train", "--sources", EXAMPLES / "sources.toml", "--positive", "docs,code",
                      "--negative", EXAMPLES / "corpora" / "fortunes" / "fortunes-00000.jsonl.zst", "--output", out)
    return out, result


@pytest.fixture(scope="session")
def curated_slice(tmp_path_factory, slice_sources, slice_tokenizer):
    """One `loom curate` of the slice on a LocalCluster with 2 worker processes, into a workspace whose path holds a
    quote, spaces and non-ASCII letters (every path Loom builds SQL or files from must take them)."""
    workspace = tmp_path_factory.mktemp("ws") / "it's a wörk space"
    result = run_loom("--workspace", workspace, "curate", "--sources", slice_sources, "--tokenizer", slice_tokenizer,
                      "--workers", 2)
    return workspace, result


GOOD_SPEC = """seq_len = 64
global_batch = 8
total_tokens = 60_000
[weights]
web = 0.4
docs = 0.3
code = 0.3
[midtrain]
docs = 0.5
"web:lang=de" = 0.5
"""  # a mixture of the curated slice that compiles: both phases, a source, a slice


def write_spec(ws: Path, name: str, body: str) -> Path:
    """The workspace's mixtures/NAME.toml: `body` after its name line."""
    (ws / "mixtures").mkdir(exist_ok=True)
    spec = ws / "mixtures" / f"{name}.toml"
    spec.write_text(f'name = "{name}"\n{body}')
    return spec


TINY_MODEL = ["--d-model", 32, "--n-heads", 2, "--n-layers", 2]  # a model that trains a step in well under a second


def training_spec(steps: int) -> str:
    """A mixture of the curated slice for training tests: 8 sequences of 32 tokens a step, both phases."""
    return f"""seq_len = 32
global_batch = 8
steps = {steps}
[weights]
web = 0.3
docs = 0.3
code = 0.2
fortunes = 0.2
[midtrain]
docs = 0.6
code = 0.4
"""


TOY_LADDER = """# three tiny rungs, 24 to 60 steps of 8 x 32 tokens (a toy ladder; a toy search's proxies and confirm runs)
[[rung]]
d_model = 16
n_layers = 1
n_heads = 2
tokens = 6_144
[[rung]]
d_model = 24
n_layers = 1
n_heads = 2
tokens = 10_240
[[rung]]
d_model = 32
n_layers = 2
n_heads = 2
tokens = 15_360
[target]
d_model = 64
n_layers = 2
n_heads = 2
tokens = 61_440
[lr]
base = 1e-2
base_width = 32
[fit]
l_inf = 0.0
[train]
eval_every = 5
checkpoint_every = 5
report_every = 5
"""


def as_in_a_terminal() -> None:
    """SIGINT handled as a terminal's foreground job gets it: a test run started in the background by a
    non-interactive shell has it ignored, and a child would inherit that and never see Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def on_two_gloo_ranks(check, tmp_path: Path) -> None:
    """Runs `check(ranks)` in two spawned processes joined in a real gloo group; `check` must be a module-level
    function (the processes import it) and raises on failure."""
    import torch.multiprocessing as mp

    mp.spawn(_gloo_rank, args=(2, str(tmp_path / "store"), check), nprocs=2, join=True)


def _gloo_rank(rank: int, world_size: int, store: str, check) -> None:
    import torch
    import torch.distributed as dist

    from trainer.distributed import Ranks, exit_rank, teardown

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    try:
        check(Ranks(rank, world_size, rank, torch.device("cpu")))
    finally:
        teardown()
    exit_rank(0)  # the checks passed; see exit_rank for why not a normal exit


def copy_curated(curated_slice, slice_tokenizer, destination: Path) -> Path:
    """A workspace of its own with the curated slice and its tokenizer in place, for tests that change it."""
    shutil.copytree(curated_slice[0], destination)
    (destination / "models").mkdir(exist_ok=True)
    shutil.copy(slice_tokenizer, destination / "models" / "tokenizer.json")
    return destination


# ---- report pages opened in a real headless Chromium (test_reports, test_ladder_report) ----

CHROMIUM = shutil.which("chromium")


def needs_chromium():
    """The mark of a module whose tests open pages in Debian's chromium: skipped without it, except in CI."""
    if CHROMIUM is None and os.environ.get("CI"):
        pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium", pytrace=False)
    return pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")


def chromium(url: str, tmp: Path, *args) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp / 'profile'}"]
    return subprocess.run([CHROMIUM, *flags, *args, url], capture_output=True, text=True, timeout=120)


class Dom(HTMLParser):
    """Titles, tables (cell data-values by table id), charts with their rects and shapes, images and scripts of a
    page, and the text of each <pre> with an id (where a test script writes its findings)."""

    def __init__(self, text: str):
        super().__init__()
        self.title, self.tables, self.charts, self.tags, self.shapes, self.pre = "", {}, {}, [], {}, {}
        self._in_title, self._table, self._row, self._chart, self._pre = False, None, None, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "title" and self._chart is None:
            self._in_title = True
        elif tag == "table" and attrs.get("id"):
            self._table = self.tables.setdefault(attrs["id"], [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag == "td" and self._row is not None:
            self._row.append(attrs.get("data-value"))
        elif tag == "svg" and "chart" in attrs.get("class", ""):
            self._chart = attrs["id"]
            self.charts[self._chart] = 0
        elif tag == "rect" and self._chart:
            self.charts[self._chart] += 1
        elif tag in ("polyline", "polygon", "circle", "line", "g") and self._chart:
            self.shapes.setdefault(self._chart, []).append((tag, attrs))
        elif tag == "pre" and attrs.get("id"):
            self._pre = attrs["id"]
            self.pre[self._pre] = ""

    def handle_endtag(self, tag):
        if tag == "pre":
            self._pre = None
        elif tag == "title":
            self._in_title = False
        elif tag == "table":
            self._table = None
        elif tag == "svg":
            self._chart = None

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._pre:
            self.pre[self._pre] += data


def only_the_inline_script(text: str, dom: Dom) -> None:
    """A report page's one script is the reports' own, written inline; nothing is loaded from elsewhere (no src,
    no link), in the page as written (`text`) or as the browser built it (`dom`)."""
    from reports.html import SCRIPT

    assert text.count("<script") == 1 and f"<script>{SCRIPT}</script>" in text
    assert [attrs for tag, attrs in dom.tags if tag == "script"] == [{}]
    assert not [(tag, attrs) for tag, attrs in dom.tags if tag in ("link", "img", "iframe") or "src" in attrs]


def open_page(path: Path, tmp: Path) -> tuple[Dom, str]:
    result = chromium(path.as_uri(), tmp, "--dump-dom")
    assert result.returncode == 0, result.stderr
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    return Dom(result.stdout), "\n".join(console)


def run_in_page(path: Path, tmp: Path, script: str) -> tuple[Dom, str]:
    """Opens a copy of the page at `path` with `script` run last in its body, after the page's own; the DOM is
    dumped once scripts have run, so events the script dispatches (synchronously) have had their effect. The
    script reports what it saw by writing into the page, e.g. JSON in a <pre id="test-result">."""
    text = path.read_text(encoding="utf-8")
    end = text.rindex("</body>")
    copy = tmp / f"scripted-{path.name}"
    copy.write_text(f"{text[:end]}<script>{script}</script>\n{text[end:]}", encoding="utf-8")
    return open_page(copy, tmp)


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

