"""MinHash near-duplicate dedup: Loom's global MinHash stages against datatrove's 4-stage MinHash pipeline.

    python bench/dedup.py [--docs 200000] [--workers 2] [--shards 8] [--workdir DIR] [--seed 1234]

1. Builds a corpus from the bundled real corpora (examples/corpora, read the way curation reads them): every
   real document, then "mosaics" of 1-3 windows of 30-200 words cut from random places of random real
   documents, until (1 - DUP_FRACTION) of --docs are written; the rest are planted near-duplicates of those
   originals with word-level edits (deletions, substitutions, insertions) at a rate drawn from RATES, at least
   one edit each. No two documents have the same normalized text (Loom removes exact copies before MinHash;
   datatrove would not). Shuffled, written as --shards jsonl.gz files of {"id", "text"} lines.
2. Loom: a sources.toml with one jsonl.gz source, `filters = []`, no quality model, the default [dedup]
   (5-grams, 20 bands x 5 rows, seed 1, true-Jaccard threshold 0.8), run through `curation.run.curate` on a LocalCluster of
   --workers single-threaded processes. Each stage is timed through `curate`'s progress callback, which the job
   calls as each stage starts: a stage's time is the gap to the next stage's start. Loom's figure is the
   `minhash` (signatures + band keys per shard) plus `minhash_dedup` (shuffle, pairs, verification, clusters)
   time; reading, language ID, exact dedup and tokenizing are timed and shown but not counted.
3. datatrove: MinhashDedupSignature -> MinhashDedupBuckets -> MinhashDedupCluster -> MinhashDedupFilter with
   its usual MinhashConfig (5-grams, 14 buckets x 8 hashes, seed 1; no verification), each stage a LocalPipelineExecutor (tasks: shards, 14 (one per band), 1, shards;
   --workers processes), reading the same jsonl.gz with JsonlReader and writing kept docs with JsonlWriter.
   Each stage is timed wall-clock around `executor.run()`.
4. Compares the removed sets by jsonl id, the sets of documents each tool put in a cluster, recall of the
   planted pairs by edit rate, and the true 5-gram Jaccard of the pairs datatrove's buckets emitted. The goal
   line: recall of planted pairs with true Jaccard in [0.8, 0.9) (goal >= 0.98) and planted pairs below 0.5
   merged (goal 0), with Loom's candidate and verified pair counts and its MinHash time.

5. dup_count (issue 38): for the planted groups (an original and its planted copies), how many have one kept
   member and it carries the group's size as its dup_count (minhash_dedup's dup_counts table): over every group,
   and over the groups of the copies with true Jaccard >= 0.8 to their original (what the threshold promises;
   a copy edited further is its own document, dup_count 1). The corpus has no exact copies (above), so this
   checks the near-duplicate half of the count; tests/curation/test_dedup.py checks both on planted texts.

The last line is the ratio: Loom docs/s over datatrove docs/s, and the agreement of the removed sets.
"""

import os
import sys

import argparse
import gzip
import json
import random
import shutil
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dedup_corpus import RATES, build_corpus, record_offsets, write_shards  # noqa: E402
from dedup_groups import planted_groups_report  # noqa: E402
from loom_job import StageClock, add_run_arguments, bench_workdir, loom_workspace, machine_load  # noqa: E402

THRESHOLD = 0.8


# ---- 2. Loom ---------------------------------------------------------------------------------------------


class StopBeforeTokenize(Exception):
    """Raised from the progress callback as the tokenize stage starts: the MinHash outputs are complete."""


