"""The cpu presets at the size a user runs them: tiny-moe's run, the scaling ladder and the mixture search on the
bundled corpora.

    python bench/cpu_presets.py [--workspace WS] [--only moe|quick|ladder|search] [--workdir DIR]

On a copy of the quickstart workspace (--workspace; else one `loom quickstart` builds, about 4 minutes, untimed),
each as the README gives it:
- `loom train --mixture sample --model tiny-moe --max-steps 60`: its routers collapse early and the bias balances
  them again: the mean `expert_max_violation` of the last 10 steps (target: below 0.6); about 2 minutes.
- `loom ladder quick --mixture sample --quick`: the quick preset (3 rungs x 4 budgets), the same checks as the cpu
  preset's reported, but its only target is its wall time: under 5 minutes on 2 quiet cores.
- `loom ladder cpu --mixture sample`: the cpu preset's rungs (at least 4) with their cooldowns (points at least
  10x apart in compute) and the largest N at its largest D held out of the L(N, D) fit: its predicted against
  its measured validation loss (targets: error within 1.5%, the 90% interval within +-5% of the prediction, the
  measured value inside it); about 6 minutes on 2 quiet cores.
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

HELD_OUT_ERROR, HALF_WIDTH, SPEARMAN = 0.015, 0.05, 0.5  # issue 41's goals for the cpu ladder; the search's
QUICK_SECONDS = 300  # the quick preset on 2 idle cores
MOE_STEPS, MOE_WINDOW, MOE_BALANCED = 60, 10, 0.6  # tiny-moe's run and its target, as tests/trainer/test_moe.py's


def loom(ws: Path, *args) -> float:
    """Runs `loom -w WS ARGS` to its end (its output passed through); returns the wall seconds."""
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), *args], check=True, cwd=REPO)
    return time.monotonic() - began


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def bench_ladder(ws: Path, preset: str = "cpu") -> tuple[bool, float]:
    began = time.monotonic()
    load = open("/proc/loadavg").read().split()[0]
    seconds = loom(ws, "ladder", preset, "--mixture", "sample", "--spec", preset)
    fit = json.loads((ws / "ladders" / preset / "fit.json").read_text())
    rungs, held = fit["rungs"], fit["fits"]["val_loss"]["held_out"]
    print(f"\nladder {preset}: {len(rungs)} rungs in {seconds:.0f} s (load average {load} at the start, "
          f"{open('/proc/loadavg').read().split()[0]} at the end)")
    print(f"{'run':<24} {'tokens':>10} {'FLOPs':>9} {'val_loss':>9} status")
    for r in rungs:
        for b in r["budgets"]:
            print(f"{b['run']:<24} {b['tokens']:>10,} {b['flops']:>9.3g} {b['final']['val_loss']:>9.4f} {b['status']}")
    points = [b for r in rungs for b in r["budgets"]]
    span = max(b["flops"] for b in points) / min(b["flops"] for b in points)
    shape_ok = len(rungs) >= (4 if preset == "cpu" else 3) and span >= 10 and all(
        b["status"] == "finished" for b in points)
    within = abs(held["relative_error"]) <= HELD_OUT_ERROR
    narrow = held["half_width"] is not None and held["half_width"] <= HALF_WIDTH
    print(f"rungs over >= 10x compute: {len(rungs)} rungs, {len(points)} points over {span:.1f}x {verdict(shape_ok)}")
    print(f"held-out {held['run']}: predicted {held['predicted']:.4f}, measured {held['measured']:.4f}, error "
          f"{held['relative_error']:+.2%} (<= {HELD_OUT_ERROR:.1%} {verdict(within)}), "
          f"{fit['interval']['method']} 90% interval {held['interval']}: +-{held['half_width']:.1%} "
          f"(<= {HALF_WIDTH:.0%} {verdict(narrow)}), measured inside {verdict(held['inside'])}")
    target = fit["fits"]["val_loss"]["target"]
    print(f"target: predicted {target['predicted']:.4f} {target['interval']}")
    if preset == "quick":
        fast = time.monotonic() - began <= QUICK_SECONDS
        print(f"quick preset in {seconds:.0f} s <= {QUICK_SECONDS} s {verdict(fast)}")
        return shape_ok and fast, held["predicted"] / held["measured"]
    return shape_ok and within and narrow and held["inside"], held["predicted"] / held["measured"]


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
    parser.add_argument("--only", choices=["ladder", "quick", "search", "moe"])
    parser.add_argument("--workdir", help="where the copies go (kept); default a temporary folder")
    args = parser.parse_args()
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        quickstart = quickstart_workspace(args.workspace, workdir)
        results = {}
        for name, bench in (("moe", bench_moe), ("quick", lambda ws: bench_ladder(ws, "quick")),
                            ("ladder", bench_ladder), ("search", bench_search)):
            if args.only in (None, name):
                ws = workdir / f"{name}-ws"
                shutil.copytree(quickstart, ws)
                results[name] = bench(ws)
    last = results.get("search") or results.get("ladder") or results.get("quick") or results["moe"]
    label = ("searched / proportional objective at the confirm rung" if "search" in results
             else "held-out point predicted / measured" if "ladder" in results or "quick" in results
             else "tiny-moe's mean max violation over its last steps")
    print(f"{label}: {last[1]:.3f}")
    if not all(ok for ok, _ in results.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
