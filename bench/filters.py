"""The filter stage: Loom's (shared memoized words, its own Gopher rules) against datatrove's four heuristic filters
on the same documents, in one process.

    python bench/filters.py [--rounds 3] [--limit N] [--copies 1]

Texts: every readable document of the bundled sources (bench/bundled_texts.py: 5,262 documents, 9.2 MB of code,
HTML docs in six languages, fortunes and a manual), each judged by all four filters whatever its language (the
filters' defaults, Gopher repetition -> Gopher quality -> C4 -> FineWeb, the first rejection winning).
Variants, run in alternating rounds (best of --rounds shown):
  loom, fresh     curation.steps.filters.HeuristicFilters built anew with a new word tokenizer: its memo of
                  chunks starts empty, as in a new worker process
  loom, warm      the same object on the same documents again: every chunk already in the memo (a long job's
                  worker, whose memo has seen most chunks, lies between the two)
  datatrove       GopherRepetitionFilter, GopherQualityFilter, C4QualityFilter, FineWebQualityFilter with their
                  own spaCy word tokenizer, `filter(doc)` on each document
The first round checks that both keep the same documents with the same text and remove the others for the same
reason. The last lines are the ratios of docs/s, with the load average before and after.
"""

import argparse
import time

from bundled_texts import base_texts, corpus
from loom_job import machine_load

from curation.steps.filter_reference import datatrove_verdicts, every_language_filters, loom_verdicts


def loom_filters():
    """Loom's filter stage with a new word tokenizer and empty memos, as in a new worker process."""
    from curation.steps import filters, gopher

    filters._english_word_tokenizer.cache_clear()
    gopher._KINDS.clear()
    return every_language_filters()


def timed(run) -> tuple[float, tuple]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="only the first N documents")
    ap.add_argument("--copies", type=int, default=1, help="copies of the texts (bench/bundled_texts.py's corpus)")
    args = ap.parse_args()
    texts = corpus(base_texts(), args.copies)[: args.limit]
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    print(f"{len(texts):,} documents, {megabytes:.1f} MB; load average {machine_load()}")
    best = {"loom, fresh": float("inf"), "loom, warm": float("inf"), "datatrove": float("inf")}
    for round_ in range(args.rounds):
        theirs_s, theirs = timed(lambda: datatrove_verdicts(texts))
        heuristic_filters = loom_filters()
        fresh_s, fresh = timed(lambda: loom_verdicts(texts, heuristic_filters))
        warm_s, warm = timed(lambda: loom_verdicts(texts, heuristic_filters))
        if round_ == 0:
            assert fresh == theirs and warm == theirs, "Loom's verdicts differ from datatrove's"
            print(f"same verdicts: {len(theirs[1]):,} kept, {len(theirs[0]):,} removed")
        for name, seconds in (("datatrove", theirs_s), ("loom, fresh", fresh_s), ("loom, warm", warm_s)):
            best[name] = min(best[name], seconds)
        print(f"round {round_ + 1}: datatrove {theirs_s:.1f} s, loom fresh {fresh_s:.1f} s, warm {warm_s:.1f} s; "
              f"load {machine_load()}")
    print(f"\n{'variant':<14}{'best s':>9}{'docs/s':>10}{'MB/s':>8}")
    for name, seconds in best.items():
        print(f"{name:<14}{seconds:>9.2f}{len(texts) / seconds:>10,.0f}{megabytes / seconds:>8.2f}")
    print(f"\nloom fresh / datatrove: {best['datatrove'] / best['loom, fresh']:.2f}x docs/s")
    print(f"loom warm / datatrove:  {best['datatrove'] / best['loom, warm']:.2f}x docs/s; load average {machine_load()}")


if __name__ == "__main__":
    main()
