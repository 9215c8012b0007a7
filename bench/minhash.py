"""MinHash signatures: Loom's signature stage against datasketch and datatrove on the same texts, in one process.

    python bench/minhash.py [--copies 1] [--reps 3]

Texts: every readable document of the bundled sources (examples/sources.toml, normalized and HTML-extracted the
way curation reads them), replicated --copies times; copy k > 0 starts each document 5k words later (a
different window) and is shuffled with seed k. One copy (5,262 docs, 9.2 MB) is already ~15-20 s of
datatrove work per repetition, so that is the default (the whole script: ~95 s on an idle 2-core machine).
Everything is single-threaded, one process; repetitions are interleaved round-robin and the table shows
median seconds. Every timing starts from the text strings and
ends with one 112-value signature per document, so each includes that tool's own shingling:

  loom signatures            `curation.minhash.signatures(texts, DedupConfig())`: Loom's shingles (lowercase,
                             \\w+ words, 5-gram sets, bytes) -> datasketch MinHash.bulk with xxh32, 112 perms
                             (14 bands x 8 rows), seed 1 -> (n, 112) uint32 array
  datasketch bulk, sha1      `MinHash.bulk([list(shingles(t, 5)) for t in texts], num_perm=112, seed=1)`, its
                             default sha1_hash32 (what a user writes), on Loom's shingles
  datasketch bulk, xxh32     the same with hashfunc=xxh32 (Loom's hash): the fair like-for-like
  datatrove get_signature    `MinhashDedupSignature(config=MinhashConfig(n_grams=5, num_buckets=14,
                             hashes_per_bucket=8, seed=1))`: per doc `get_shingles(text)` (simplify_text,
                             spaCy English word tokenizer, 5-grams, xxhash64 per n-gram, the default
                             HashConfig: 64-bit xxhash) then `get_signature(shingles)`, skipping documents with
                             no shingle as its run() does; no files written
  datatrove run()            the whole step, MinhashDedupSignature.run() over datatrove Documents on one
                             rank: the same signatures, struct-packed into 14 bucket files in a temp folder,
                             then each file read back and sorted (info: what its pipeline step costs)

A second table splits each tool's time into shingling (text -> shingles, or datatrove's hashed n-grams) and
the signature computation given those shingles: for Loom/datasketch each part on its own, --reps runs, the
fastest (shingles precomputed); for datatrove, per-document clocks inside its fastest timed repetition.
datatrove run() is timed once, after the repetitions (about get_signature's cost again plus the files).
Loom's signatures are checked to equal datasketch bulk's with xxh32.

Last line: Loom's docs/s over datasketch bulk's (sha1 and xxh32) and over datatrove's get_signature.
"""

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bundled_texts import base_texts, corpus


