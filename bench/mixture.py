"""Mixture compile time and `batch(step)` latency for 10^5 and 10^6 steps.

A synthetic manifest (manifest/documents/ etc.: the compiler reads nothing else) of 2,000,000 documents of
4,000-12,000 tokens stands in for a large curated workspace. Prints compile seconds, batch(step) latency at
early and late steps, and, last, the ratio of late to early latency: ~1.0 means random access costs the same
at any step (O(batch), not O(step)).

    python bench/mixture.py [--docs 2000000]
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from base.workspace import Workspace
from curation.tokenizer import tokenizer_fingerprint, train_tokenizer
from mixtures import compile_mixture
from mixtures.schedule import Schedule
from mixtures.spec import parse_spec

SOURCES = {"web": ["web"], "docs": ["docs"], "code": ["code"], "books": ["books"]}


def synthetic_workspace(root: Path, n_docs: int) -> Workspace:
    layout = Workspace(root)
    (layout.manifest / "documents").mkdir(parents=True)
    rng = np.random.default_rng(0)
    names = list(SOURCES)
    source = np.array(names)[rng.integers(0, len(names), n_docs)]
    shard_index = rng.integers(0, 64, n_docs)
    pq.write_table(pa.table({
        "id": [f"{i:032x}" for i in range(n_docs)],
        "source": source,
        "shard": [f"curated/{s}/part-{k:05d}.parquet" for s, k in zip(source, shard_index)],
        "row": np.arange(n_docs), "lang": ["en"] * n_docs,
        "n_tokens": rng.integers(4_000, 12_000, n_docs), "quality_bucket": rng.integers(0, 5, n_docs).astype(np.int16),
    }), layout.manifest / "documents" / "part-00000.parquet")
    pq.write_table(pa.table({"path": [f"p{i}" for i in range(64)], "fingerprint": [f"f{i}" for i in range(64)]}),
                   layout.manifest / "shards.parquet")
    tokenizer = layout.models / "tokenizer.json"
    train_tokenizer(["a small tokenizer for the benchmark"] * 20, tokenizer, vocab_size=300)
    (layout.manifest / "curation.json").write_text(json.dumps({
        "tokenizer": str(tokenizer), "tokenizer_fingerprint": tokenizer_fingerprint(tokenizer),
        "sources": {name: {"tags": tags, "format": "jsonl"} for name, tags in SOURCES.items()},
    }))
    return layout


def latency(schedule: Schedule, steps: np.ndarray) -> float:
    started = time.perf_counter()
    for step in steps:
        schedule.batch(int(step))
    return (time.perf_counter() - started) / len(steps)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=2_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        layout = synthetic_workspace(Path(tmp), args.docs)
        print(f"synthetic manifest of {args.docs:,} documents in {time.perf_counter() - started:.1f}s")
        print(f"{'steps':>9} {'batch':>5} {'compile s':>9} {'batch(early) ms':>15} {'batch(late) ms':>14} {'late/early':>10}")
        ratios = []
        for steps in (100_000, 1_000_000):
            spec = parse_spec({"name": f"bench{steps}", "seq_len": 512, "global_batch": 64, "steps": steps,
                               "weights": {"web": 0.5, "docs": 0.2, "code": 0.2, "books": 0.1},
                               "midtrain": {"docs": 0.4, "code": 0.3, "web:quality_bucket>=3": 0.3}}, "bench")
            started = time.perf_counter()
            compile_mixture(spec, layout, Path(tmp) / "mixtures" / spec.name)
            compile_s = time.perf_counter() - started
            schedule = Schedule.load(Path(tmp) / "mixtures" / spec.name)
            rng = np.random.default_rng(1)
            latency(schedule, rng.integers(0, steps, 100))  # warm up: imports, caches
            early = latency(schedule, rng.integers(0, 1000, 300))
            late = latency(schedule, rng.integers(steps - 1000, steps, 300))
            ratios.append(late / early)
            print(f"{steps:>9,} {64:>5} {compile_s:>9.2f} {early * 1e3:>15.3f} {late * 1e3:>14.3f} {late / early:>10.2f}")
        print(f"ratio batch(step) latency late/early steps: {ratios[0]:.2f}x at 1e5 steps, {ratios[1]:.2f}x at 1e6 steps")


if __name__ == "__main__":
    main()
