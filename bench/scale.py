"""Cost as the corpus grows: Loom's whole curate job at 1x, 4x and 16x the corpus, memory per process and stage.

    python bench/scale.py [--docs 2000] [--shards 2] [--sizes 1,4,16] [--corpus prose|web] [--workers 2]
                          [--seed 1234] [--workdir DIR] [--keep] [--save FILE.json]
                          [--domains K [--domains-sample N]]
    python bench/scale.py --sources N [--docs 2000] [--pairs K] [--workers 2] [--save FILE.json]   # many small sources
    python bench/scale.py --report FILE.json     # the report of a saved run, without running it again

Each size k is its own corpus of k x --docs documents in k x --shards jsonl.gz shards, so that a shard holds
the same number of documents at every size, as in any sharded corpus that grows. The default corpus
(loom_job.prose_corpus) is clean English prose, ~99% of which passes the filters, so that the global stages
see most of the corpus; --corpus web is the mosaic corpus of earlier runs, of which the filters keep ~5%.
Both plant 40% near duplicates and 10% exact copies. The job is every default stage a crawl gets (the source
is tagged web: PII redaction, language ID and the four datatrove filters on English in `prepare`), decontamination
against one eval set (the Jargon File, examples/decontamination), quality buckets without a model, exact dedup,
MinHash dedup and tokenizing, on a LocalCluster of --workers single-threaded processes; `publish` (manifest and generation, built by one task per
shard on the workers after the stages) is timed as a stage of its own.

Memory and CPU come from every process separately. As each stage starts, the client and every worker (via
`client.run`) collect garbage, hand freed memory back to the OS (glibc malloc_trim, Arrow's pool) and reset
their peak resident set (Linux /proc/self/clear_refs); as the next starts, each reports that peak (VmHWM) and
the CPU seconds it spent. A global stage run as one task lands on one worker, one run on the client (whose
process also hosts the LocalCluster's scheduler) in the client's figure: both are caught. Prints the time of
each stage, each process's peak per stage, the time ratio per doubling (target <= 2.1x) and each process's
peak at the largest size over the smallest (target <= 1.15), PASS or FAIL with the bound in MB and why it
should hold, then the per-document figures a projection to 1B documents needs and that projection.

With --domains K every size adds `[domains] k = K` and `sample = --domains-sample` (default 1,000: below the
documents kept at 1x, so that the fitted sample, and with it the fitting task's memory, is the same at every
size, as a real corpus far larger than `sample` has it; at the stage's default of 20,000 the whole corpus would
be the sample here and that task's peak would grow with it). The `domains` stage then has its row in every
table, and each size's line gives its seconds and share of the curate time.

With --sources N (bench/many_sources.py) the sizes are not run: the --docs documents of the prose corpus are
curated as one source of one file and as N sources of a file each, filters off, each in a fresh process, and
the seconds of every stage are printed side by side with their ratio (issue 42: N = 300 of 5 documents within
2x of one source); --pairs K runs K such pairs alternately and prints each pair's ratio and the median pair's
stages.
"""

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository first: Loom runs from this checkout

from loom_job import (add_domains_argument, add_run_arguments, bench_tokenizer, bench_workdir,  # noqa: E402
                      domains_share, domains_table, loom_workspace, machine_load, prose_corpus, run_loom,
                      web_like_corpus, write_jsonl_shards)
from many_sources import report_sources, run_split, time_job  # noqa: E402

TIME_TARGET = 2.1  # at most this much more time per doubling of the corpus
PEAK_TARGET = 1.15  # every process's peak per stage at the largest size over the smallest
PROJECT_DOCS = 1_000_000_000
PROJECT_WORKERS = (100, 1000)
GLOBAL_STAGES = ("quality_select", "exact_dedup", "minhash_dedup", "domains", "publish")  # see every shard at once

