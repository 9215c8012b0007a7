"""Cost as the corpus grows: Loom's whole curate job at 1x, 2x, 4x and 8x the corpus.

    python bench/scale.py [--docs 6000] [--shards 2] [--sizes 1,2,4,8] [--workers 2] [--seed 1234]
                          [--workdir DIR] [--keep]

Each size k is its own corpus of k x --docs documents in k x --shards jsonl.gz shards, so that a shard holds
the same number of documents at every size, as in any sharded corpus that grows. Every original is a mosaic
of real passages (no bundled document verbatim, so every size has the same make-up), 40% of the documents
are planted near duplicates and 10% exact copies (bench/loom_job.py). The job is the default one: language
ID, the four datatrove filters on English, quality buckets (no model here), exact dedup, MinHash dedup,
tokenizing; on a LocalCluster of --workers single-threaded processes, one tokenizer for all sizes.

Memory comes from the workers: as each stage starts, every worker collects garbage, hands freed memory back
to the OS (glibc malloc_trim, Arrow's pool) and resets its peak resident set (Linux /proc/self/clear_refs);
as the next starts, it reports that peak (VmHWM). The client's own peak is shown for minhash_dedup, whose
union-find runs there. Prints, per size, the time of each stage and its peak worker memory, then the time
ratio per doubling and where the curve bends.
"""

import argparse
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository first: Loom runs from this checkout

from loom_job import (add_run_arguments, bench_tokenizer, bench_workdir, loom_workspace, machine_load,  # noqa: E402
                      run_loom, web_like_corpus, write_jsonl_shards)

MAP_STAGES = ("prepare", "minhash", "tokenize")
TIME_TARGET = 2.1  # at most this much more time per doubling
MEMORY_TARGET = 0.10  # map stages' peak worker memory within this fraction across sizes


def peak_and_reset() -> tuple[float, float]:
    """This process's peak resident MB since the last call, and what it holds once freed memory is handed
    back; the peak starts again from there."""
    import ctypes
    import gc

    import pyarrow as pa

    with open("/proc/self/status") as status:
        peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    gc.collect()
    pa.default_memory_pool().release_unused()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    with open("/proc/self/status") as status:
        held_kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return peak_kb / 1024, held_kb / 1024


class StageMemory:
    """`run_loom`'s on_stage hook: each stage's peak per worker, and how far above what the worker held as
    the stage started (the stage's own working memory); the client's peak."""

    def __init__(self):
        self.current: str | None = None
        self.held: dict[str, float] = {}
        self.peak: dict[str, float] = {}  # the largest worker's
        self.working: dict[str, float] = {}  # the largest over workers of peak - held at the start
        self.client: dict[str, float] = {}

    def __call__(self, client, stage: str) -> None:
        workers = client.run(peak_and_reset)
        client_peak, _ = peak_and_reset()
        if self.current:
            self.peak[self.current] = max(peak for peak, _ in workers.values())
            self.working[self.current] = max(peak - self.held.get(w, peak) for w, (peak, _) in workers.items())
            self.client[self.current] = client_peak
        self.held = {w: held for w, (_, held) in workers.items()}
        self.current = stage


def run_size(workdir: Path, k: int, args, tokenizer: Path) -> dict:
    n_docs, n_shards = k * args.docs, k * args.shards
    texts = web_like_corpus(n_docs, args.seed + k, real_first=False)
    shards_dir = workdir / f"corpus-{k}x"
    write_jsonl_shards(texts, n_shards, shards_dir)
    ws = workdir / f"loom-{k}x"
    loom_workspace(ws, shards_dir, "", "", tokenizer)
    memory = StageMemory()
    result = run_loom(ws, args.workers, on_stage=memory)
    shutil.rmtree(shards_dir)
    shutil.rmtree(ws)
    return {**result, "k": k, "docs": n_docs, "shards": n_shards, "mb": sum(len(t.encode()) for t in texts) / 1e6,
            "worker_mb": memory.peak, "working_mb": memory.working, "client_mb": memory.client}


