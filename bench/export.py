"""`loom mix export` throughput of each format against reading the same curated tokens raw, side by side.

Export: `mixtures.export.plan_export` + `run_export` (what `loom mix export` runs, without the progress bar) of a
compiled mixture into a fresh folder per format, timed from the first chunk to export.json; its tokens are the
mixture's (every step's global batch of seq_len + 1 tokens, epochs repeated as the schedule says).
Raw: every curated part of the published generation read with pyarrow (`input_ids` only) and flattened to one
numpy array of token ids: the fastest a reader of those Parquet files gets the tokens, with no order to follow.
Each is run `--repeat` times, in rounds of raw and every format one after another (a change of load on a shared
machine then hits them all), and its best kept. Prints tokens/s of each and its ratio to raw's, the same of
CPU seconds (all threads; what the work costs whatever the neighbours take of the cores), and last the worst
format's wall ratio to raw (the target is >= 0.5x).

An export reads what raw reads (the row groups its chunks touch, each once: they are kept between chunks up to
256 MB, and read ahead on two threads) and writes it again, each chunk on a writer thread while the next is read:
Megatron and numpy append the tokens to a file, Parquet writes parts of plain int32 lists (mixtures/export/
parquet_file.py, ~1 ns a token; pyarrow's writer cost ~8 ns, as much as decoding the curated tokens). A schedule's
sequences are spread over all of their component, so an export's first chunk reads nearly every row group and the
chunks after it only copy; a one-chunk export has nothing to overlap with its reading.
Latest (Sat 5 Dec 2026, 2 cores, load average 0.7-1.2; wall ratio to raw, CPU ratio after the slash; best of 11
rounds, 7 for the larger workspace; in brackets the code before that day's work, 5dc97ff, same machine and hour):
  bundled corpora, `sample` (2.0M tokens), one chunk, raw 62M tokens/s:
    megatron 0.78x / 0.66x (0.66x), numpy 0.77x / 0.65x (0.72x), parquet 0.71-0.75x / 0.63x (0.51x; 0.31-0.54x
    over four runs of the morning)
  the same in 8 chunks (--chunk-steps 31): megatron 0.67x (0.56x), numpy 0.64x (0.58x), parquet 0.60x (0.44x)
  its curated parts rewritten in row groups of 8 rows (152 row groups; `pq.write_table(pq.read_table(part), part,
    row_group_size=8)` on a copy): one chunk megatron 0.56x, numpy 0.57x, parquet 0.54x; 8 chunks 0.37x, 0.37x,
    0.32x (0.38x, 0.36x, 0.30x): 1,216 row-group pieces copied a few sequences at a time, Python's cost per piece
  --web-pages 60000 (49.3M tokens curated, 47.6M exported in 6 chunks; raw 175-185M tokens/s: its parts' 7 row
    groups each are decoded on both cores): megatron 0.60x / 0.65x (0.40x), numpy 0.61x / 0.67x (0.41x), parquet
    0.57x / 0.64x (0.24x) on a workspace built beforehand; 0.52-0.54x in the same script just after the build

    python bench/export.py [--workspace WS] [--mixture sample] [--repeat 5] [--chunk-steps N] [--web-pages N]

Without --workspace it runs `loom quickstart` into a temporary one first (a few minutes, untimed); --web-pages N
builds a larger one instead (web_workspace).
"""

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository first: Loom runs from this checkout

from base.workspace import Workspace
from loom_job import bench_tokenizer, loom_workspace, quickstart_workspace, run_loom, write_jsonl_shards  # noqa: E402
from mixtures.export import FORMATS, plan_export, run_export
from web_corpus import web_corpus  # noqa: E402

WEB_SEQ_LEN, WEB_GLOBAL_BATCH = 1024, 32
WEB_SPEC = """name = "web"
seq_len = {seq_len}
global_batch = {global_batch}
steps = {steps}
seed = 0

[[phase]]
name = "pretrain"
fraction = 1.0
weights = {{ "bench" = 1.0 }}
"""


def export_seconds(ws: Workspace, mixture: str, fmt: str, chunk_steps: int | None) -> tuple[float, float, int]:
    out = ws.root / "exports" / "bench" / fmt
    shutil.rmtree(out, ignore_errors=True)
    plan = plan_export(ws, mixture, fmt, out=str(out), chunk_steps=chunk_steps)
    with timed() as seconds:
        run_export(plan)
    shutil.rmtree(out)
    return *seconds, plan.info["tokens"]