# What a process holds at most during each stage, and so whether its peak can stay flat as the corpus grows.
HOLDS = {
    "prepare": "workers: the models (spaCy, lid.176, datatrove) + one shard's write batch and funnel rows; "
               "shard size is fixed, so flat",
    "decontaminate": "the client: the eval sets' Bloom filters (set by the eval sets, not the corpus); workers: the "
                     "filters and one shard's documents still in; flat",
    "quality_select": "workers: one shard's (record, quality) and its DDSketch; the merged sketch is KB, so flat",
    "exact_dedup": "shuffled by id hash: a partition is ~ a shard's (record, id), so flat",
    "minhash": "workers: one 1,000-document batch of one shard, signatures and band keys; flat",
    "minhash_dedup": "workers: shuffle partitions of max(4 MiB of prepared Parquet, a shard's) documents each, so "
                     "band rows and pairs of that many, and the shingle sets their pairs need from the shards they "
                     "name (never shuffled whole): meant to be flat, but the 1.2M-document run grew (bench/README.md); "
                     "the client holds counts only (pairs, changed labels per components round)",
    "domains": "workers: one shard's reservoir (ceil(sample / shards) texts) or one predict batch of 2,048 "
               "documents; the fitting task the merged sample, at most `sample` texts, and the model: set by "
               "`sample`, not the corpus, so flat (with --domains)",
    "tokenize": "workers: one shard's batches and the shard's removed records; flat",
    "publish": "workers: one task per shard or run of small shards (its funnel joined with its removals, read from "
               "the stages' by-shard tables; its curated part's rows), then the small tables in one task; the client "
               "holds counts only, so flat",
}
CLIENT_HOLDS = "the client also hosts the scheduler: task metadata grows with the number of shards"


def process_sample() -> tuple[float, float, float, float]:
    """This process's peak resident MB since the last call; what it holds once freed memory is handed back
    (the next peak starts from there); its CPU seconds before and after doing so (the collection is not the
    stage's)."""
    import ctypes
    import gc
    import resource

    import pyarrow as pa

    def status(field: str) -> float:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field)) / 1024

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    peak, cpu_before = status("VmHWM:"), cpu()
    gc.collect()
    pa.default_memory_pool().release_unused()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return peak, status("VmRSS:"), cpu_before, cpu()


def worker_sample(dask_worker) -> tuple[str, float, float, float, float]:
    return (f"worker {dask_worker.name}", *process_sample())


class StageMemory:
    """`run_loom`'s on_stage hook: per stage and process ("client", "worker 0", ...), its peak MB, its peak
    above what it held as the stage started, and the CPU seconds it spent."""

    def __init__(self):
        self.current: str | None = None
        self.held: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.stages: dict[str, dict[str, dict]] = {}

    def __call__(self, client, stage: str) -> None:
        samples = [s for s in client.run(worker_sample).values()] + [("client", *process_sample())]
        if self.current:
            self.stages[self.current] = {
                name: {"peak": peak, "working": peak - self.held.get(name, peak), "cpu": cpu - self.cpu.get(name, cpu)}
                for name, peak, _, cpu, _ in samples}
        self.held = {name: held for name, _, held, _, _ in samples}
        self.cpu = {name: cpu for name, _, _, _, cpu in samples}
        self.current = stage


