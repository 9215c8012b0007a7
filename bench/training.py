"""Loom's training loop against a bare loop, side by side in one process.

Loom: `trainer.train` (what `loom train` runs) on the `sample` mixture of a curated workspace: the schedule,
the Parquet reader with its prefetch thread, per-source losses, per-group norms, checkpoints at the end.
Bare: the same model (same size, seed and AdamW settings) on random token ids already in memory, forward,
backward, clip, step, nothing else. Both on the same threads, the same number of steps; the first `--skip`
steps of each are warm-up and not counted. The bare loop runs before and after Loom's and its two medians are
averaged, so that a machine getting busier or quieter does not favour either.

    python bench/training.py [--workspace WS] [--steps 40] [--skip 5] [--model tiny]

Without --workspace it curates the bundled corpora into a temporary one first (about a minute, untimed).
Prints tokens/s of each, the data-loading fraction of Loom's step time, and the ratio last.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository first: Loom runs from this checkout

from mixtures import current_build
from trainer.config import TrainConfig
from trainer.loop import Run, make_optimizer, train
from trainer.metrics import read_metrics
from trainer.model import Transformer
from loom_job import quickstart_workspace  # noqa: E402


def bare_loop(config: TrainConfig, run: Run, steps: int) -> list[float]:
    """Seconds per step of the plain loop on in-memory random ids."""
    meta = run.schedule.meta
    torch.manual_seed(config.seed)
    model = Transformer(run.model_config, meta["seq_len"])
    optimizer = make_optimizer(model, config)
    ids = torch.randint(0, meta["vocab_size"], (steps, meta["global_batch"], meta["seq_len"] + 1))
    times = []
    for step in range(steps):
        began = time.perf_counter()
        logits = model(ids[step, :, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[step, :, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - began)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--skip", type=int, default=5)
    parser.add_argument("--model", default="tiny")
    args = parser.parse_args()
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}; {os.cpu_count()} cores, "
          f"{torch.get_num_threads()} torch threads")
    with tempfile.TemporaryDirectory() as tmp:
        ws = quickstart_workspace(args.workspace, Path(tmp))
        config = TrainConfig(ws, "sample", run_name=f"bench-{int(time.time())}", model=args.model,
                             max_steps=args.steps, checkpoint_every=10**9, eval_every=10**9, report_every=10**9)
        run = Run(config, current_build(config.mixture_dir))
        tokens_per_step = run.schedule.global_batch * run.schedule.meta["seq_len"]
        before = statistics.median(bare_loop(config, run, args.steps)[args.skip:])
        train(config, log=lambda *_: None)
        after = statistics.median(bare_loop(config, run, args.steps)[args.skip:])
        records = read_metrics(config.run_dir)[args.skip:]
        loom_step = statistics.median(r["step_seconds"] for r in records)
        data_fraction = sum(r["data_wait_fraction"] * r["step_seconds"] for r in records) / sum(r["step_seconds"] for r in records)
        known = [r["mfu"] for r in records if r.get("mfu") is not None]  # null without a known peak
        mfu = f"{statistics.median(known):.1%}" if known else "-"
        tflops = statistics.median(r["flops_per_second"] for r in records) / 1e12
    bare_step = (before + after) / 2
    rows = [("bare loop (before)", before), ("loom train", loom_step), ("bare loop (after)", after)]
    print(f"\nmodel {args.model}: {run.model_config.__dict__}")
    print(f"{args.steps} steps of {tokens_per_step:,} tokens, first {args.skip} not counted; median step times")
    print(f"{'':<20}{'s/step':>10}{'tokens/s':>12}")
    for name, seconds in rows:
        print(f"{name:<20}{seconds:>10.4f}{tokens_per_step / seconds:>12,.0f}")
    print(f"loom: data loading {data_fraction:.2%} of step time, {tflops:.3g} TFLOP/s achieved, MFU {mfu} "
          f"({records[-1]['peak_source']})")
    print(json.dumps({"loom_tokens_per_second": tokens_per_step / loom_step,
                      "bare_tokens_per_second": tokens_per_step / bare_step, "data_fraction": data_fraction}))
    print(f"ratio loom/bare tokens per second: {bare_step / loom_step:.3f}x; data loading {data_fraction:.2%} of step time")


if __name__ == "__main__":
    main()
