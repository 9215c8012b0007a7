"""Peak memory of a training step's optimizer update and its update norms: a copy of every parameter before the
step (the old way) against the norms from AdamW's state one parameter at a time (GroupNorms.step_updates).

Each way runs in a fresh process on CPU. Large tensors are put in their own mmap (MALLOC_MMAP_THRESHOLD_) so that
a freed tensor leaves the resident set at once; the peak resident set (VmHWM, reset through /proc/self/clear_refs)
over the optimizer step and the norms, less the resident set before them, is the memory they took.

    python bench/update_norms_memory.py [--model small] [--vocab 8192]
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

WAYS = ("step-only", "copy", "adamw-state")


def resident_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def measure(way: str, model_name: str, vocab: int) -> None:
    import torch
    import torch.nn.functional as F

    from trainer.config import TrainConfig, model_config
    from trainer.loop import make_optimizer
    from trainer.model import Transformer
    from trainer.norms import GroupNorms

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Transformer(model_config(model_name, vocab), 64)
    norms = GroupNorms(model, sharded=False)
    optimizer = make_optimizer(model, TrainConfig(workspace=".", mixture="m"))
    ids = torch.randint(0, vocab, (2, 65))
    for step in range(2):  # the first step creates AdamW's state; the second is measured
        F.cross_entropy(model(ids[:, :-1]).reshape(-1, vocab), ids[:, 1:].reshape(-1)).backward()
        if step == 1:
            Path("/proc/self/clear_refs").write_text("5")
            base = resident_kib("VmRSS")
        before = norms.snapshot() if way == "copy" else norms.buffer_snapshot()
        optimizer.step()
        if way == "copy":
            norms.named(norms.updates(before))
        elif way == "adamw-state":
            norms.named(norms.step_updates(optimizer) + norms.buffer_updates(before))
        del before
        optimizer.zero_grad(set_to_none=True)
    peak = resident_kib("VmHWM") - base
    parameters = sum(p.numel() for p in model.parameters())
    largest = max(p.numel() for p in model.parameters())
    print(f"{way:<12} peak over step+norms {peak / 1024:7.1f} MiB   (parameters {parameters:,} = "
          f"{parameters * 4 / 2**20:.1f} MiB fp32, largest {largest * 4 / 2**20:.1f} MiB)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="small")
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--way", choices=WAYS)
    args = parser.parse_args()
    if args.way:
        measure(args.way, args.model, args.vocab)
        return
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536",
           "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    for way in WAYS:
        subprocess.run([sys.executable, __file__, "--way", way, "--model", args.model, "--vocab", str(args.vocab)],
                       env=env, check=True)


if __name__ == "__main__":
    main()