def workspace_figures(ws: Path, summary: dict, corpus: Path) -> dict:
    """What each stage saw and the per-document sizes a projection needs, read from the finished workspace."""
    import pyarrow.parquet as pq

    from curation.config import DedupConfig
    from curation.minhash import shingles

    work = ws / "work"

    def parts(stage: str) -> list[Path]:
        return sorted((work / stage).glob("*/part-*.parquet"))

    def rows(paths) -> int:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in paths)

    def disk(paths) -> int:
        return sum(p.stat().st_size for p in paths)

    def row_bytes(path: Path, columns: list[str]) -> float:
        table = pq.read_table(path, columns=columns)
        return table.nbytes / max(table.num_rows, 1)

    def removed(stage: str) -> int:  # a table by shard
        return rows((work / stage / "removals").glob("*/part-*.parquet"))

    prepared, sigs, bands = parts("prepare"), parts("minhash"), parts("minhash_bands")
    n_prepared, n_signed = rows(prepared), rows(sigs)
    dedup = json.loads((work / "minhash_dedup" / "_done").read_text())
    sample = pq.read_table(prepared[0], columns=["text"])["text"].to_pylist()[:500]
    ngram = DedupConfig().ngram
    after_decontamination = n_prepared - removed("decontaminate")
    after_quality = after_decontamination - removed("quality_select")
    return {
        "entering": {"prepare": summary["docs_in"], "decontaminate": n_prepared,
                     "quality_select": after_decontamination, "exact_dedup": after_quality,
                     "minhash": after_quality - removed("exact_dedup"), "minhash_dedup": n_signed,
                     "domains": summary["kept"], "tokenize": summary["kept"], "publish": summary["docs_in"]},
        "input_bytes": disk(corpus.glob("*.jsonl.gz")) / summary["docs_in"],
        "prepared_bytes": disk(prepared) / max(n_prepared, 1),
        "text_bytes": row_bytes(prepared[0], ["text"]),
        "quality_row": row_bytes(prepared[0], ["record", "id", "quality"]) + 8,  # + shard, rank (int32 each)
        "id_row": row_bytes(prepared[0], ["record", "id"]) + 8,
        "signature_row": row_bytes(sigs[0], None) if sigs else 0.0,
        "signature_disk": disk(sigs) / max(n_signed, 1),
        "bands_per_doc": rows(bands) / max(n_signed, 1),
        "band_row": row_bytes(bands[0], None) if bands else 0.0,
        "shingles": sum(len(shingles(t, ngram)) for t in sample) / max(len(sample), 1),
        "candidates_per_doc": dedup.get("candidate_pairs", 0) / max(n_signed, 1),
        "verified_per_doc": dedup.get("verified_pairs", 0) / max(n_signed, 1),
        "curated_bytes": disk(parts("tokenize")) / max(summary["kept"], 1),
        "tokens_per_doc": summary["tokens"] / max(summary["kept"], 1),
        "funnel_bytes": disk(parts("funnel")) / summary["docs_in"],
    }


# Tagged web, the source gets what a crawl gets by default: the four filters and PII redaction (a jsonl.gz source
# that is not web text gets neither). One eval set switches the decontaminate stage on.
WEB_SOURCE = 'tags = ["web"]'
EVAL_SET = REPO / "examples" / "decontamination" / "jargon.jsonl"
DECONTAMINATE = f'\n[decontaminate]\n[[decontaminate.eval]]\nname = "jargon"\npaths = ["{EVAL_SET}"]\n'


def run_size(workdir: Path, k: int, args, tokenizer: Path) -> dict:
    """Writes size k's corpus and workspace, and curates it in a fresh process (`measure`), so that the client's
    memory at every size starts from the same imports and holds none of the corpus."""
    n_docs, n_shards = k * args.docs, k * args.shards
    texts = prose_corpus(n_docs, args.seed + k) if args.corpus == "prose" else web_like_corpus(n_docs, args.seed + k, False)
    shards_dir = workdir / f"corpus-{k}x"
    write_jsonl_shards(texts, n_shards, shards_dir)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    del texts
    ws = workdir / f"loom-{k}x"
    loom_workspace(ws, shards_dir, WEB_SOURCE, "", tokenizer, DECONTAMINATE + domains_table(args.domains, args.domains_sample))
    out = workdir / f"measured-{k}x.json"
    subprocess.run([sys.executable, __file__, "--measure", str(ws), str(shards_dir), str(out),
                    "--workers", str(args.workers)], check=True)
    result = json.loads(out.read_text())
    shutil.rmtree(shards_dir)
    shutil.rmtree(ws)
    return {**result, "k": k, "docs": n_docs, "shards": n_shards, "mb": mb}


def measure(ws: Path, corpus: Path, out: Path, workers: int) -> None:
    memory = StageMemory()
    result = run_loom(ws, workers, on_stage=memory)
    out.write_text(json.dumps({**result, "memory": memory.stages, **workspace_figures(ws, result["summary"], corpus)}))


def per_doubling(a: float, b: float, factor: float) -> float:
    return (b / max(a, 1e-3)) ** (1 / math.log2(factor))


def total_cpu(result: dict) -> float:
    return sum(p["cpu"] for procs in result["memory"].values() for p in procs.values())