def run_loom(workdir: Path, shards_dir: Path, workers: int, texts: list[str], full_job: bool) -> dict:
    from base.workspace import Workspace
    from curation.config import DedupConfig, load_config
    from curation.job import plan_job
    from curation.run import curate, dask_client
    from curation.tokenizer import train_tokenizer

    tokenizer = workdir / "tokenizer-1000.json"
    train_tokenizer(texts[:3000], tokenizer, vocab_size=1000)
    ws = workdir / "loom"
    config = DedupConfig()
    loom_workspace(ws, shards_dir, "filters = []", f"ngram = 5\nbands = {config.bands}\nrows = {config.rows}\nseed = 1\n"
                   f"threshold = {THRESHOLD}", tokenizer)
    layout = Workspace(ws)
    shards, ctx = plan_job(load_config(ws / "sources.toml"), layout, layout.tokenizer)

    def stop_before_tokenize(stage: str):
        if stage == "tokenize" and not full_job:
            raise StopBeforeTokenize

    clock = StageClock(stop_before_tokenize)
    with dask_client(workers=workers) as client:
        begin = time.perf_counter()
        try:
            curate(shards, ctx, client, clock)
        except StopBeforeTokenize:
            pass
        end = time.perf_counter()
    stages = clock.stages(end)
    signed = sum(json.loads(p.read_text())["signatures"] for p in (layout.work / "minhash").glob("*/part-*.done"))
    return {"stages": stages, "total": end - begin, "workspace": ws, "signed": signed,
            "minhash_stats": json.loads((layout.work / "minhash_dedup" / "_done").read_text())}


def loom_results(ws: Path, texts: list[str], lines: list[list[int]], full_job: bool):
    """Removed doc indices and doc index -> cluster: from the manifest (the funnel's near_duplicate rows and
    dedup_clusters) after a full job, else from the minhash_dedup stage's own outputs, which the manifest
    copies. A funnel `record` is a line's byte offset in its file."""
    import pyarrow.parquet as pq
    from curation.stages.minhash_dedup import MINHASH_DEDUP

    lines = record_offsets([f"doc-{i:07d}" for i in range(len(texts))], texts, lines)
    from base.workspace import Workspace
    from curation.steps.normalize import document_id

    if not full_job:
        layout = Workspace(ws)
        removed = {lines[r["shard"]][r["record"]]
                   for r in pq.read_table(MINHASH_DEDUP.removed_path(layout), columns=["shard", "record"]).to_pylist()}
        clusters = {}
        for r in pq.read_table(MINHASH_DEDUP.clusters_folder(layout),
                               columns=["shard", "record", "member_id", "cluster_id"]).to_pylist():
            doc = lines[r["shard"]][r["record"]]
            assert r["member_id"] == document_id(texts[doc]), "cluster member does not match the input line"
            clusters[doc] = r["cluster_id"]
        return removed, clusters, None
    funnel = pq.read_table(ws / "manifest" / "funnel",
                           columns=["shard", "record", "doc_id", "fate", "reason"]).to_pylist()
    assert len(funnel) == len(texts), f"funnel has {len(funnel)} rows for {len(texts)} documents"
    fates = Counter((r["fate"], r["reason"]) for r in funnel)
    removed = set()
    for r in funnel:
        doc = lines[r["shard"]][r["record"]]
        assert r["doc_id"] == document_id(texts[doc]), "funnel record does not match the input line"
        if r["reason"] == "near_duplicate":
            removed.add(doc)
    by_content_id = {document_id(t): i for i, t in enumerate(texts)}
    clusters = {by_content_id[m["member_id"]]: m["cluster_id"]
                for m in pq.read_table(ws / "manifest" / "dedup_clusters.parquet",
                                       columns=["cluster_id", "member_id"]).to_pylist()}
    return removed, clusters, fates


# ---- 3. datatrove ----------------------------------------------------------------------------------------


