"""PII redaction: curation/steps/pii_patterns.redact against datatrove's PIIFormatter.format on the same texts, in one
process.

    python bench/pii.py [--copies 6] [--reps 3]

Texts: every readable document of the bundled sources (examples/sources.toml, HTML-extracted the way curation
reads them: 5,262 docs, 9.2 MB), replicated --copies times (bundled_texts.corpus: copy k > 0 starts each document
5k words later and is shuffled with seed k); 6 copies make ~50 MB. Single-threaded; repetitions are interleaved
round-robin and the table shows median seconds. Variants, each from the text strings to the redacted strings:

  loom, all kinds        `redact(text, KINDS)`: email, ip (IPv4 and IPv6), phone, secret, with the counts
  loom, email + ip       `redact(text, ("email", "ip"))`: what datatrove looks for (plus IPv6)
  datatrove format       `PIIFormatter().format(text)`: its email and IPv4 regexes, public IPs only

Last line: loom's MB/s over datatrove's, all kinds and email + ip.
"""

import argparse
import statistics
import time
from collections import Counter

from bundled_texts import base_texts, corpus


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=6)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    from datatrove.pipeline.formatters.pii import PIIFormatter

    from curation.steps.pii_patterns import KINDS, redact

    texts = corpus(base_texts(), args.copies)
    n_mb = sum(len(t.encode()) for t in texts) / 1e6
    formatter = PIIFormatter()
    variants = {
        "loom, all kinds": lambda: [redact(t, KINDS) for t in texts],
        "loom, email + ip": lambda: [redact(t, ("email", "ip")) for t in texts],
        "datatrove format": lambda: [formatter.format(t) for t in texts],
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.reps):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    counts = Counter()
    for _, found in (redact(t, KINDS) for t in texts):
        counts.update(found)

    print(f"texts: {len(texts):,} docs ({args.copies} copies), {n_mb:.1f} MB; found: "
          + ", ".join(f"{kind} {counts[kind]:,}" for kind in KINDS))
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"{'variant':<18}  {'median s':>8}  {'min s':>6}  {'MB/s':>6}  {'ms/doc':>7}")
    for name in variants:
        print(f"{name:<18}  {med[name]:8.2f}  {min(times[name]):6.2f}  {n_mb / med[name]:6.1f}  "
              f"{1000 * med[name] / len(texts):7.3f}")
    dt = med["datatrove format"]
    print(f"ratio loom/datatrove MB/s: all kinds {dt / med['loom, all kinds']:.2f}x, "
          f"email + ip {dt / med['loom, email + ip']:.2f}x")


if __name__ == "__main__":
    main()
