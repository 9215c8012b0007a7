"""A wildcard key's cost: compiling a mixture of 120 cells written as one key (`web:domain=*,quality_bucket=*`)
against the same 120 cells written out as slices.

A synthetic manifest of one source (24 domains x 5 quality buckets, 4,000-12,000 tokens a document) stands in for
a large curated crawl. Prints the expansion's own time, both compile times and, last, their ratio: ~1.0 means the
expansion adds nothing to a compile of as many components (which the per-component queries dominate).

    python bench/cells.py [--docs 1000000]
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
from mixtures.cells import expand
from mixtures.heldout import hold_out
from mixtures.manifest import documents
from mixtures.spec import parse_spec

DOMAINS, BUCKETS = 24, 5
SOURCES = {"web": {"tags": [], "format": "jsonl"}}


def synthetic_workspace(root: Path, n_docs: int) -> Workspace:
    ws = Workspace(root)
    gen = ws.published()  # no published.json: the workspace's own manifest/ (generation "")
    (gen.manifest / "documents").mkdir(parents=True)
    rng = np.random.default_rng(0)
    shard = rng.integers(0, 64, n_docs)
    pq.write_table(pa.table({
        "id": [f"{i:032x}" for i in range(n_docs)], "source": ["web"] * n_docs,
        "shard": [f"curated/web/part-{k:05d}.parquet" for k in shard], "row": np.arange(n_docs),
        "lang": ["en"] * n_docs, "n_tokens": rng.integers(4_000, 12_000, n_docs),
        "quality_bucket": rng.integers(0, BUCKETS, n_docs).astype(np.int16),
        "domain": rng.integers(0, DOMAINS, n_docs).astype(np.int32),
    }), gen.manifest / "documents" / "part-00000.parquet")
    pq.write_table(pa.table({"path": [f"p{i}" for i in range(64)], "fingerprint": [f"f{i}" for i in range(64)]}),
                   gen.manifest_table("shards"))
    ws.models.mkdir()
    tokenizer = ws.models / "tokenizer.json"
    train_tokenizer(["a small tokenizer for the benchmark"] * 20, tokenizer, vocab_size=300)
    gen.curation_info.write_text(json.dumps({
        "tokenizer": str(tokenizer), "tokenizer_fingerprint": tokenizer_fingerprint(tokenizer), "sources": SOURCES,
        "domains": {"k": DOMAINS, "sources": ["web"], "names": {"3": "math"}, "model_digest": "bench"}}))
    return ws


def mixture(name: str, weights: dict) -> object:
    return parse_spec({"name": name, "seq_len": 512, "global_batch": 256, "steps": 10_000, "weights": weights,
                       "midtrain": weights}, "bench")


def timed_compile(ws: Workspace, spec, root: Path) -> float:
    started = time.perf_counter()
    compile_mixture(spec, ws, root / "mixtures" / spec.name)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = synthetic_workspace(Path(tmp), args.docs)
        wildcard = mixture("wildcard", {"web:domain=*,quality_bucket=*": 1.0})
        con = documents(ws.published())
        hold_out(con, wildcard, ["web"])
        started = time.perf_counter()
        expansion = expand(wildcard, con, {"3": "math"}, SOURCES)
        expand_s = time.perf_counter() - started
        explicit = mixture("explicit", dict(expansion.spec.phases[0].weights))
        cells = len(explicit.phases[0].weights)
        wildcard_s = timed_compile(ws, wildcard, Path(tmp))
        explicit_s = timed_compile(ws, explicit, Path(tmp))
        print(f"{args.docs:,} documents, {cells} cells: expansion {expand_s:.2f}s; compile with the wildcard "
              f"{wildcard_s:.2f}s, with the {cells} slices written out {explicit_s:.2f}s")
        print(f"ratio wildcard/explicit compile time: {wildcard_s / explicit_s:.2f}")


if __name__ == "__main__":
    main()
