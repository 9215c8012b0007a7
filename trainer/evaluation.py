"""Losses as the metrics report them: per token, summed per source and per component over ranks; and the
validation loss over the held-out sequences."""

import numpy as np
import torch
import torch.nn.functional as F

from trainer.data import Batch
from trainer.distributed import Ranks, all_reduce_sum


class StepMetrics:
    """Sums that every rank adds to and one all-reduce combines: token losses per source, token counts per
    source, sequences per component."""

    def __init__(self, n_sources: int, n_components: int, device):
        self.n_sources, self.n_components = n_sources, n_components
        self.values = torch.zeros(2 * n_sources + n_components, dtype=torch.float64, device=device)

    def add(self, token_losses: torch.Tensor, batch: Batch) -> None:
        sources = batch.sources.reshape(-1)
        self.values[: self.n_sources].index_add_(0, sources, token_losses.detach().reshape(-1).double())
        self.values[self.n_sources : 2 * self.n_sources].index_add_(0, sources, torch.ones_like(sources, dtype=torch.float64))
        self.values[2 * self.n_sources :].index_add_(0, batch.components, torch.ones_like(batch.components, dtype=torch.float64))

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
def evaluate(wrapped, model, batches: list[Batch], run, ranks: Ranks, autocast: bool):
    """Loss per source over the held-out sequences (every rank its share, then summed); `run` is the loop's Run."""
    if not batches and not ranks.distributed:
        return {}, None
    forward = wrapped if run.config.fsdp else model  # DDP's forward would sync buffers; FSDP2's gathers shards
    forward.eval()
    sums = StepMetrics(len(run.sources), len(run.schedule.components), ranks.device)
    for batch in batches:
        sums.add(forward_losses(forward, batch, ranks.device, autocast), batch)
    for layer in model.moe_layers():
        layer.load.zero_()
    loss_sums, counts, _ = sums.reduce()
    return per_source(run.sources, loss_sums, counts), float(loss_sums.sum() / counts.sum()) if counts.sum() else None
