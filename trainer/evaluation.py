"""Losses as the metrics report them: per token, summed per source and per component over ranks; and, on
evaluation steps, the validation loss over each source's held-out documents and the eval sets' loss and bpb."""

import math

import numpy as np
import torch
import torch.nn.functional as F

from trainer import metrics
from trainer.data import Batch
from trainer.distributed import Ranks, all_reduce_sum


class StepMetrics:
    """Sums that every rank adds to and one all-reduce combines: token losses per source, token counts per
    source, sequences per component."""

    def __init__(self, n_sources: int, n_components: int, device):
        self.n_sources, self.n_components = n_sources, n_components
        self.values = torch.zeros(2 * n_sources + n_components, dtype=torch.float64, device=device)

    def add(self, token_losses: torch.Tensor, batch: Batch) -> None:
        # the batch's labels come from the loader on the CPU; the sums live on the training device
        sources, components = batch.sources.reshape(-1).to(self.values.device), batch.components.to(self.values.device)
        self.values[: self.n_sources].index_add_(0, sources, token_losses.detach().reshape(-1).double())
        self.values[self.n_sources : 2 * self.n_sources].index_add_(0, sources, torch.ones_like(sources, dtype=torch.float64))
        self.values[2 * self.n_sources :].index_add_(0, components, torch.ones_like(components, dtype=torch.float64))

    def reduce(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        values = all_reduce_sum(self.values).cpu().numpy()
        n = self.n_sources
        return values[:n], values[n : 2 * n], values[2 * n :]


def per_source(names: list[str], loss_sums: np.ndarray, counts: np.ndarray) -> dict[str, float]:
    return {name: float(s / c) for name, s, c in zip(names, loss_sums, counts) if c > 0}


def forward_losses(model, batch: Batch, device, autocast: bool) -> torch.Tensor:
    inputs, targets = batch.inputs.to(device, non_blocking=True), batch.targets.to(device, non_blocking=True)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
        logits = model(inputs)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")


@torch.no_grad()
def evaluate(wrapped, model, validation: list[Batch], evals: list[Batch], run, ranks: Ranks, autocast: bool) -> dict:
    """The metrics of an evaluation step: loss per source over the held-out documents, and loss and bits per
    byte per eval set (every rank its share, then summed); `run` is the loop's Run."""
    forward = wrapped if run.config.fsdp else model  # DDP's forward would sync buffers; FSDP2's gathers shards
    forward.eval()
    loss_sums, counts = group_sums(forward, validation, len(run.sources), ranks.device, autocast)
    record = {metrics.VAL_LOSS_BY_SOURCE: per_source(run.sources, loss_sums, counts),
              metrics.VAL_LOSS: float(loss_sums.sum() / counts.sum()) if counts.sum() else None}
    sets = run.schedule.meta.get("evals", [])
    if sets:
        names = [s["name"] for s in sets]
        loss_sums, counts = group_sums(forward, evals, len(sets), ranks.device, autocast)
        if list(counts) != [s["scored_tokens"] for s in sets]:
            raise RuntimeError(f"eval sets scored {counts} tokens, the compiled mixture says "
                               f"{[s['scored_tokens'] for s in sets]}; rebuild the mixture")
        record[metrics.EVAL_LOSS_BY_SET] = per_source(names, loss_sums, counts)
        # bits per byte: the scored tokens' nats in bits, over the UTF-8 bytes they cover (see mixtures.evalsets)
        record[metrics.EVAL_BPB_BY_SET] = {s["name"]: float(total / math.log(2) / s["scored_bytes"])
                                           for s, total in zip(sets, loss_sums)}
    return record


def group_sums(forward, batches: list[Batch], n_groups: int, device, autocast: bool) -> tuple[np.ndarray, np.ndarray]:
    """Summed token losses and token counts per group (a batch's `sources`), over the counted sequences of
    every rank."""
    sums = torch.zeros(2 * n_groups, dtype=torch.float64, device=device)
    for batch in batches:
        losses = forward_losses(forward, batch, device, autocast).double()
        weights = batch.counted.to(device).repeat_interleave(batch.targets.shape[1]).double()
        groups = batch.sources.reshape(-1).to(device)
        sums[:n_groups].index_add_(0, groups, losses * weights)
        sums[n_groups:].index_add_(0, groups, weights)
    values = all_reduce_sum(sums).cpu().numpy()
    return values[:n_groups], values[n_groups:]