def report_time(results: list[dict]) -> None:
    stages = list(results[0]["stages"])
    print(f"\n{'size':>5} {'docs':>8} {'shards':>6} {'MB':>6} {'kept':>7} {'seconds':>8}  " + " ".join(f"{s[:13]:>13}" for s in stages))
    for r in results:
        print(f"{str(r['k']) + 'x':>5} {r['docs']:>8,} {r['shards']:>6} {r['mb']:>6.1f} {r['summary']['kept']:>7,} "
              f"{r['total']:>8.1f}  " + " ".join(f"{r['stages'][s]:>12.1f}s" for s in stages))
    print("documents entering each stage: " + "; ".join(
        f"{r['k']}x " + ", ".join(f"{s} {r['entering'][s]:,}" for s in stages if s in r["entering"]) for r in results))
    print(f"time ratio per doubling (target <= {TIME_TARGET}x; 1x -> 4x is two doublings, so the root of the ratio):")
    for a, b in zip(results, results[1:]):
        factor = b["k"] / a["k"]
        total = per_doubling(a["total"], b["total"], factor)
        cpu = per_doubling(total_cpu(a), total_cpu(b), factor)
        print(f"  {a['k']}x -> {b['k']}x total {b['total'] / a['total']:.2f}x = {total:.2f}x per doubling "
              f"{'PASS' if total <= TIME_TARGET else 'FAIL'} (CPU of all processes {total_cpu(a):.0f}s -> "
              f"{total_cpu(b):.0f}s, {cpu:.2f}x per doubling: what a busy machine does not move)")
        for s in stages:
            ratio = per_doubling(a["stages"][s], b["stages"][s], factor)
            verdict = "PASS" if ratio <= TIME_TARGET else "FAIL"
            note = " (under 1 s: start-up and noise)" if b["stages"][s] < 1 else ""
            print(f"    {s:<15} {a['stages'][s]:>7.1f}s -> {b['stages'][s]:>7.1f}s  {ratio:.2f}x per doubling {verdict}{note}")


def report_memory(results: list[dict]) -> None:
    first, last = results[0], results[-1]
    sizes = " ".join(f"{str(r['k']) + 'x':>16}" for r in results)
    print(f"\npeak resident MB per stage and process [above what it held as the stage started] (CPU s); "
          f"target: peak at {last['k']}x <= {PEAK_TARGET} x peak at {first['k']}x")
    print(f"{'stage':<15} {'process':<9} {sizes}  {'ratio':>6} {'bound MB':>8}")
    for stage in first["memory"]:
        for proc in sorted(first["memory"][stage], key=lambda p: (p != "client", p)):
            cells = [r["memory"].get(stage, {}).get(proc) for r in results]
            if None in cells:
                print(f"{stage:<15} {proc:<9} missing at some size (a worker restarted?)")
                continue
            ratio = cells[-1]["peak"] / cells[0]["peak"]
            print(f"{stage:<15} {proc:<9} " + " ".join(f"{c['peak']:>5.0f} [{c['working']:>4.0f}] ({c['cpu']:>5.1f})" for c in cells)
                  + f"  {ratio:>5.2f}x {PEAK_TARGET * cells[0]['peak']:>8.0f} {'PASS' if ratio <= PEAK_TARGET else 'FAIL'}")
    print("why each bound should hold (what a process holds during the stage):")
    for stage, why in HOLDS.items():
        print(f"  {stage}: {why}")
    print(f"  and {CLIENT_HOLDS} ({first['shards']} -> {last['shards']})")