@contextmanager
def stderr_to(path: Path):
    """datatrove's workers log every task to stderr; send it (and theirs, inherited) to a file."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "a") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def run_datatrove(workdir: Path, shards_dir: Path, workers: int, n_shards: int) -> dict:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                                  MinhashDedupFilter, MinhashDedupSignature)
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    base = workdir / "datatrove"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    config = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8, seed=1)

    def reader():
        return JsonlReader(str(shards_dir), glob_pattern="*.jsonl.gz", text_key="text", id_key="id")

    plan = [
        ("signature", [reader(), MinhashDedupSignature(output_folder=str(base / "signatures"), config=config,
                                                       language="en")], n_shards, workers),
        ("buckets", [MinhashDedupBuckets(input_folder=str(base / "signatures"), output_folder=str(base / "buckets"),
                                         config=config)], config.num_buckets, workers),
        ("cluster", [MinhashDedupCluster(input_folder=str(base / "buckets"), output_folder=str(base / "remove_ids"),
                                         config=config, save_cluster_id=True)], 1, 1),
        ("filter", [reader(), MinhashDedupFilter(input_folder=str(base / "remove_ids")),
                    JsonlWriter(str(base / "deduped"))], n_shards, workers),
    ]
    stages = {}
    with stderr_to(base / "datatrove.log"):
        for name, pipeline, tasks, n_workers in plan:
            executor = LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=min(n_workers, tasks),
                                             logging_dir=str(base / "logs" / name))
            start = time.perf_counter()
            executor.run()
            stages[name] = time.perf_counter() - start
    return {"stages": stages, "total": sum(stages.values()), "folder": base}


def _uints(path: Path, per_row: int) -> np.ndarray:
    if not path.exists():
        return np.empty((0, per_row), dtype=np.uint32)
    return np.frombuffer(path.read_bytes(), dtype="<u4").reshape(-1, per_row)


def datatrove_results(base: Path, lines: list[list[int]]):
    """Removed doc indices (.remove files), doc index -> cluster (.clusters), the bucket pairs (.dups) and
    the number of documents written by the filter. File id = rank = shard, doc id = line of that shard."""
    removed, clusters = set(), {}
    for shard, members in enumerate(lines):
        removed.update(members[i] for i in _uints(base / "remove_ids" / f"{shard:06d}.remove", 1)[:, 0])
        for doc, cluster in _uints(base / "remove_ids" / f"{shard:06d}.clusters", 2):
            clusters[members[doc]] = int(cluster)
    pairs = set()
    for dups in sorted((base / "buckets").glob("*.dups")):
        for f1, d1, f2, d2 in _uints(dups, 4):
            a, b = lines[f1][d1], lines[f2][d2]
            pairs.add((min(a, b), max(a, b)))
    written = 0
    for part in sorted((base / "deduped").glob("*.jsonl.gz")):
        with gzip.open(part, "rt", encoding="utf-8") as f:
            written += sum(1 for _ in f)
    return removed, clusters, pairs, written


# ---- 4. comparison ---------------------------------------------------------------------------------------


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def true_jaccard(x: str, y: str) -> float:
    from curation.minhash import shingles

    a, b = shingles(x, 5), shingles(y, 5)
    return len(a & b) / len(a | b)


def loom_only_report(loom: dict, texts: list[str], lines, planted, full_job: bool) -> None:
    removed, clusters, _ = loom_results(loom["workspace"], texts, lines, full_job)
    stats, seconds = loom["minhash_stats"], loom["stages"]["minhash"] + loom["stages"]["minhash_dedup"]
    found = np.array([o in clusters and clusters.get(c) == clusters[o] for o, c, _ in planted], dtype=bool)
    true_j = np.array([true_jaccard(texts[o], texts[c]) for o, c, _ in planted])
    print(f"Loom: {len(removed):,} removed, {len(clusters):,} in {len(set(clusters.values())):,} clusters")
    for lo, hi in ((0.9, 1.01), (0.8, 0.9), (0.7, 0.8), (0.5, 0.7), (0.0, 0.5)):
        sel = (true_j >= lo) & (true_j < hi)
        print(f"  planted pairs found with true Jaccard in [{lo:.1f}, {min(hi, 1.0):.1f}) [{sel.sum():,}]: {found[sel].mean():.3f}")
    band, low = (true_j >= 0.8) & (true_j < 0.9), true_j < 0.5
    print(f"goal: recall of planted pairs with true Jaccard in [0.8, 0.9): Loom {found[band].mean():.3f} (goal >= 0.98); "
          f"planted pairs below 0.5 merged: Loom {int(found[low].sum())} of {int(low.sum())} (goal 0); "
          f"{stats['candidate_pairs']:,} candidate pairs, {stats['verified_pairs']:,} verified, "
          f"{stats.get('rounds', '-')} component rounds, MinHash time {seconds:.1f}s "
          f"(signatures {loom['stages']['minhash']:.1f}s, dedup {loom['stages']['minhash_dedup']:.1f}s)")
    planted_groups_report(loom["workspace"], texts, lines, planted, removed, clusters, true_j, THRESHOLD)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, docs=200_000, shards=8)
    parser.add_argument("--full-job", action="store_true",
                        help="let Loom's job tokenize and write its manifest too (untimed), and read the results "
                             "from the manifest")
    parser.add_argument("--loom-only", action="store_true",
                        help="skip datatrove (its figures do not change with Loom's code): Loom's figures and the goal line")
    args = parser.parse_args()

    with bench_workdir(args, "dedup") as workdir:
        start = time.perf_counter()
        texts, planted = build_corpus(args.docs, args.seed)
        shards_dir = workdir / "corpus"
        shutil.rmtree(shards_dir, ignore_errors=True)
        ids, lines = write_shards(texts, args.shards, args.seed, shards_dir)
        n = len(texts)
        words = sum(len(t.split()) for t in texts)
        print(f"corpus: {n:,} documents ({len(planted):,} planted near-duplicates), {words / n:.0f} words and "
              f"{sum(map(len, texts)) / n:.0f} chars per document on average, {args.shards} shards; "
              f"built in {time.perf_counter() - start:.1f}s", flush=True)

        loom = run_loom(workdir, shards_dir, args.workers, texts, args.full_job)
        print("loom stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in loom["stages"].items()), flush=True)
        if args.loom_only:
            return loom_only_report(loom, texts, lines, planted, args.full_job)
        dt = run_datatrove(workdir, shards_dir, args.workers, args.shards)
        print("datatrove stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in dt["stages"].items()), flush=True)

        l_removed, l_clusters, l_fates = loom_results(loom["workspace"], texts, lines, args.full_job)
        d_removed, d_clusters, d_pairs, d_written = datatrove_results(dt["folder"], lines)
        assert d_written == n - len(d_removed), f"datatrove wrote {d_written}, expected {n - len(d_removed)}"
        assert loom["signed"] == n, f"Loom signed {loom['signed']} of {n} documents: some were removed before MinHash"
        if l_fates is not None:
            other = {k: v for k, v in l_fates.items() if k != ("kept", None) and k[1] != "near_duplicate"}
            assert not other, f"Loom's funnel has other removals: {other}"

        loom_time = loom["stages"]["minhash"] + loom["stages"]["minhash_dedup"]
        dt_time = dt["total"]
        dt_find = dt["stages"]["signature"] + dt["stages"]["buckets"] + dt["stages"]["cluster"]
        loom_rate, dt_rate, dt_find_rate = n / loom_time, n / dt_time, n / dt_find
        removed_j = jaccard({ids[i] for i in l_removed}, {ids[i] for i in d_removed})  # by jsonl id
        clustered_j = jaccard(set(l_clusters), set(d_clusters))
        stats = loom["minhash_stats"]

        print()
        print(f"{'':38} {'Loom':>12} {'datatrove':>12}")
        print(f"{'documents':38} {n:>12,} {n:>12,}")
        print(f"{'MinHash time (s)':38} {loom_time:>12.1f} {dt_time:>12.1f}")
        print(f"{'  signatures (s)':38} {loom['stages']['minhash']:>12.1f} {dt['stages']['signature']:>12.1f}")
        print(f"{'  buckets/pairs/verify/clusters (s)':38} {loom['stages']['minhash_dedup']:>12.1f} "
              f"{dt['stages']['buckets'] + dt['stages']['cluster']:>12.1f}")
        print(f"{'  filter + write kept docs (s)':38} {'(untimed)':>12} {dt['stages']['filter']:>12.1f}")
        print(f"{'documents/s':38} {loom_rate:>12,.0f} {dt_rate:>12,.0f}")
        print(f"{'documents/s without datatrove filter':38} {loom_rate:>12,.0f} {dt_find_rate:>12,.0f}")
        print(f"{'removed as near-duplicates':38} {len(l_removed):>12,} {len(d_removed):>12,}")
        print(f"{'documents in a cluster':38} {len(l_clusters):>12,} {len(d_clusters):>12,}")
        print(f"{'clusters':38} {len(set(l_clusters.values())):>12,} {len(set(d_clusters.values())):>12,}")
        print(f"{'candidate / verified pairs':38} {stats['candidate_pairs']:>6,}/{stats['verified_pairs']:<,} "
              f"{len(d_pairs):>12,}")
        l_found = [o in l_clusters and l_clusters.get(c) == l_clusters[o] for o, c, _ in planted]
        d_found = [o in d_clusters and d_clusters.get(c) == d_clusters[o] for o, c, _ in planted]
        true_j = np.array([true_jaccard(texts[o], texts[c]) for o, c, _ in planted])
        rates = np.array([r for _, _, r in planted])
        l_found, d_found = np.array(l_found, dtype=bool), np.array(d_found, dtype=bool)
        print("planted pairs found (both in one cluster), by edit rate [count, median true 5-gram Jaccard]:")
        for rate in RATES:
            sel = rates == rate
            if sel.any():
                print(f"  {f'rate {rate} [{sel.sum():,}, J {np.median(true_j[sel]):.2f}]':36} {l_found[sel].mean():>12.3f} "
                      f"{d_found[sel].mean():>12.3f}")
        print("planted pairs found, by true 5-gram Jaccard (Loom's shingles) [count]:")
        for lo, hi in ((0.9, 1.01), (0.8, 0.9), (0.7, 0.8), (0.5, 0.7), (0.0, 0.5)):
            sel = (true_j >= lo) & (true_j < hi)
            if sel.any():
                label = f"J in [{lo:.1f}, {min(hi, 1.0):.1f}{']' if hi > 1 else ')'} [{sel.sum():,}]"
                print(f"  {label:36} {l_found[sel].mean():>12.3f} {d_found[sel].mean():>12.3f}")
        goal_band = (true_j >= 0.8) & (true_j < 0.9)
        low = true_j < 0.5
        print(f"goal: recall of planted pairs with true Jaccard in [0.8, 0.9): Loom {l_found[goal_band].mean():.3f}, "
              f"datatrove {d_found[goal_band].mean():.3f} (goal >= 0.98); planted pairs below 0.5 merged: Loom "
              f"{int(l_found[low].sum())}, datatrove {int(d_found[low].sum())} of {int(low.sum())} (goal 0); Loom "
              f"{stats['candidate_pairs']:,} candidate pairs, {stats['verified_pairs']:,} verified, "
              f"{stats.get('rounds', '-')} component rounds, MinHash time {loom_time:.1f}s")
        planted_groups_report(loom["workspace"], texts, lines, planted, l_removed, l_clusters, true_j, THRESHOLD)
        print("agreement:")
        print(f"  removed-set Jaccard {removed_j:.3f} (both {len(l_removed & d_removed):,}, Loom only "
              f"{len(l_removed - d_removed):,}, datatrove only {len(d_removed - l_removed):,})")
        print(f"  clustered-set Jaccard {clustered_j:.3f} (both {len(set(l_clusters) & set(d_clusters)):,}, Loom only "
              f"{len(set(l_clusters) - set(d_clusters)):,}, datatrove only {len(set(d_clusters) - set(l_clusters)):,})")
        d_only = d_removed - l_removed
        print(f"  removed by datatrove only: {sum(d in l_clusters for d in d_only):,} in a Loom cluster (other "
              f"survivor chosen), {sum(d not in l_clusters for d in d_only):,} in none")
        l_only = l_removed - d_removed
        print(f"  removed by Loom only: {sum(d in d_clusters for d in l_only):,} in a datatrove cluster (other "
              f"survivor chosen), {sum(d not in d_clusters for d in l_only):,} in none")
        sample = random.Random(0).sample(sorted(d_pairs), min(3000, len(d_pairs)))
        js = np.array([true_jaccard(texts[a], texts[b]) for a, b in sample])
        edges = [0, 0.5, 0.7, 0.8, 1.01]
        hist = np.histogram(js, bins=edges)[0] / max(1, len(js))
        print(f"  datatrove bucket pairs by true 5-gram Jaccard (sample of {len(js)}): "
              + ", ".join(f"[{lo:.1f},{min(hi, 1):.1f}{')' if hi < 1 else ']'} {h:.1%}"
                          for lo, hi, h in zip(edges, edges[1:], hist)))
        print(f"load average after: {machine_load()}; this run took {time.perf_counter() - start:.0f}s")
        print(f"ratio loom/datatrove docs/s: {loom_rate / dt_rate:.2f}x ({loom_rate / dt_find_rate:.2f}x against "
              f"datatrove's first 3 stages); removed-set Jaccard {removed_j:.2f}; clustered-set Jaccard "
              f"{clustered_j:.2f}")


if __name__ == "__main__":
    main()
