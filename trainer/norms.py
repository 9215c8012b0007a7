"""Norms per parameter group (the embedding, each layer's attention and feed-forward, the head ...) of the
weights, their gradients and their last update, and of the buffers that move without gradients (router_bias),
so that a spike in the total can be traced to the group that caused it."""

import torch
from torch import nn

from trainer.distributed import all_reduce_sum, local

TRACKED_BUFFERS = ("router_bias",)


def group_of(name: str) -> str:
    """layers.3.attn.qkv.weight -> layers.3.attn; embed.weight -> embed; buffers keep their full name."""
    parts = name.split(".")
    if parts[-1] in TRACKED_BUFFERS:
        return name
    return ".".join(parts[:3]) if parts[0] == "layers" else parts[0]


class GroupNorms:
    def __init__(self, model: nn.Module, sharded: bool):
        self.params = list(model.named_parameters())  # a tied head shares embed.weight and is listed once
        self.buffers = [(n, b) for n, b in model.named_buffers() if n.rsplit(".", 1)[-1] in TRACKED_BUFFERS]
        self.groups = list(dict.fromkeys(group_of(n) for n, _ in self.params + self.buffers))
        index = {g: i for i, g in enumerate(self.groups)}
        device = next(model.parameters()).device
        self._param_groups = torch.tensor([index[group_of(n)] for n, _ in self.params], device=device)
        self._buffer_groups = torch.tensor([index[n] for n, _ in self.buffers], device=device, dtype=torch.long)
        self.sharded = sharded  # under FSDP each rank holds a shard of every parameter, but whole buffers

    def _squares(self, tensors: list[torch.Tensor], groups: torch.Tensor, reduce: bool) -> torch.Tensor:
        out = torch.zeros(len(self.groups), dtype=torch.float64, device=groups.device)
        if tensors:
            squares = torch.stack([t.detach().double().pow(2).sum() for t in tensors])
            out.index_add_(0, groups, squares)
        return all_reduce_sum(out) if reduce else out

    def _both(self, param_tensors, buffer_tensors) -> torch.Tensor:
        return (self._squares(param_tensors, self._param_groups, self.sharded)
                + self._squares(buffer_tensors, self._buffer_groups, False))

    def weights(self) -> torch.Tensor:
        """Squared norm of each group."""
        return self._both([local(p) for _, p in self.params], [b for _, b in self.buffers])

    def gradients(self) -> torch.Tensor:
        grads = [local(p.grad) if p.grad is not None else torch.zeros_like(local(p)) for _, p in self.params]
        return self._both(grads, [])

    def snapshot(self) -> list[torch.Tensor]:
        return [local(p).detach().clone() for _, p in self.params] + [b.detach().clone() for _, b in self.buffers]

    def updates(self, before: list[torch.Tensor]) -> torch.Tensor:
        """Squared norm of each group's change since `before` (a snapshot)."""
        now = [local(p).detach() for _, p in self.params] + [b for _, b in self.buffers]
        deltas = [a - b for a, b in zip(now, before)]
        return self._both(deltas[: len(self.params)], deltas[len(self.params):])

    def named(self, squares: torch.Tensor) -> dict[str, float]:
        return {g: float(v) ** 0.5 for g, v in zip(self.groups, squares.tolist())}


def clip_gradients(model: nn.Module, total_norm: float, max_norm: float) -> None:
    if max_norm > 0 and total_norm > max_norm:
        for p in model.parameters():
            if p.grad is not None:
                local(p.grad).mul_(max_norm / (total_norm + 1e-6))