def report_projection(results: list[dict]) -> None:
    """The inputs of a projection to PROJECT_DOCS documents, from the largest size, and the projection."""
    r = results[-1]
    scale = PROJECT_DOCS / r["summary"]["docs_in"]
    share = {s: r["entering"][s] / r["summary"]["docs_in"] for s in r["entering"]}
    print(f"\nprojection inputs (from {r['k']}x: {r['summary']['docs_in']:,} documents; bytes per document):")
    print(f"  input jsonl.gz {r['input_bytes']:.0f}; prepared Parquet {r['prepared_bytes']:.0f} (text {r['text_bytes']:.0f} "
          f"in Arrow); funnel {r['funnel_bytes']:.0f}; curated Parquet {r['curated_bytes']:.0f} per kept document "
          f"({r['tokens_per_doc']:.0f} tokens)")
    print(f"  quality_select row (record, id, quality, shard, rank) {r['quality_row']:.0f}; exact_dedup row (record, "
          f"id, shard, rank) {r['id_row']:.0f}")
    print(f"  signature row {r['signature_row']:.0f} in Arrow ({r['signature_disk']:.0f} on disk); {r['bands_per_doc']:.0f} band "
          f"rows of {r['band_row']:.0f} = {r['bands_per_doc'] * r['band_row']:.0f}; {r['shingles']:.0f} distinct "
          f"{'5'}-gram shingles (8-byte hashes: {8 * r['shingles']:.0f})")
    print(f"  candidate pairs {r['candidates_per_doc']:.3f} and verified pairs {r['verified_per_doc']:.3f} per signed "
          f"document; share of the input entering each stage: " + ", ".join(f"{s} {v:.2f}" for s, v in share.items()))
    gb = lambda per_doc, stage: per_doc * r["entering"][stage] * scale / 1e9  # noqa: E731
    print(f"bytes shuffled at {PROJECT_DOCS:,} input documents (any number of workers): exact_dedup ids "
          f"{gb(r['id_row'], 'exact_dedup'):,.0f} GB; minhash_dedup band rows {gb(r['bands_per_doc'] * r['band_row'], 'minhash_dedup'):,.0f} GB, "
          f"candidate pairs {gb(16 * r['candidates_per_doc'], 'minhash_dedup'):,.0f} GB, both signatures per pair "
          f"{gb(2 * r['signature_row'] * r['candidates_per_doc'], 'minhash_dedup'):,.0f} GB, both texts per pair "
          f"{gb(2 * r['text_bytes'] * r['candidates_per_doc'], 'minhash_dedup'):,.0f} GB (or shingle hashes "
          f"{gb(16 * r['shingles'] * r['candidates_per_doc'], 'minhash_dedup'):,.0f} GB), verified edges per "
          f"components round {gb(16 * r['verified_per_doc'], 'minhash_dedup'):,.0f} GB")
    serial, parallel = {}, {}  # CPU seconds one process must spend, and those that spread over the workers
    for stage, procs in r["memory"].items():
        spent = [p["cpu"] for name, p in procs.items() if name != "client"]
        client = procs["client"]["cpu"]  # the scheduler's too: counted only where the client does the stage's work
        one_task = sum(spent) > 0.2 and max(spent) > 4 * min(spent)  # the other workers stayed (nearly) idle
        serial[stage] = (client if client > max(spent) else 0) + (sum(spent) if one_task else 0)
        parallel[stage] = 0 if one_task else sum(spent)
    ms = lambda seconds: 1e3 * seconds / r["summary"]["docs_in"]  # noqa: E731
    print("  CPU ms per input document, in one process (the client's, or one task's) + spread over the workers: "
          + ", ".join(f"{s} {ms(serial[s]):.2f} + {ms(parallel[s]):.2f}" for s in serial))
    whole = {s: sum(p["cpu"] for p in procs.values()) for s, procs in r["memory"].items() if s in GLOBAL_STAGES}
    print(f"  the global stages' whole CPU (every process's, scheduler included), if each stayed in one process at "
          f"{PROJECT_DOCS:,}: " + ", ".join(f"{s} {scale * cpu / 3600:,.1f} h" for s, cpu in whole.items())
          + " (at this size idle workers' CPU blurs which process did a small stage's work)")
    for n in PROJECT_WORKERS:
        hours = {s: scale * (serial[s] + parallel[s] / n) / 3600 for s in serial}
        print(f"time at {PROJECT_DOCS:,} documents on {n} workers (that CPU per document, the spread part divided by "
              f"{n}; scheduling and network left out): {sum(hours.values()):,.1f} h = "
              + ", ".join(f"{s} {h:,.1f} h" for s, h in hours.items()))
    first = results[0]
    grows = []
    for stage, procs in r["memory"].items():
        for proc, cell in procs.items():
            before = first["memory"][stage].get(proc)
            if before and cell["peak"] > PEAK_TARGET * before["peak"]:
                per_million = (cell["peak"] - before["peak"]) / (r["summary"]["docs_in"] - first["summary"]["docs_in"]) * 1e6
                grows.append(f"{stage}/{proc} {per_million:,.0f} MB per million documents (~{per_million:,.0f} GB at 1B)")
    flat = max(cell["peak"] for procs in r["memory"].values() for cell in procs.values())
    print(f"memory per process at {PROJECT_DOCS:,}: a process whose peak is flat keeps it (largest here {flat:.0f} MB) "
          f"while a shard keeps its {r['docs'] // r['shards']:,} documents; "
          + ("grew past the target here, extrapolated linearly: " + "; ".join(grows) if grows else "none grew past the target here"))
    one = lambda per_doc, stage: per_doc * r["entering"][stage] * scale / 1e9  # noqa: E731
    print(f"  what one process would hold at {PROJECT_DOCS:,} if a global stage kept all its rows (Arrow bytes, before "
          f"any engine overhead): quality_select {one(r['quality_row'], 'quality_select'):,.0f} GB, exact_dedup "
          f"{one(r['id_row'], 'exact_dedup'):,.0f} GB, minhash_dedup's client (edges 16 B + ~150 B of union-find per "
          f"clustered document, ~2 per edge) {one(r['verified_per_doc'] * (16 + 300), 'minhash_dedup'):,.0f} GB; "
          f"sharded into partitions of a shard's documents, each holds the same as at {r['k']}x")


