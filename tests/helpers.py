"""What tests of every package import: the repository's paths, `loom` run as a user runs it (with every process's
stacks when it hangs), the bundled slice, mixture specs, a tiny model and a toy ladder, two real gloo ranks, and
what a session builds once for all its workers (built_once)."""

import fcntl
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
LOOM = [sys.executable, "-m", "loom"]
LOOM_SCRIPT = [str(Path(sys.executable).with_name("loom"))]  # the installed command, which adds no folder to sys.path
WEB_LANGUAGES = ("en-US", "de-DE", "ja-JP")
PAGES_PER_LANGUAGE = 6
DOCS_PER_SHARD = 40
# The slice's fortunes are not web text, so they get no filter unless they name them; tests count on all four.
FORTUNES_FILTERS = 'filters = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]'


def published(workspace: Path) -> Path:
    """The folder of a workspace's published generation: its curated/, manifest/ and quarantine/."""
    from base.workspace import Workspace

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


def built_once(tmp_path_factory, name: str, build) -> tuple[Path, subprocess.CompletedProcess | None]:
    """What `build(folder)` makes, (a path, the `loom` run that made it or None), built once for the whole test
    session: under pytest-xdist the first worker to ask builds it in the folder the workers share while the others
    wait, then read it (it takes the slice's curation off the second worker's time). The tests read what it holds
    and copy it to change it (copy_curated), so workers may share it."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the session's folder, above each worker's popen-gwN
    folder, record = shared / f"shared-{name}", shared / f"shared-{name}.json"
    with open(shared / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed on another worker
            folder.mkdir()
            path, result = build(folder)
            run = result and {"args": [str(a) for a in result.args], "returncode": result.returncode,
                              "stdout": result.stdout, "stderr": result.stderr}
            record.write_text(json.dumps({"path": str(path), "run": run}), encoding="utf-8")
    built = json.loads(record.read_text(encoding="utf-8"))
    return Path(built["path"]), built["run"] and subprocess.CompletedProcess(**built["run"])


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
license = "gpl-2.0+ OR cc-by-sa-3.0"  # two licences, spelt loosely: stored as SPDX spells them
origin = "debian:debian-handbook=11.20220922"

[[source]]
name = "docs"
format = "jsonl.gz"
paths = ["docs/*.jsonl.gz"]
id_field = "id"
filters = []
license = "PSF-2.0"
origin = "debian:python3.11-doc=3.11.2-6+deb12u9"
citation = "Python 3.11 documentation"

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


def curate_tiny(tmp_path: Path, tokenizer: Path, documents: int, tables: str) -> subprocess.CompletedProcess:
    """`loom curate` (one worker, exit status not checked) of a jsonl source `tiny` of `documents` short distinct
    documents, with more sources.toml `tables` (a [domains] table, say)."""
    (tmp_path / "tiny.jsonl").write_text("".join(f'{{"text": "document number {i} about topic {i}"}}\n'
                                                 for i in range(documents)))
    sources = tmp_path / "sources.toml"
    sources.write_text('[[source]]\nname = "tiny"\nformat = "jsonl"\npaths = ["tiny.jsonl"]\nfilters = []\n\n' + tables)
    return run_loom("-w", tmp_path / "ws", "curate", "--sources", sources, "--tokenizer", tokenizer,
                    "--workers", 1, check=False)


def write_spec(ws: Path, name: str, body: str) -> Path:
    """The workspace's mixtures/NAME.toml: `body` after its name line."""
    (ws / "mixtures").mkdir(exist_ok=True)
    spec = ws / "mixtures" / f"{name}.toml"
    spec.write_text(f'name = "{name}"\n{body}')
    return spec


# the tests' quality model keeps this many rows when quantized: fastText's quantization of the default 100,000 took
# 18 of the fixture's 21 s, 20,000 take 6 and validate as well (the default is quickstart's, a slow test's)
QUALITY_TEST_CUTOFF = 20_000

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


class Interrupt:
    """A log hook that stops training (or a reproduction) (as Ctrl-C does) at the first line that starts with `at`."""

    def __init__(self, at: str):
        self.at, self.lines = at, []

    def __call__(self, line: str):
        self.lines.append(line)
        if self.at and line.startswith(self.at):
            self.at = None
            raise KeyboardInterrupt
