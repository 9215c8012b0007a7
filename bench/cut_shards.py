"""One large jsonl (built from the bundled texts, ~1 GB by default) curated cut into shards by 2 workers, and as
one shard: the cut run's curated rows (ids, order, metadata, token counts) and funnel must be the run's as one
shard, and the funnel's `record` of a sample of rows must be the byte offset of the line it names.

    python bench/cut_shards.py                       # 1 GB, cut into 10 shards, 2 workers
    python bench/cut_shards.py --megabytes 64        # a quicker run
    python bench/cut_shards.py --read-only           # the readers only: cut (2 processes) vs one shard
    python bench/cut_shards.py --no-filters          # every stage but the heuristic filters (their spaCy is ~90%)
"""

import argparse
import hashlib
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

SAMPLE_ROWS = 2000  # funnel rows whose record is read back from the file


def write_big_jsonl(path: Path, texts: list[str], megabytes: int) -> int:
    """Copies of the texts (copy k starts each text 5k words later, shuffled with seed k) as
    {"id": "doc-N", "text": ...} lines until the file holds `megabytes`; returns its size."""
    from bundled_texts import vary

    target, n = megabytes * 10**6, 0
    with open(path, "w", encoding="utf-8") as out:
        for k in range(10**6):
            copy = [vary(t, k) for t in texts]
            random.Random(k).shuffle(copy)
            for text in copy:
                out.write(json.dumps({"id": f"doc-{n}", "text": text}, ensure_ascii=False) + "\n")
                n += 1
            if out.tell() >= target:
                return out.tell()
    raise AssertionError("unreachable")


def write_prose_jsonl(path: Path, megabytes: int, chunk: int = 50_000) -> int:
    """bench/loom_job.py's prose corpus (English paragraphs of the bundled texts' sentences, 40% planted near
    duplicates, 10% exact copies; 99.5% pass the filters) in chunks of `chunk` documents, chunk k from seed k,
    as {"id": "doc-N", "text": ...} lines until the file holds `megabytes`; returns its size."""
    from loom_job import prose_corpus

    target, n = megabytes * 10**6, 0
    with open(path, "w", encoding="utf-8") as out:
        for k in range(10**6):
            for text in prose_corpus(chunk, seed=k):
                out.write(json.dumps({"id": f"doc-{n}", "text": text}, ensure_ascii=False) + "\n")
                n += 1
            if out.tell() >= target:
                return out.tell()
    raise AssertionError("unreachable")


def curate(ws: Path, data: Path, tokenizer: Path, shard_bytes: int, workers: int, filters: bool = True) -> dict:
    from base.workspace import Workspace
    from curation.config import load_config
    from curation.job import plan_job
    from curation.run import curate as run_curate, dask_client

    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    (ws / "sources.toml").write_text(f'[[source]]\nname = "big"\nformat = "jsonl"\npaths = ["{data}"]\n'
                                     f'id_field = "id"\nshard_bytes = {shard_bytes}\n'
                                     + ("" if filters else "filters = []\n"))
    layout = Workspace(ws)
    begin = time.perf_counter()
    shards, ctx = plan_job(load_config(ws / "sources.toml"), layout, tokenizer)
    planned = time.perf_counter()
    starts = {}

    def progress(stage, total):
        starts[stage] = time.perf_counter()
        return lambda n=1: None

    with dask_client(workers=workers) as client:
        (summary,) = run_curate(shards, ctx, client, progress)
    end = time.perf_counter()
    names = list(starts)
    stamps = [starts[n] for n in names] + [end]
    return {"shards": len(shards), "plan_s": planned - begin, "total_s": end - begin, "summary": summary,
            "stages_s": {n: round(stamps[i + 1] - stamps[i], 1) for i, n in enumerate(names)}}


def curated_digest(ws: Path) -> tuple[str, int]:
    """A digest of every curated row in part order (id, metadata, token count; the id is the text's hash)."""
    import pyarrow.parquet as pq
    from base.workspace import Workspace

    digest, rows = hashlib.sha256(), 0
    for part in sorted((Workspace(ws).published().root / "curated" / "big").glob("part-*.parquet")):
        for batch in pq.ParquetFile(part).iter_batches(columns=["id", "meta", "n_tokens"]):
            for row in batch.to_pylist():
                digest.update(f"{row['id']}\x1f{row['meta']}\x1f{row['n_tokens']}\x1e".encode())
                rows += 1
    return digest.hexdigest(), rows


def funnel(ws: Path):
    import pyarrow.parquet as pq
    from base.workspace import Workspace

    table = pq.read_table(Workspace(ws).published().root / "manifest" / "funnel")
    return table.drop(["shard"]).sort_by([("record", "ascending")])


