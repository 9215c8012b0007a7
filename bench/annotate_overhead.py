"""What a Python annotator costs a curation: the curation bench's Loom job (bench/curate_vs_datatrove.py's web
corpus, language ID, the four heuristic filters, exact dedup, tokenized) run with and without an `[[annotate]]`
table of kind "python" whose function returns one constant per text, alternately --repeats times each; the
fastest run of each is compared. What the ratio measures is Loom's own cost of an annotator (batching the texts,
calling the function on a worker, the column through prepare, tokenize and the manifest), not a model's.

    python bench/annotate_overhead.py [--docs 50000] [--workers 2] [--shards 8] [--repeats 2] [--workdir DIR] [--keep]

The last line is the annotator's share of the curate time (the goal of issue 39: under 5%).
"""

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # before bench/: this file's name would shadow the curation package

from curate_vs_datatrove import FILTERS, LANGUAGE_THRESHOLD  # noqa: E402
from loom_job import (add_run_arguments, bench_tokenizer, bench_workdir, loom_workspace, machine_load,  # noqa: E402
                      run_loom, write_jsonl_shards)
from web_corpus import web_corpus  # noqa: E402

MODULE = "loom_bench_constant"
ANNOTATE = f"""
[[annotate]]
name = "constant"
kind = "python"
function = "{MODULE}:score"
"""


def write_annotator(folder: Path) -> None:
    """The annotator's package, on the PYTHONPATH the Dask workers start with."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{MODULE}.py").write_text("def score(texts):\n    return [0.5] * len(texts)\n", encoding="utf-8")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    sys.path.insert(0, str(folder))


def curate(ws: Path, shards_dir: Path, tokenizer: Path, workers: int, tables: str) -> dict:
    options = f'min_lang_score = {LANGUAGE_THRESHOLD}\nfilter_languages = ["*"]\nfilters = {list(FILTERS)!r}'.replace("'", '"')
    loom_workspace(ws, shards_dir, options, "enabled = false", tokenizer, tables)
    return run_loom(ws, workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, docs=50_000, shards=8)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each job, alternating (default 2)")
    args = parser.parse_args()
    with bench_workdir(args, "annotate") as workdir:
        texts = web_corpus(args.docs, args.seed)
        shards_dir = workdir / "corpus"
        write_jsonl_shards(texts, args.shards, shards_dir)
        tokenizer = bench_tokenizer(texts, workdir / "tokenizer.json")
        write_annotator(workdir / "plugins")
        print(f"corpus: {len(texts):,} documents, {args.shards} shards, {args.workers} workers", flush=True)
        times = {"without": [], "with": []}
        for repeat in range(args.repeats):
            for label, tables in (("without", ""), ("with", ANNOTATE)):
                result = curate(workdir / f"loom-{label}", shards_dir, tokenizer, args.workers, tables)
                times[label].append(result["total"])
                print(f"run {repeat + 1} {label:7} annotator: {result['total']:.1f}s (prepare "
                      f"{result['stages'].get('prepare', 0):.1f}s), kept {result['summary']['kept']:,}; load "
                      f"{machine_load()}", flush=True)
        without, with_ = min(times["without"]), min(times["with"])
        print(f"fastest: without {without:.1f}s, with {with_:.1f}s; ratio with/without {with_ / without:.3f}x")
        print(f"a constant Python annotator costs {with_ / without - 1:+.1%} of the curate time (goal < 5%)")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"this run took {time.perf_counter() - start:.0f}s")
