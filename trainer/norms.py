"""Norms per parameter group (the embedding, each layer's attention and feed-forward, the head ...) of the
weights, their gradients and their last update, and of the buffers that move without gradients (router_bias),
so that a spike in the total can be traced to the group that caused it."""

import math

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
        """A copy of every parameter and tracked buffer, for `updates`: the exact measure, which the step's
        `step_updates` (no copy) is tested against."""
        return [local(p).detach().clone() for _, p in self.params] + self.buffer_snapshot()

    def updates(self, before: list[torch.Tensor]) -> torch.Tensor:
        """Squared norm of each group's change since `before` (a snapshot)."""
        now = [local(p).detach() for _, p in self.params] + [b for _, b in self.buffers]
        deltas = [a - b for a, b in zip(now, before)]
        return self._both(deltas[: len(self.params)], deltas[len(self.params):])

    def buffer_snapshot(self) -> list[torch.Tensor]:
        return [b.detach().clone() for _, b in self.buffers]  # router biases: a few floats per layer

    def step_updates(self, optimizer: torch.optim.AdamW) -> torch.Tensor:
        """Squared norm of each group's change in the AdamW step just taken, worked out from the optimizer's
        state one parameter at a time, so that no copy of the whole model is held. Call it after
        `optimizer.step()` and before `zero_grad`: a parameter without a gradient was not stepped."""
        settings = {p: group for group in optimizer.param_groups for p in group["params"]}
        squares = [adamw_change_squared(p, settings[p], optimizer.state.get(p)) for _, p in self.params]
        out = torch.zeros(len(self.groups), dtype=torch.float64, device=self._param_groups.device)
        if squares:
            out.index_add_(0, self._param_groups, torch.stack(squares))
        return all_reduce_sum(out) if self.sharded else out

    def buffer_updates(self, before: list[torch.Tensor]) -> torch.Tensor:
        """Squared norm of each buffer's change since `before` (a `buffer_snapshot`)."""
        return self._squares([b - a for (_, b), a in zip(self.buffers, before)], self._buffer_groups, False)

    def named(self, squares: torch.Tensor) -> dict[str, float]:
        return {g: float(v) ** 0.5 for g, v in zip(self.groups, squares.tolist())}


def clip_gradients(model: nn.Module, total_norm: float, max_norm: float) -> None:
    if max_norm > 0 and total_norm > max_norm:
        for p in model.parameters():
            if p.grad is not None:
                local(p.grad).mul_(max_norm / (total_norm + 1e-6))


def adamw_change_squared(param: torch.Tensor, group: dict, state: dict | None) -> torch.Tensor:
    """The squared norm of what torch's AdamW step did to (this rank's part of) `param`, from the parameter and
    the optimizer's state after the step. Torch's order: decoupled weight decay first, p *= 1 - lr*wd, then
    p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps) =: adam; so p_old = (p + adam) / (1 - lr*wd), and the change
    p - p_old is -(adam + lr*wd*p) / (1 - lr*wd) (no difference of near-equal weights to lose digits in).
    One temporary the size of the parameter, float32 like it; the sum in float64."""
    if param.grad is None or not state:
        return torch.zeros((), dtype=torch.float64, device=local(param).device)
    lr, decay, eps = group["lr"], group["weight_decay"], group["eps"]
    beta1, beta2 = group["betas"]
    step = float(local(state["step"]))
    change = local(state["exp_avg_sq"]).sqrt()
    change.div_(math.sqrt(1 - beta2**step)).add_(eps)
    torch.div(local(state["exp_avg"]), change, out=change)
    change.mul_(lr / (1 - beta1**step))  # the Adam part
    change.add_(local(param).detach(), alpha=lr * decay).div_(1 - lr * decay)  # minus the change
    flat = change.reshape(-1)
    return torch.dot(flat, flat).double()