def check_offsets(ws: Path, data: Path) -> int:
    """Reads back SAMPLE_ROWS funnel rows by offset: a kept row's line holds the curated document's source id."""
    import pyarrow.parquet as pq
    from base.workspace import Workspace

    gen = Workspace(ws).published().root
    rows = funnel(ws).to_pylist()
    sample = random.Random(0).sample(rows, min(SAMPLE_ROWS, len(rows)))
    kept_ids = {r["doc_id"] for r in sample if r["fate"] == "kept"}
    source_ids = {}
    for part in sorted((gen / "curated" / "big").glob("part-*.parquet")):
        for row in pq.read_table(part, columns=["id", "meta"]).to_pylist():
            if row["id"] in kept_ids:
                source_ids[row["id"]] = json.loads(row["meta"])["source_id"]
    checked = 0
    with open(data, "rb") as fh:
        for row in sample:
            fh.seek(max(row["record"] - 1, 0))
            before = fh.read(1) if row["record"] else b"\n"
            line = json.loads(fh.readline())
            assert before == b"\n", f"record {row['record']} is not where a line starts"
            if row["fate"] == "kept":
                assert source_ids[row["doc_id"]] == line["id"], row
                checked += 1
    return checked


def read_digest(data: Path, shard_bytes: int) -> tuple[int, bool, int, float, float]:
    """The file's records read through its cut shards (2 processes) and as one shard: shards, whether each cut
    shard's records are the uncut read's records at the offsets it owns, records, seconds each (readers only)."""
    from concurrent.futures import ProcessPoolExecutor

    from curation.config import SourceConfig
    from curation.job import plan_shards

    source = SourceConfig(name="big", format="jsonl", paths=(str(data),), shard_bytes=shard_bytes)
    begin = time.perf_counter()
    shards = plan_shards([source])
    with ProcessPoolExecutor(2) as pool:
        cut = list(pool.map(shard_digests, [(source, s.input, s.span, None) for s in shards]))
    cut_s = time.perf_counter() - begin
    begin = time.perf_counter()
    whole = shard_digests((source, str(data), None, [s.span.start for s in shards]))
    whole_s = time.perf_counter() - begin
    same = [digest for digest, _ in cut] == [digest for digest, _ in whole]
    return len(shards), same, sum(n for _, n in whole), cut_s, whole_s


def shard_digests(job) -> list[tuple[str, int]]:
    """(digest, records) of a shard's records (index, problem, text); with `starts`, of each run of records
    whose index (byte offset) falls in [starts[k], starts[k + 1])."""
    import bisect

    from curation.readers import read_shard

    source, path, span, starts = job
    digests = [[hashlib.sha256(), 0] for _ in starts or [0]]
    for record in read_shard(source, path, span):
        part = digests[bisect.bisect_right(starts, record.index) - 1] if starts else digests[0]
        part[0].update(f"{record.index}\x1f{record.problem}\x1f{record.text}\x1e".encode())
        part[1] += 1
    result = [(digest.hexdigest(), n) for digest, n in digests]
    return result if starts else result[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=10, help="cut the file into this many shards")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder, removed after")
    parser.add_argument("--read-only", action="store_true", help="compare the readers' records only, no curation")
    parser.add_argument("--corpus", choices=["copies", "prose"], default="copies",
                        help="copies: the bundled texts over and over, each copy starting 5 words later (most "
                             "documents are near duplicates of others); prose: bench/loom_job.py's prose corpus")
    parser.add_argument("--no-filters", action="store_true",
                        help="curate without the heuristic filters (`filters = []`): every other stage runs, at "
                             "~1/10 of prepare's cost, so that 1 GB fits in an hour on two cores")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="loom-bench-cut-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        from curation.tokenizer import train_tokenizer
        from bundled_texts import base_texts

        data, tokenizer, texts = workdir / "big.jsonl", workdir / "tokenizer.json", base_texts()
        size = (write_prose_jsonl(data, args.megabytes) if args.corpus == "prose"
                else write_big_jsonl(data, texts, args.megabytes))
        print(f"input: {data} {size / 1e6:,.1f} MB", flush=True)
        if args.read_only:
            shards, same, records, cut_s, whole_s = read_digest(data, -(-size // args.shards))
            print(f"{shards} shards read by 2 processes in {cut_s:.1f} s, one shard in {whole_s:.1f} s: {records:,} "
                  f"records, the same in the same order with the same offsets: {same}")
            sys.exit(0 if same else 1)
        train_tokenizer(texts[:3000], tokenizer)
        cut = curate(workdir / "cut", data, tokenizer, -(-size // args.shards), args.workers, not args.no_filters)
        print(f"cut:   {json.dumps(cut)}", flush=True)
        whole = curate(workdir / "whole", data, tokenizer, size + 1, args.workers, not args.no_filters)
        print(f"whole: {json.dumps(whole)}", flush=True)
        same_rows = curated_digest(workdir / "cut") == curated_digest(workdir / "whole")
        same_funnel = funnel(workdir / "cut").to_pylist() == funnel(workdir / "whole").to_pylist()  # values, not nullability
        checked = check_offsets(workdir / "cut", data)
        print(f"shards {cut['shards']} vs {whole['shards']}; curated rows identical: {same_rows}; funnel identical "
              f"(but shard): {same_funnel}; {SAMPLE_ROWS} sampled records start a line, the {checked} kept "
              "among them hold the curated document's source id")
        if not (same_rows and same_funnel):
            sys.exit(1)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