def report(results: list[dict]) -> None:
    report_time(results)
    report_memory(results)
    report_projection(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, docs=2000, shards=2, per=" at 1x")
    parser.add_argument("--sizes", default="1,4,16")
    parser.add_argument("--corpus", choices=("prose", "web"), default="prose",
                        help="prose: ~99%% pass the filters (default); web: the mosaics of earlier runs, ~5%%")
    parser.add_argument("--save", type=Path, help="write every size's figures to this JSON file")
    parser.add_argument("--report", type=Path, help="print the report of a JSON file that --save wrote, and stop")
    add_domains_argument(parser, sample=1000, why="; below the documents kept at 1x")
    parser.add_argument("--sources", type=int, metavar="N",
                        help="instead of the sizes: --docs documents as one source and as N sources, timed side by side")
    parser.add_argument("--pairs", type=int, default=1, metavar="K",
                        help="with --sources: K alternating pairs of runs, each pair's ratio and the median pair's stages")
    parser.add_argument("--time-job", nargs=2, type=Path, metavar=("WORKSPACE", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=3, type=Path, metavar=("WORKSPACE", "CORPUS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure, args.workers)
        return
    if args.time_job:
        time_job(*args.time_job, args.workers)
        return
    if args.report:
        saved = json.loads(args.report.read_text())
        report_sources(saved) if "sources" in saved[0] else report(saved)
        return
    if args.sources:
        compare_sources(args)
        return
    sizes = [int(k) for k in args.sizes.split(",")]

    start = time.perf_counter()
    with bench_workdir(args, "scale") as workdir:
        sample = prose_corpus(3000, args.seed) if args.corpus == "prose" else web_like_corpus(3000, args.seed, False)
        tokenizer = bench_tokenizer(sample, workdir / "tokenizer.json")
        del sample
        results = []
        for k in sizes:
            load_before = machine_load()
            result = run_size(workdir, k, args, tokenizer)
            s = result["summary"]
            print(f"{k}x: {result['docs']:,} documents, {result['mb']:.1f} MB, {result['total']:.1f}s; kept "
                  f"{s['kept']:,} ({s['kept'] / s['docs_in']:.0%}; filtered {s['filtered']:,}, duplicate "
                  f"{s['duplicate']:,}); load average before {load_before}, after {machine_load()}"
                  + (f"; {domains_share(result['stages'], result['total'])}" if args.domains else ""), flush=True)
            results.append(result)
            if args.save:  # after every size, so that a run stopped at a large size keeps the ones it finished
                args.save.write_text(json.dumps(results))
        report(results)
        print(f"load average after: {machine_load()}; this run took {time.perf_counter() - start:.0f}s")


def compare_sources(args) -> None:
    """--sources N: the same documents as one source and as N, each timed in a fresh process."""
    with bench_workdir(args, "sources") as workdir:
        texts = prose_corpus(args.docs, args.seed)
        tokenizer = bench_tokenizer(texts, workdir / "tokenizer.json")
        results = [run_split(workdir, texts, n, tokenizer, args.workers, __file__, pair)
                   for pair in range(args.pairs) for n in (1, args.sources)]
        if args.save:
            args.save.write_text(json.dumps(results))
        report_sources(results)


if __name__ == "__main__":
    main()
