"""`loom mix export` throughput of each format against reading the same curated tokens raw, side by side.

Export: `mixtures.export.plan_export` + `run_export` (what `loom mix export` runs, without the progress bar) of a
compiled mixture into a fresh folder per format, timed from the first chunk to export.json; its tokens are the
mixture's (every step's global batch of seq_len + 1 tokens, epochs repeated as the schedule says).
Raw: every curated part of the published generation read with pyarrow (`input_ids` only) and flattened to one
numpy array of token ids: the fastest a reader of those Parquet files gets the tokens, with no order to follow.
Each is run `--repeat` times and its best kept. Prints tokens/s of each, and last the worst format's ratio to
raw (the target is >= 0.5x).

    python bench/export.py [--workspace WS] [--mixture sample] [--repeat 3]

Without --workspace it runs `loom quickstart` into a temporary one first (a few minutes, untimed).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository first: Loom runs from this checkout

from loom.workspace import Workspace
from mixtures.export import FORMATS, plan_export, run_export


def workspace(given: str | None, tmp: Path) -> Path:
    if given:
        return Path(given).resolve()
    ws = tmp / "ws"
    subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), "quickstart"], check=True,
                   stdout=subprocess.DEVNULL)  # curates the bundled corpora and builds `sample`
    return ws


def export_seconds(ws: Workspace, mixture: str, fmt: str) -> tuple[float, int]:
    out = ws.root / "exports" / "bench" / fmt
    shutil.rmtree(out, ignore_errors=True)
    plan = plan_export(ws, mixture, fmt, out=str(out))
    began = time.perf_counter()
    run_export(plan)
    seconds = time.perf_counter() - began
    shutil.rmtree(out)
    return seconds, plan.info["tokens"]


def raw_seconds(ws: Workspace) -> tuple[float, int]:
    parts = sorted(ws.published().curated.glob("*/part-*.parquet"))
    began = time.perf_counter()
    tokens = 0
    for part in parts:
        ids = pq.read_table(part, columns=["input_ids"])["input_ids"].combine_chunks()
        tokens += len(ids.flatten().to_numpy(zero_copy_only=False))
    return time.perf_counter() - began, tokens


def best(measure, repeat: int) -> tuple[float, int]:
    runs = [measure() for _ in range(repeat)]
    return min(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace")
    parser.add_argument("--mixture", default="sample")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(workspace(args.workspace, Path(tmp)))
        raw_s, raw_tokens = best(lambda: raw_seconds(ws), args.repeat)
        raw_rate = raw_tokens / raw_s
        print(f"{'reader':<22}{'tokens':>14}{'seconds':>10}{'tokens/s':>16}{'vs raw':>9}")
        print(f"{'raw pyarrow input_ids':<22}{raw_tokens:>14,}{raw_s:>10.3f}{raw_rate:>16,.0f}{1:>8.2f}x")
        ratios = []
        for fmt in FORMATS:
            seconds, tokens = best(lambda: export_seconds(ws, args.mixture, fmt), args.repeat)
            ratios.append(tokens / seconds / raw_rate)
            print(f"{'export ' + fmt:<22}{tokens:>14,}{seconds:>10.3f}{tokens / seconds:>16,.0f}{ratios[-1]:>8.2f}x")
        print(f"worst export / raw Parquet read: {min(ratios):.2f}x (target >= 0.5x)")


if __name__ == "__main__":
    main()
