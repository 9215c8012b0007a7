"""Coverage and width of approach 3's intervals (sweeps.chinchilla) on synthetic points shaped like a cooldown
ladder's: R rungs (model sizes over 1.5 decades), each with cooldowns at 1/4, 1/2 and all of 40 tokens per
parameter, loss from Hoffmann et al.'s law with multiplicative noise. For each shape, noise and interval method:
how often the 90% interval holds the true loss (of the curve) at a target 10x the largest size at 20 tokens per
parameter, the interval's median half-width, the prediction's median error, and how often the held-out check's
interval (the largest size at its largest budget, predicted from the rest) holds that point's measured loss.

    python bench/scaling_fit.py [--repeats 50]
"""

import argparse
import time
from dataclasses import replace

import numpy as np

from sweeps.chinchilla import fit_chinchilla, held_out_point

E, A, B, ALPHA, BETA = 1.69, 406.4, 410.7, 0.34, 0.28
FRACTIONS = (0.25, 0.5, 1.0)


def true_loss(n, d):
    return E + A / np.asarray(n) ** ALPHA + B / np.asarray(d) ** BETA


def ladder(rungs: int) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.logspace(6, 7.5, rungs)
    n = np.repeat(sizes, len(FRACTIONS))
    return n, n * 40 * np.tile(FRACTIONS, rungs)


def trial(n, d, noise, seed, target):
    rng = np.random.default_rng(seed)
    loss = true_loss(n, d) * np.exp(rng.normal(0.0, noise, len(n)))
    fit = fit_chinchilla(n, d, loss, interval="bootstrap")
    held = held_out_point(n, d)
    rest = np.arange(len(n)) != held
    held_fit = fit_chinchilla(n[rest], d[rest], loss[rest], interval="bootstrap")
    out = {}
    for method in ("student-t", "bootstrap"):
        law, law_held = replace(fit, interval_method=method), replace(held_fit, interval_method=method)
        lower, upper = law.interval(*target, 0.9)
        low_h, high_h = law_held.interval(n[held], d[held], 0.9, run_noise=True)
        out[method] = (lower <= true_loss(*target) <= upper, (upper - lower) / 2 / law(*target),
                       abs(law(*target) / true_loss(*target) - 1), low_h <= loss[held] <= high_h,
                       (high_h - low_h) / 2 / law_held(n[held], d[held]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    print(f"{'shape':>6} {'noise':>6} {'method':>10} {'cover':>6} {'+-width':>8} {'error':>7} "
          f"{'held cover':>10} {'held +-':>8}")
    started = time.perf_counter()
    summary = {"student-t": [], "bootstrap": []}
    for rungs in (4, 5):
        n, d = ladder(rungs)
        target = (10 * n.max(), 200 * n.max())
        for noise in (0.002, 0.003, 0.005):
            results = [trial(n, d, noise, seed, target) for seed in range(args.repeats)]
            for method in ("student-t", "bootstrap"):
                rows = np.array([r[method] for r in results], dtype=float)
                summary[method].append((rows[:, 0].mean(), np.median(rows[:, 1])))
                print(f"{rungs}x{len(FRACTIONS):<4} {noise:6.3f} {method:>10} {rows[:, 0].mean():6.0%} "
                      f"{np.median(rows[:, 1]):8.2%} {np.median(rows[:, 2]):7.2%} {rows[:, 3].mean():10.0%} "
                      f"{np.median(rows[:, 4]):8.2%}")
    t, boot = (np.array(summary[m]) for m in ("student-t", "bootstrap"))
    print(f"{time.perf_counter() - started:.1f} s; bootstrap against Student-t: coverage {boot[:, 0].min():.0%}-"
          f"{boot[:, 0].max():.0%} against {t[:, 0].min():.0%}-{t[:, 0].max():.0%}, median width "
          f"{np.median(boot[:, 1] / t[:, 1]):.2f}x")


if __name__ == "__main__":
    main()
