"""Tokenization: Loom's tokenize stage against raw HF `tokenizers` on the same texts, in one process.

    python bench/tokenization.py [--copies 1] [--reps 3] [--vocab-size 8192]

Texts: every readable document of the bundled sources (examples/sources.toml, normalized and HTML-extracted the
way curation reads them), replicated --copies times; copy k > 0 starts each document 5k words later (a
different window) and is shuffled with seed k, so that copies are not byte-identical. One copy (5,262 docs,
9.2 MB, ~2.6M tokens) is already 2-3 s of tokenizing per variant on an idle 2-core machine (byte-level BPE
runs at ~2 MB/s per thread), so that is the default; the whole script takes ~45 s there.
Tokenizer: byte-level BPE trained with `curation.tokenizer.train_tokenizer` on the original texts (in a temp
dir), loaded with `curation.tokenizer.load_tokenizer`. All variants share that one Tokenizer object and so the
same rayon thread pool (every core unless RAYON_NUM_THREADS says otherwise) and the same BPE word cache; an
untimed warm-up on the first 1,000 texts runs first, and checks Loom's ids there. Repetitions are interleaved
round-robin; the table shows median seconds.

Variants (each produces the token ids of every text as Python- or Arrow-visible data):
  (a) raw encode_batch       `tokenizer.encode_batch(texts, add_special_tokens=False)` on the whole list,
                             then `[e.ids for e in encodings]` (what a user writes to get ids)
  (b) raw encode_batch_fast  the same with `encode_batch_fast` (no offsets)
  raw fast, 512/batch        (b) in batches of 512, as the tokenize stage (curation/stages/tokenize.py) batches
  rust only, 512/batch       `encode_batch_fast` in batches of 512 with no `.ids` taken: the floor
  loom encode_to_arrow       `curation.tokenizer.encode_to_arrow(tokenizer, eos_id, batch)` in batches of 512
                             (list<uint32> with EOS appended, as tokenize_shard calls it)
tokens/s counts the same number for every variant: the tokens of the texts, EOS not included, so the
ratios are ratios of time.

Last line: Loom's tokens/s over (a)'s and over (b)'s.
"""

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from bundled_texts import base_texts, corpus


BATCH = 512  # curation.stages.tokenize.BATCH


def batches(texts, size=BATCH):
    for i in range(0, len(texts), size):
        yield texts[i : i + size]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--vocab-size", type=int, default=8192)
    args = ap.parse_args()
    from curation.tokenizer import encode_to_arrow, load_tokenizer, train_tokenizer

    base = base_texts()
    texts = corpus(base, args.copies)
    n_bytes = sum(len(t.encode()) for t in texts)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokenizer.json"
        t0 = time.perf_counter()
        train_tokenizer(iter(base), path, vocab_size=args.vocab_size)
        train_s = time.perf_counter() - t0
        tokenizer, eos_id = load_tokenizer(str(path))

    threads = os.environ.get("RAYON_NUM_THREADS") or f"{os.cpu_count()} (all cores)"
    print(f"texts: {len(texts):,} docs ({len(base):,} x {args.copies} copies), {n_bytes / 1e6:.1f} MB; "
          f"tokenizer: byte-level BPE, vocab {tokenizer.get_vocab_size():,}, trained in {train_s:.1f}s; "
          f"rayon threads: {threads}; reps: {args.reps} (median)")

    def raw_batch():
        return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    def raw_fast():
        return [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]

    def count(result) -> int:
        return sum(len(ids) for ids in result)

    def raw_fast_batched():
        return [e.ids for b in batches(texts) for e in tokenizer.encode_batch_fast(b, add_special_tokens=False)]

    def rust_only_batched():
        n = 0
        for b in batches(texts):
            n += len(tokenizer.encode_batch_fast(b, add_special_tokens=False))
        return n

    def loom():
        return [encode_to_arrow(tokenizer, eos_id, b) for b in batches(texts)]

    variants = {
        "(a) raw encode_batch + .ids": raw_batch,
        "(b) raw encode_batch_fast + .ids": raw_fast,
        "raw fast + .ids, 512/batch": raw_fast_batched,
        "rust only (no .ids), 512/batch": rust_only_batched,
        "loom encode_to_arrow, 512/batch": loom,
    }

    # warm-up (BPE cache, allocator, thread pool) and the correctness check, on the first 1,000 texts
    sample = texts[:1000]
    reference = [e.ids for e in tokenizer.encode_batch(sample, add_special_tokens=False)]
    loom_ids = [ids for b in batches(sample) for ids in encode_to_arrow(tokenizer, eos_id, b).to_pylist()]
    assert len(loom_ids) == len(reference)
    assert all(got == ids + [eos_id] for got, ids in zip(loom_ids, reference)), "Loom's ids differ from raw"
    del loom_ids, reference
    n_tokens = None

    times = {name: [] for name in variants}
    for _ in range(args.reps):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            result = fn()
            times[name].append(time.perf_counter() - t0)
            if n_tokens is None:  # the first (a) run
                n_tokens = count(result)
            del result

    med = {name: statistics.median(ts) for name, ts in times.items()}
    width = max(map(len, variants))
    print(f"{'variant':<{width}}  {'median s':>9}  {'min s':>7}  {'Mtokens/s':>9}  {'MB/s':>6}  {'vs (a)':>7}")
    for name in variants:
        print(f"{name:<{width}}  {med[name]:9.2f}  {min(times[name]):7.2f}  {n_tokens / med[name] / 1e6:9.2f}  "
              f"{n_bytes / med[name] / 1e6:6.1f}  {med['(a) raw encode_batch + .ids'] / med[name]:6.2f}x")
    print(f"tokens: {n_tokens:,} (EOS not counted)")
    loom_s = med["loom encode_to_arrow, 512/batch"]
    print(f"ratio loom/raw encode_batch tokens/s: {med['(a) raw encode_batch + .ids'] / loom_s:.2f}x; "
          f"loom/raw encode_batch_fast tokens/s: {med['(b) raw encode_batch_fast + .ids'] / loom_s:.2f}x")


if __name__ == "__main__":
    main()
