"""Loom's whole curate job as the end-to-end benchmarks (curate_vs_datatrove.py, scale.py) run it: a web-like corpus
written as jsonl.gz shards, a workspace with its own sources.toml and tokenizer, the job on a LocalCluster,
each stage timed through `curate`'s progress callback."""

import argparse
import gzip
import json
import os
import random
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository first: Loom runs from this checkout

EXACT_FRACTION = 0.1  # of the documents are exact copies of others, for the exact-dedup stage to find


def web_like_corpus(n_docs: int, seed: int, real_first: bool = True) -> list[str]:
    """dedup.py's corpus (every bundled document unless not `real_first`, then mosaics of real passages; 40%
    of the documents planted near duplicates), with EXACT_FRACTION of them exact copies of others, shuffled."""
    from dedup import build_corpus

    n_copies = int(n_docs * EXACT_FRACTION)
    texts, _ = build_corpus(n_docs - n_copies, seed, real_first)
    rng = random.Random(seed)
    texts = texts + [texts[rng.randrange(len(texts))] for _ in range(n_copies)]
    rng.shuffle(texts)
    return texts


def write_jsonl_shards(texts: list[str], n_shards: int, out: Path) -> list[Path]:
    """Document i goes to shard i % n_shards as {"id": "doc-<i>", "text": ...}, in a fresh folder `out`."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    paths = [out / f"part-{s:05d}.jsonl.gz" for s in range(n_shards)]
    for s, path in enumerate(paths):
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as f:
            for i in range(s, len(texts), n_shards):
                f.write(json.dumps({"id": f"doc-{i:08d}", "text": texts[i]}, ensure_ascii=False) + "\n")
    return paths


def loom_workspace(ws: Path, shards_dir: Path, source_options: str, dedup: str, tokenizer: Path) -> Path:
    """A fresh workspace whose sources.toml has one jsonl.gz source over `shards_dir`."""
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    (ws / "sources.toml").write_text(f"""
[[source]]
name = "bench"
format = "jsonl.gz"
paths = ["{shards_dir}/*.jsonl.gz"]
id_field = "id"
{source_options}

[dedup]
{dedup}
""", encoding="utf-8")
    from loom.workspace import Workspace

    target = Workspace(ws).tokenizer
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(tokenizer.read_bytes())
    return ws


def bench_tokenizer(texts: list[str], out: Path) -> Path:
    """Byte-level BPE, vocab 8,192, trained on the first 3,000 documents: the same file for every tool."""
    from curation.tokenizer import train_tokenizer

    train_tokenizer(texts[:3000], out)
    return out


class StageClock:
    """`curate`'s progress callback, which the job calls as each stage starts: a stage's time is the gap to
    the next stage's start. `on_stage(name)` runs first, so that it can read what the stage before left."""

    def __init__(self, on_stage=None):
        self.on_stage = on_stage
        self.starts: dict[str, float] = {}

    def __call__(self, stage: str, total: int):
        if self.on_stage:
            self.on_stage(stage)
        self.starts[stage] = time.perf_counter()
        return lambda n=1: None

    def stages(self, end: float) -> dict[str, float]:
        names = list(self.starts)
        stamps = [self.starts[n] for n in names] + [end]
        return {name: stamps[i + 1] - stamps[i] for i, name in enumerate(names)}


def run_loom(ws: Path, workers: int, on_stage=None, on_start=None) -> dict:
    """The job as `loom curate` runs it, cluster start included: total seconds, cluster start-up, stages,
    and the source's funnel summary (docs_in, filtered, duplicate, kept, tokens ...)."""
    from curation.config import load_config
    from loom.workspace import Workspace
    from curation.job import plan_job
    from curation.run import curate, dask_client

    layout = Workspace(ws)
    begin = time.perf_counter()
    shards, ctx = plan_job(load_config(ws / "sources.toml"), layout, layout.tokenizer)
    with dask_client(workers=workers, on_start=on_start) as client:
        started = time.perf_counter()
        clock = StageClock(on_stage and (lambda stage: on_stage(client, stage)))
        (summary,) = curate(shards, ctx, client, clock)
        end = time.perf_counter()
        if on_stage:
            on_stage(client, "end")
    return {"total": end - begin, "cluster_start": started - begin, "stages": clock.stages(end), "summary": summary}


def machine_load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def add_run_arguments(parser: argparse.ArgumentParser, docs: int, shards: int, per: str = "") -> None:
    """The options every end-to-end benchmark takes; `per` says what --docs and --shards count ("at 1x")."""
    parser.add_argument("--docs", type=int, default=docs, help=f"documents{per}")
    parser.add_argument("--shards", type=int, default=shards, help=f"shards{per}")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder, removed after")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")


@contextmanager
def bench_workdir(args: argparse.Namespace, name: str):
    """--workdir, or a temporary folder removed afterwards unless --keep."""
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"loom-bench-{name}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"workdir {workdir}; load average before: {machine_load()}", flush=True)
    try:
        yield workdir
    finally:
        if args.workdir is None and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
