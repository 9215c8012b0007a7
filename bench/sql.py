"""`loom sql` on a workspace of 1,000,000 document rows: the per-source token sum, against pandas.

Builds a manifest/documents/part-00000.parquet of N synthetic rows (the doc_stats view reads only that file), then times
`SELECT source, sum(n_tokens) FROM doc_stats GROUP BY 1` through Loom's views (a fresh connection each time, as
`loom sql` makes) and the same figure with pandas.read_parquet + groupby, which is what a user would write
otherwise. Prints the medians of 5 runs and, last, the ratio pandas time / loom time.

    python bench/sql.py [--rows 1000000]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from reports.views import connect

QUERY = "SELECT source, sum(n_tokens) FROM doc_stats GROUP BY 1 ORDER BY 1"


def write_documents(root: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    (root / "manifest" / "documents").mkdir(parents=True)
    sources = np.array(["web", "docs", "code", "fortunes", "reference"])[rng.integers(0, 5, rows)]
    pq.write_table(pa.table({
        "id": pa.array([f"{i:032x}" for i in range(rows)]), "source": sources,
        "shard": pa.array([f"curated/{s}/part-{i % 64:05d}.parquet" for i, s in enumerate(sources)]),
        "row": np.arange(rows), "lang": np.array(["en", "de", "fr"])[rng.integers(0, 3, rows)],
        "n_chars": rng.integers(100, 50_000, rows), "n_tokens": rng.integers(30, 12_000, rows),
        "quality": rng.random(rows).astype(np.float32), "quality_bucket": rng.integers(0, 5, rows).astype(np.int16),
    }), root / "manifest" / "documents" / "part-00000.parquet", compression="zstd")


def timed(fn, repeat: int = 5) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_documents(root, args.rows)
        loom_s, loom_rows = timed(lambda: connect(root)[0].sql(QUERY).fetchall())
        pandas_s, pandas_rows = timed(lambda: pd.read_parquet(root / "manifest" / "documents",
                                                              columns=["source", "n_tokens"])
                                      .groupby("source")["n_tokens"].sum().sort_index())
        assert [(s, int(n)) for s, n in loom_rows] == [(s, int(n)) for s, n in pandas_rows.items()]
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "loom", "-w", str(root), "sql", QUERY], check=True, capture_output=True)
        cli_s = time.perf_counter() - started
        print(f"rows {args.rows:,}; query: {QUERY}")
        print(f"{'tool':<34} {'seconds':>8}")
        print(f"{'loom views (fresh connection)':<34} {loom_s:>8.3f}")
        print(f"{'pandas read_parquet + groupby':<34} {pandas_s:>8.3f}")
        print(f"{'`loom sql` command, process start':<34} {cli_s:>8.3f}")
        print(f"ratio pandas/loom: {pandas_s / loom_s:.1f}x (loom answers in {loom_s:.3f}s, the command in {cli_s:.2f}s)")


if __name__ == "__main__":
    main()