import numpy as np


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    import xxhash
    from datasketch import MinHash
    from datatrove.data import Document
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
    from datatrove.utils.logging import logger

    logger.disable("datatrove")  # its run() logs "Sorting buckets..." each time

    from curation.config import DedupConfig
    from curation.minhash import shingles, signatures

    config = DedupConfig()
    n = config.ngram
    texts = corpus(base_texts(), args.copies)
    n_bytes = sum(len(t.encode()) for t in texts)
    tmp = Path(tempfile.mkdtemp(prefix="loom-bench-minhash-"))
    try:
        dt_config = MinhashConfig(n_grams=n, num_buckets=config.bands, hashes_per_bucket=config.rows, seed=config.seed)
        dt = MinhashDedupSignature(output_folder=str(tmp / "sigs"), config=dt_config)

        def xxh32(data: bytes) -> int:
            return xxhash.xxh32_intdigest(data)

        def loom():
            return signatures(texts, config)

        def ds_sha1():
            return MinHash.bulk([list(shingles(t, n)) for t in texts], num_perm=config.num_perm, seed=config.seed)

        def ds_xxh32():
            return MinHash.bulk([list(shingles(t, n)) for t in texts], num_perm=config.num_perm, seed=config.seed,
                                hashfunc=xxh32)

        dt_split = []  # (shingling s, signature s, shingles) of each datatrove_sig run

        def datatrove_sig():
            out = []
            clock = time.perf_counter
            sh_s = sig_s = 0.0
            n_sh = 0
            for text in texts:
                t0 = clock()
                sh = dt.get_shingles(text)
                t1 = clock()
                if sh.size != 0:
                    out.append(dt.get_signature(sh))
                sig_s += clock() - t1
                sh_s += t1 - t0
                n_sh += sh.size
            dt_split.append((sh_s, sig_s, n_sh))
            return out

        run_count = [0]

        def datatrove_run():
            run_count[0] += 1
            step = MinhashDedupSignature(output_folder=str(tmp / f"run{run_count[0]}"), config=dt_config)
            step.run((Document(text=t, id=str(i)) for i, t in enumerate(texts)), rank=0, world_size=1)
            shutil.rmtree(tmp / f"run{run_count[0]}", ignore_errors=True)

        variants = {
            "loom signatures": loom,
            "datasketch bulk, sha1": ds_sha1,
            "datasketch bulk, xxh32": ds_xxh32,
            "datatrove get_signature": datatrove_sig,
        }

        # warm-up (spaCy's lazy load, permutations) and the correctness check
        sample = texts[:200]
        ours = signatures(sample, config)
        theirs = MinHash.bulk([list(shingles(t, n)) for t in sample], num_perm=config.num_perm, seed=config.seed,
                              hashfunc=xxh32)
        assert np.array_equal(ours, np.stack([m.hashvalues for m in theirs]).astype(np.uint32)), \
            "Loom's signatures differ from datasketch bulk with xxh32"
        for t in sample:
            dt.get_signature(dt.get_shingles(t)) if dt.get_shingles(t).size else None

        times = {name: [] for name in variants}
        for _ in range(args.reps):
            for name, fn in variants.items():
                seconds, result = timed(fn)
                times[name].append(seconds)
                del result
        # datatrove's whole step: once (it costs about as much as get_signature, plus the files)
        times["datatrove run() (+files, sort), 1 run"] = [timed(datatrove_run)[0]]

        # the split: shingling, then signatures from precomputed shingles (once each)
        sh_loom_s = min(timed(lambda: [shingles(t, n) for t in texts])[0] for _ in range(args.reps))
        sh_loom = [shingles(t, n) for t in texts]
        sig_loom_s = min(timed(lambda: MinHash.bulk(sh_loom, num_perm=config.num_perm, seed=config.seed,
                                                    hashfunc=xxh32))[0] for _ in range(args.reps))
        sig_sha1_s = min(timed(lambda: MinHash.bulk(sh_loom, num_perm=config.num_perm, seed=config.seed))[0]
                         for _ in range(args.reps))
        sh_dt_s, sig_dt_s, n_sh_dt = min(dt_split)
        n_sh_loom = sum(map(len, sh_loom))
        del sh_loom
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"texts: {len(texts):,} docs ({len(texts) // args.copies:,} x {args.copies} copies), "
          f"{n_bytes / 1e6:.1f} MB; 112 perms (14 x 8), 5-grams, seed 1; single-threaded; "
          f"reps: {args.reps} (median)")
    med = {name: statistics.median(ts) for name, ts in times.items()}
    width = max(map(len, times))
    print(f"{'variant (text -> signatures)':<{width}}  {'median s':>9}  {'min s':>7}  {'docs/s':>8}  {'MB/s':>5}  "
          f"{'loom/this':>9}")
    for name in times:
        print(f"{name:<{width}}  {med[name]:9.2f}  {min(times[name]):7.2f}  {len(texts) / med[name]:8,.0f}  "
              f"{n_bytes / med[name] / 1e6:5.2f}  {med[name] / med['loom signatures']:8.2f}x")
    print()
    print(f"{'split (fastest)':<28}  {'shingling s':>11}  {'signature s':>11}  {'shingles':>10}")
    print(f"{'loom / datasketch xxh32':<28}  {sh_loom_s:11.2f}  {sig_loom_s:11.2f}  {n_sh_loom:10,}")
    print(f"{'datasketch sha1 (same sh.)':<28}  {sh_loom_s:11.2f}  {sig_sha1_s:11.2f}  {n_sh_loom:10,}")
    print(f"{'datatrove (fastest rep)':<28}  {sh_dt_s:11.2f}  {sig_dt_s:11.2f}  {n_sh_dt:10,}")
    loom_s = med["loom signatures"]
    print(f"ratio loom/datasketch bulk sha1 docs/s: {med['datasketch bulk, sha1'] / loom_s:.2f}x; "
          f"loom/datasketch bulk xxh32: {med['datasketch bulk, xxh32'] / loom_s:.2f}x; "
          f"loom/datatrove get_signature: {med['datatrove get_signature'] / loom_s:.2f}x")


if __name__ == "__main__":
    main()
