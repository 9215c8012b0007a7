"""scale.py's `--sources N` axis: the same documents as one source and split into N sources of a file each, each
curated in a fresh process (filters off, so that both jobs see every document), timed side by side. A cost per
source or shard in a stage shows as that stage's ratio; issue 42's goal is the whole job within 2x."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

from loom_job import machine_load, run_loom

GOAL = 2.0  # N sources' curate time at most this much the one source's


def write_sources(texts: list[str], n_sources: int, out: Path) -> list[Path]:
    """Source i's folder holds one jsonl.gz of the i-th of n_sources contiguous runs of the documents; ids are
    the documents' places in `texts`, whichever split, so both jobs read the same records."""
    folders = []
    for i in range(n_sources):
        lo, hi = i * len(texts) // n_sources, (i + 1) * len(texts) // n_sources
        folder = out / f"s{i:04d}"
        folder.mkdir(parents=True)
        with gzip.open(folder / "part-00000.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as f:
            for j in range(lo, hi):
                f.write(json.dumps({"id": f"doc-{j:08d}", "text": texts[j]}, ensure_ascii=False) + "\n")
        folders.append(folder)
    return folders


def sources_workspace(ws: Path, folders: list[Path], tokenizer: Path) -> Path:
    """A fresh workspace whose sources.toml has a jsonl.gz source per folder, filters off, default dedup."""
    from base.workspace import Workspace

    ws.mkdir(parents=True)
    tables = "".join(f'[[source]]\nname = "{f.name}"\nformat = "jsonl.gz"\npaths = ["{f}/*.jsonl.gz"]\n'
                     f'id_field = "id"\nfilters = []\n\n' for f in folders)
    (ws / "sources.toml").write_text(tables, encoding="utf-8")
    target = Workspace(ws).tokenizer
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(tokenizer.read_bytes())
    return ws


def time_job(ws: Path, out: Path, workers: int) -> None:
    """`scale.py --time-job`: the job in this fresh process, its times and summary to `out`."""
    out.write_text(json.dumps(run_loom(ws, workers)))


def run_split(workdir: Path, texts: list[str], n_sources: int, tokenizer: Path, workers: int, script: str,
              pair: int = 0) -> dict:
    """The documents as `n_sources` sources, curated in a fresh workspace by a fresh process (`pair` numbers the
    run's folders when the comparison is repeated)."""
    name = f"{n_sources}-{pair}"
    folders = write_sources(texts, n_sources, workdir / f"corpus-{name}")
    ws = sources_workspace(workdir / f"loom-{name}", folders, tokenizer)
    out = workdir / f"timed-{name}.json"
    load = machine_load()
    subprocess.run([sys.executable, script, "--time-job", str(ws), str(out), "--workers", str(workers)], check=True)
    result = json.loads(out.read_text())
    print(f"{n_sources} source(s): {result['total']:.1f}s (load average before {load}, after {machine_load()})",
          flush=True)
    return {**result, "sources": n_sources, "docs": len(texts)}


def report_sources(results: list[dict]) -> None:
    """The runs as (one source, N sources) pairs, in the order they ran: each pair's ratio, then the stages of the
    median pair (a machine shared with other work moves a single pair's ratio by a few tenths)."""
    pairs = sorted(zip(results[0::2], results[1::2]), key=lambda pair: pair[1]["total"] / pair[0]["total"])
    one, many = pairs[len(pairs) // 2]
    if len(pairs) > 1:
        ratios = ", ".join(f"{m['total'] / o['total']:.2f}x ({m['total']:.1f} s / {o['total']:.1f} s)"
                           for o, m in zip(results[0::2], results[1::2]))
        print(f"\n{len(pairs)} pairs, in the order they ran: {ratios}; the median pair's stages:")
    stages = list(dict.fromkeys([*one["stages"], *many["stages"]]))
    print(f"\n{'stage':<15} {'1 source':>9} {str(many['sources']) + ' sources':>12} {'ratio':>7}")
    for s in [*stages, "total"]:
        a = one["total"] if s == "total" else one["stages"].get(s, 0.0)
        b = many["total"] if s == "total" else many["stages"].get(s, 0.0)
        print(f"{s:<15} {a:>8.1f}s {b:>11.1f}s {b / max(a, 1e-3):>6.1f}x")
    ratio = many["total"] / one["total"]
    print(f"{many['docs']:,} documents as {many['sources']} sources against one: {ratio:.2f}x the time "
          f"(goal <= {GOAL}x) {'PASS' if ratio <= GOAL else 'FAIL'}; kept {one['summary']['kept']:,} and "
          f"{many['summary']['kept']:,} (duplicates {one['summary']['duplicate']:,} and {many['summary']['duplicate']:,})")