def report(results: list[dict]) -> None:
    stages = list(results[0]["stages"])
    print()
    print(f"{'size':>5} {'docs':>8} {'shards':>6} {'MB':>6} {'seconds':>8} {'x prev':>7}  "
          + " ".join(f"{s[:13]:>13}" for s in stages))
    for prev, r in zip([None] + results, results):
        ratio = f"{r['total'] / prev['total']:.2f}x" if prev else ""
        print(f"{str(r['k']) + 'x':>5} {r['docs']:>8,} {r['shards']:>6} {r['mb']:>6.1f} {r['total']:>8.1f} {ratio:>7}  "
              + " ".join(f"{r['stages'][s]:>12.1f}s" for s in stages))
    print("peak resident MB of the largest worker, by stage (in brackets: above what it held as the stage "
          "started); the client's peak for minhash_dedup:")
    print(f"{'':>5} " + " ".join(f"{s[:13]:>13}" for s in stages) + f" {'client':>7}")
    for r in results:
        print(f"{str(r['k']) + 'x':>5} " + " ".join(f"{r['worker_mb'][s]:>6.0f} [{r['working_mb'][s]:>4.0f}]" for s in stages)
              + f" {r['client_mb']['minhash_dedup']:>7.0f}")
    print("time ratio per doubling, by stage:")
    doublings = [(a, b) for a, b in zip(results, results[1:]) if b["k"] == 2 * a["k"]]
    for a, b in doublings:
        print(f"  {a['k']}x -> {b['k']}x: total {b['total'] / a['total']:.2f}x; "
              + ", ".join(f"{s} {b['stages'][s] / max(a['stages'][s], 1e-3):.2f}x" for s in stages if a['stages'][s] > 0.5))
    if doublings:
        worst = max(doublings, key=lambda ab: ab[1]["total"] / ab[0]["total"])
        a, b = worst
        # Stages under a tenth of the time move by noise; of the others, the one that grew fastest.
        big = [s for s in stages if b["stages"][s] >= 0.1 * b["total"]] or list(stages)
        stage = max(big, key=lambda s: b["stages"][s] / a["stages"][s])
        print(f"the curve bends most at {a['k']}x -> {b['k']}x ({b['total'] / a['total']:.2f}x): {stage}, "
              f"{b['stages'][stage] / b['total']:.0%} of the time there, grew {b['stages'][stage] / a['stages'][stage]:.2f}x")
    spread = {s: max(r["worker_mb"][s] for r in results) / min(r["worker_mb"][s] for r in results) - 1
              for s in MAP_STAGES}
    dedup = [r["working_mb"]["minhash_dedup"] for r in results]
    growth = dedup[-1] / dedup[0]
    size_growth = results[-1]["k"] / results[0]["k"]
    print("map stages' peak worker memory, largest over smallest size: "
          + ", ".join(f"{s} +{v:.1%}" for s, v in spread.items())
          + f" (target within {MEMORY_TARGET:.0%}); minhash_dedup's working memory per worker grew {growth:.2f}x for "
          f"{size_growth:.0f}x the documents")
    worst_ratio = max((b["total"] / a["total"] for a, b in doublings), default=float("nan"))
    print(f"ratio per doubling: worst {worst_ratio:.2f}x (target <= {TIME_TARGET}x); map-stage memory spread "
          f"{max(spread.values()):.1%} (target <= {MEMORY_TARGET:.0%}); dedup memory {growth:.2f}x for "
          f"{size_growth:.0f}x the corpus")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, docs=6000, shards=2, per=" at 1x")
    parser.add_argument("--sizes", default="1,2,4,8")
    args = parser.parse_args()
    sizes = [int(k) for k in args.sizes.split(",")]

    start = time.perf_counter()
    with bench_workdir(args, "scale") as workdir:
        tokenizer = bench_tokenizer(web_like_corpus(3000, args.seed, real_first=False), workdir / "tokenizer.json")
        results = []
        for k in sizes:
            result = run_size(workdir, k, args, tokenizer)
            print(f"{k}x: {result['docs']:,} documents, {result['mb']:.1f} MB, {result['total']:.1f}s; kept "
                  f"{result['summary']['kept']:,}; load average {machine_load()}", flush=True)
            results.append(result)
        report(results)
        print(f"load average after: {machine_load()}; this run took {time.perf_counter() - start:.0f}s")


if __name__ == "__main__":
    main()
