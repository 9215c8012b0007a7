"""Gradient accumulation: a rank's share of a step's batch in micro-batches, a forward and backward pass each,
gradients summed before the one optimizer step. The loss of each micro-batch is its token mean scaled by its
share of the rank's tokens (an MoE's sequence-wise balance loss too), so the summed gradient is the gradient of
the mean over all the rank's tokens: the same step as one pass over the whole share, to float rounding. Ranks
exchange gradients once, after the last micro-batch."""

from contextlib import contextmanager

from trainer.data import Batch
from trainer.distributed import in_group
from trainer.evaluation import StepMetrics, forward_losses
from trainer.moe import loss_share


def split(batch: Batch, parts: int) -> list[Batch]:
    """`parts` batches of consecutive sequences (the caller has checked that they split evenly)."""
    if parts == 1:
        return [batch]
    pieces = [t.tensor_split(parts) for t in (batch.inputs, batch.targets, batch.sources, batch.components)]
    return [Batch(batch.step, *piece) for piece in zip(*pieces)]


@contextmanager
def gradient_sync(wrapped, enabled: bool):
    """Lets the ranks' gradients be reduced in this backward pass, or only accumulated locally: DDP's `no_sync`,
    FSDP2's `set_requires_gradient_sync`; one process has nothing to reduce."""
    if enabled or not in_group():
        yield
    elif hasattr(wrapped, "no_sync"):
        with wrapped.no_sync():
            yield
    else:
        wrapped.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            wrapped.set_requires_gradient_sync(True)


def accumulate_gradients(wrapped, batch: Batch, micro_batches: int, sums: StepMetrics, device, autocast: bool) -> None:
    """Forward and backward over each micro-batch of `batch`, adding its token losses to `sums`."""
    tokens = batch.targets.numel()
    pieces = split(batch, micro_batches)
    for i, piece in enumerate(pieces):
        share = piece.targets.numel() / tokens
        with gradient_sync(wrapped, enabled=i == len(pieces) - 1), loss_share(share):
            token_losses = forward_losses(wrapped, piece, device, autocast)
            (token_losses.mean() * share).backward()
        sums.add(token_losses, piece)