def web_workspace(pages: int, workdir: Path) -> tuple[Path, str]:
    """A larger workspace than quickstart's: `pages` pages of bench/web_corpus.py (60,000: 49M tokens) curated with
    no heuristic filters (the curation bench's limit run), and its mixture `web`, which reads 95% of their tokens
    once (seq_len 1024, global batch 32). Untimed: ~2 min for 60,000 pages, plus the corpus's first download."""
    texts = web_corpus(pages, seed=1234)
    write_jsonl_shards(texts, 16, workdir / "corpus")
    tokenizer = bench_tokenizer(texts, workdir / "tokenizer.json")
    ws = loom_workspace(workdir / "web", workdir / "corpus", 'min_lang_score = 0.65\nfilter_languages = ["*"]\n'
                        "filters = []", "enabled = false", tokenizer)
    tokens = run_loom(ws, workers=2)["summary"]["tokens"]
    (ws / "mixtures").mkdir(exist_ok=True)
    steps = int(0.95 * tokens / (WEB_GLOBAL_BATCH * (WEB_SEQ_LEN + 1)))
    (ws / "mixtures" / "web.toml").write_text(WEB_SPEC.format(seq_len=WEB_SEQ_LEN, global_batch=WEB_GLOBAL_BATCH,
                                                              steps=steps))
    subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), "mix", "build", "web"], check=True, cwd=REPO,
                   stdout=subprocess.DEVNULL)
    os.sync()  # the build's files on disk now, not written back while the exports' fsyncs wait
    return ws, "web"


def raw_seconds(ws: Workspace) -> tuple[float, float, int]:
    parts = sorted(ws.published().curated.glob("*/part-*.parquet"))
    tokens = 0
    with timed() as seconds:
        for part in parts:
            ids = pq.read_table(part, columns=["input_ids"])["input_ids"].combine_chunks()
            tokens += len(ids.flatten().to_numpy(zero_copy_only=False))
    return *seconds, tokens


@contextmanager
def timed():
    """Yields a list that holds, once the block is done, its wall seconds and the CPU seconds of all this process's
    threads: on a machine shared with busy neighbours the CPU time says what the work costs, the wall time what
    this process got of the cores."""
    seconds = []
    wall, cpu = time.perf_counter(), time.process_time()
    yield seconds
    seconds += [time.perf_counter() - wall, time.process_time() - cpu]


def best_of_rounds(measures: dict, repeat: int) -> dict[str, tuple[float, float, int]]:
    """Each measure's fastest run (wall seconds) and its least CPU seconds, over `repeat` rounds of every measure one
    after another: on a busy machine a change of load hits all of them, not one."""
    runs = {name: [] for name in measures}
    for _ in range(repeat):
        for name, measure in measures.items():
            runs[name].append(measure())
    return {name: (min(w for w, _, _ in found), min(c for _, c, _ in found), found[0][2])
            for name, found in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace")
    parser.add_argument("--mixture", default="sample")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunk-steps", type=int,
                        help="steps a chunk (default: the export's own, ~8M tokens); 31 cuts `sample` into 8 chunks")
    parser.add_argument("--web-pages", type=int, metavar="N",
                        help="bench a fresh workspace of N web-corpus pages and its mixture `web` (60000: 49M tokens)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.web_pages:  # built in a child process: built in this one, the exports ran 10-15% slower after it
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
                root, mixture = child.submit(web_workspace, args.web_pages, Path(tmp)).result()
        else:
            root, mixture = quickstart_workspace(args.workspace, Path(tmp)), args.mixture
        ws = Workspace(root)
        print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}; {os.cpu_count()} cores")
        measures = {"raw pyarrow input_ids": lambda: raw_seconds(ws)}
        measures |= {f"export {fmt}": (lambda fmt=fmt: export_seconds(ws, mixture, fmt, args.chunk_steps))
                     for fmt in FORMATS}
        fastest = best_of_rounds(measures, args.repeat)
    raw_s, raw_cpu, raw_tokens = fastest.pop("raw pyarrow input_ids")
    raw_rate, raw_cpu_rate = raw_tokens / raw_s, raw_tokens / raw_cpu
    print(f"{'reader':<22}{'tokens':>11}{'seconds':>9}{'tokens/s':>13}{'vs raw':>8}{'CPU s':>8}{'CPU vs raw':>12}")
    print(f"{'raw pyarrow input_ids':<22}{raw_tokens:>11,}{raw_s:>9.3f}{raw_rate:>13,.0f}{1:>7.2f}x{raw_cpu:>8.3f}"
          f"{1:>11.2f}x")
    ratios = {}
    for name, (seconds, cpu, tokens) in fastest.items():
        ratios[name] = tokens / seconds / raw_rate
        print(f"{name:<22}{tokens:>11,}{seconds:>9.3f}{tokens / seconds:>13,.0f}{ratios[name]:>7.2f}x{cpu:>8.3f}"
              f"{tokens / cpu / raw_cpu_rate:>11.2f}x")
    print(f"load average at end: {open('/proc/loadavg').read().split()[:3]}")
    worst = min(ratios, key=ratios.get)
    print(f"worst export / raw Parquet read: {ratios[worst]:.2f}x ({worst}; target >= 0.5x)")


if __name__ == "__main__":
    main()
