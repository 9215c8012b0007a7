"""The cpu presets at the size a user runs them: tiny-moe's run, the scaling ladder and the mixture search on the
bundled corpora.

    python bench/cpu_presets.py [--workspace WS] [--only moe|ladder|search] [--workdir DIR]

On a copy of the quickstart workspace (--workspace; else one `loom quickstart` builds, about 4 minutes, untimed),
each as the README gives it:
- `loom train --mixture sample --model tiny-moe --max-steps 60`: its routers collapse early and the bias balances
  them again: the mean `expert_max_violation` of the last 10 steps (target: below 0.6); about 2 minutes.
- `loom ladder cpu --mixture sample`: the cpu preset's rungs (at least 4, at least 10x apart in compute) and the
  largest one held out of the fit: its predicted against its measured validation loss (target: within 5%, inside
  the 90% interval); about 6 minutes on 2 quiet cores.
- `loom mix search best --from sample --confirm --parallel 2`: 12 proxies of the cpu ladder's smallest rung, the
  surrogate's leave-one-out Spearman (target > 0.5), and the confirm runs at the next rung: the searched mixture
  against the proportional (natural) one it started from (target: lower); about 7 minutes.
The tests prove the same code paths on a toy ladder and a toy search of the curated slice
(tests/sweeps/test_ladder.py, tests/sweeps/test_search.py) and the balancing on a smaller MoE
(tests/trainer/test_moe.py); these figures are what the presets give at their size. Each target prints PASS or MISS;
the last line is the searched mixture's objective over the proportional one's (< 1.0: the search paid), or the
ladder's predicted over measured with --only ladder, or the MoE's mean violation with --only moe. Exits 1 if a
target is missed.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from loom_job import quickstart_workspace  # noqa: E402

HELD_OUT_ERROR, SPEARMAN = 0.05, 0.5  # the targets the slow tests asserted
MOE_STEPS, MOE_WINDOW, MOE_BALANCED = 60, 10, 0.6  # tiny-moe's run and its target, as tests/trainer/test_moe.py's


def loom(ws: Path, *args) -> float:
    """Runs `loom -w WS ARGS` to its end (its output passed through); returns the wall seconds."""
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), *args], check=True, cwd=REPO)
    return time.monotonic() - began


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def bench_ladder(ws: Path) -> tuple[bool, float]:
    seconds = loom(ws, "ladder", "cpu", "--mixture", "sample")
    fit = json.loads((ws / "ladders" / "cpu" / "fit.json").read_text())
    rungs, held = fit["rungs"], fit["fits"]["val_loss"]["held_out"]
    print(f"\nladder cpu: {len(rungs)} rungs in {seconds:.0f} s")
    print(f"{'rung':<6} {'FLOPs':>9} {'val_loss':>9} status")
    for r in rungs:
        print(f"{r['rung']:<6} {r['flops']:>9.3g} {r['final']['val_loss']:>9.4f} {r['status']}")
    span = rungs[-1]["flops"] / rungs[0]["flops"]
    shape_ok = len(rungs) >= 4 and span >= 10 and all(r["status"] == "finished" for r in rungs)
    error_ok = abs(held["relative_error"]) <= HELD_OUT_ERROR and held["inside"]
    print(f"rungs >= 4 over >= 10x compute: {len(rungs)} over {span:.1f}x {verdict(shape_ok)}")
    print(f"held-out rung {held['rung']}: predicted {held['predicted']:.4f}, measured {held['measured']:.4f}, error "
          f"{held['relative_error']:+.2%}, 90% interval {held['interval']}: within {HELD_OUT_ERROR:.0%} and inside "
          f"{verdict(error_ok)}")
    return shape_ok and error_ok, held["predicted"] / held["measured"]


def bench_search(ws: Path) -> tuple[bool, float]:
    seconds = loom(ws, "mix", "search", "best", "--from", "sample", "--confirm", "--parallel", "2")
    search = json.loads((ws / "searches" / "best" / "search.json").read_text())
    held = search["surrogate"]["held_out"]
    measured = {r["mixture"]: r["objective"] for r in search["confirm"]["runs"]}
    finished = sum(p["status"] == "finished" for p in search["proxies"])
    print(f"\nmix search best: {finished} of {len(search['proxies'])} proxies finished, in {seconds:.0f} s with the "
          f"confirm runs")
    print(f"chosen: predicted {search['chosen']['predicted']:.4f} {search['chosen']['interval']}")
    print("confirm runs (objective at the next rung): "
          + ", ".join(f"{name} {value:.3f}" for name, value in sorted(measured.items(), key=lambda kv: kv[1])))
    spearman_ok = finished == 12 and held["spearman"] > SPEARMAN
    won = measured["searched"] < measured["proportional"]
    print(f"leave-one-out Spearman {held['spearman']:.3f} (MAE {held['mean_abs_error']:.4f}) > {SPEARMAN} "
          f"{verdict(spearman_ok)}")
    print(f"searched {measured['searched']:.3f} < proportional {measured['proportional']:.3f} {verdict(won)}")
    return spearman_ok and won, measured["searched"] / measured["proportional"]


def bench_moe(ws: Path) -> tuple[bool, float]:
    """`loom train` of tiny-moe on the sample mixture as a user runs it: its routers collapse early (layer 1 at the
    ceiling from about step 8 to 36) and the bias balances them again by the end."""
    seconds = loom(ws, "train", "--mixture", "sample", "--model", "tiny-moe", "--max-steps", str(MOE_STEPS),
                   "--run-name", "moe-balance", "--eval-every", "1000", "--report-every", "1000")
    metrics = (ws / "runs" / "moe-balance" / "metrics.jsonl").read_text().splitlines()
    violations = [json.loads(line)["expert_max_violation"] for line in metrics]
    at_ceiling = [step for step, v in enumerate(violations) if v >= 1.0]
    last = sum(violations[-MOE_WINDOW:]) / MOE_WINDOW
    print(f"\ntiny-moe on sample: {len(violations)} steps in {seconds:.0f} s; at the ceiling (1.0) at "
          f"{len(at_ceiling)} steps" + (f", {at_ceiling[0]}..{at_ceiling[-1]}" if at_ceiling else ""))
    ok = len(violations) == MOE_STEPS and last < MOE_BALANCED
    print(f"mean expert_max_violation over the last {MOE_WINDOW} steps {last:.3f} < {MOE_BALANCED} {verdict(ok)}")
    return ok, last


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace", help="a quickstart workspace (copied, never changed)")
    parser.add_argument("--only", choices=["ladder", "search", "moe"])
    parser.add_argument("--workdir", help="where the copies go (kept); default a temporary folder")
    args = parser.parse_args()
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        quickstart = quickstart_workspace(args.workspace, workdir)
        results = {}
        for name, bench in (("moe", bench_moe), ("ladder", bench_ladder), ("search", bench_search)):
            if args.only in (None, name):
                ws = workdir / f"{name}-ws"
                shutil.copytree(quickstart, ws)
                results[name] = bench(ws)
    last = results.get("search") or results.get("ladder") or results["moe"]
    label = ("searched / proportional objective at the confirm rung" if "search" in results
             else "held-out rung predicted / measured" if "ladder" in results
             else "tiny-moe's mean max violation over its last steps")
    print(f"{label}: {last[1]:.3f}")
    if not all(ok for ok, _ in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
