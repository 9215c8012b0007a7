"""`curate(limit=N)` against a full curate of the same large jsonl: the sample's time should not grow with the
input (each shard reads only its first records), the full run's does. Both through loom.api, 2 workers.

    python bench/curate_limit.py                      # 200 MB cut into 4 shards, limit 1000
    python bench/curate_limit.py --megabytes 50 --limit 5000 --skip-full
"""

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))


def curate(folder: Path, data: Path, tokenizer: Path, shard_bytes: int, workers: int, limit: int | None) -> dict:
    import loom

    folder.mkdir(parents=True)
    sources = folder / "sources.toml"
    sources.write_text(f'[[source]]\nname = "big"\nformat = "jsonl"\npaths = ["{data}"]\nshard_bytes = {shard_bytes}\n')
    started = time.monotonic()
    funnel = loom.open(folder / "ws").curate(sources=sources, workers=workers, limit=limit, tokenizer=tokenizer)
    row = funnel[0]
    return {"limit": limit, "seconds": round(time.monotonic() - started, 1), "records_read": row["docs_in"],
            "kept": row["kept"], "tokens": row["tokens"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--limit", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-full", action="store_true", help="time the sample only")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="loom-bench-limit-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        from bundled_texts import base_texts
        from curation.tokenizer import train_tokenizer
        from cut_shards import write_big_jsonl

        data, tokenizer, texts = workdir / "big.jsonl", workdir / "tokenizer.json", base_texts()
        size = write_big_jsonl(data, texts, args.megabytes)
        print(f"input: {data} {size / 1e6:,.1f} MB in {args.shards} shards", flush=True)
        train_tokenizer(texts[:3000], tokenizer)
        shard_bytes = -(-size // args.shards)
        print("sample:", curate(workdir / "sample", data, tokenizer, shard_bytes, args.workers, args.limit), flush=True)
        if not args.skip_full:
            print("full:  ", curate(workdir / "full", data, tokenizer, shard_bytes, args.workers, None), flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
