"""The mixture-of-experts feed-forward: top-k routed SwiGLU experts with auxiliary-loss-free balancing (a
`router_bias` buffer moved by the load, not by gradients), an optional sequence-wise balance loss, and the
step's bias update and load metrics over all ranks."""

from contextlib import contextmanager

import torch
from torch import nn

from trainer import metrics
from trainer.config import ModelConfig
from trainer.distributed import all_reduce_sum
from trainer.feedforward import SwiGLU


class MoE(nn.Module):
    """Top-k routed SwiGLU experts. Selection uses sigmoid affinity + `router_bias`; the output is weighted by
    the affinities alone, so the bias steers load without entering the gradient (DeepSeek-V3)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.top_k, self.rate = config.top_k, config.router_bias_rate
        self.sequence_aux_coeff = config.sequence_aux_coeff
        self.router = nn.Linear(config.d_model, config.n_experts, bias=False)
        self.experts = nn.ModuleList(SwiGLU(config.d_model, config.ffn_width) for _ in range(config.n_experts))
        self.register_buffer("router_bias", torch.zeros(config.n_experts))
        self.register_buffer("load", torch.zeros(config.n_experts), persistent=False)  # tokens per expert since the last update

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        affinity = torch.sigmoid(self.router(flat).float())
        chosen = torch.topk(affinity + self.router_bias, self.top_k, dim=-1).indices
        weights = affinity.gather(-1, chosen)
        weights = (weights / weights.sum(-1, keepdim=True)).type_as(flat)
        counts = torch.bincount(chosen.flatten(), minlength=len(self.experts))
        if self.training:
            self.load += counts.to(self.load.dtype)
        out = self._experts(flat, chosen, weights, counts).view_as(x)
        if self.training and self.sequence_aux_coeff and torch.is_grad_enabled():
            balance = sequence_balance_loss(affinity.view(*x.shape[:-1], -1), chosen.view(*x.shape[:-1], -1))
            out = AddLossGradient.apply(out, self.sequence_aux_coeff * balance)
        return out

    def _experts(self, flat, chosen, weights, counts):
        """Every expert is called every step, on the token slots routed to it (sorted by expert, split by
        count; an expert with none gets 0 rows), so every expert's weights are in the graph: DDP and FSDP2
        then reduce the same gradients on every rank whatever the routing (torchtitan's sort-and-split)."""
        order = chosen.flatten().argsort(stable=True)
        token = order // self.top_k
        parts = flat[token].split(counts.tolist())
        routed = torch.cat([expert(part) for expert, part in zip(self.experts, parts)])
        return torch.zeros_like(flat).index_add_(0, token, routed * weights.flatten()[order, None])

    @torch.no_grad()
    def update_router_bias(self, load: torch.Tensor) -> None:
        """Under-loaded experts become more likely to be chosen, over-loaded ones less; `load` is the count of
        tokens each expert received this step, summed over ranks so every rank moves the bias identically.
        As torchtitan's `_update_expert_bias` (pytorch/torchtitan b5bcd76c, torchtitan/components/optimizer/
        optimizer.py): rate * sign(mean load - load), centred so the biases keep a zero mean.
        The rate (ModelConfig.router_bias_rate) is 1e-2, not DeepSeek-V3's 1e-3: a small model at Loom's LR moves
        its router faster than 1e-3 per step can follow (measured in the commit that set it)."""
        delta = self.rate * torch.sign(load.mean() - load)
        self.router_bias += delta - delta.mean()
        self.load.zero_()


def sequence_balance_loss(affinity: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """DeepSeek-V3's complementary sequence-wise balance loss (arXiv 2412.19437, eqs. 17-20), before its
    factor alpha: per sequence, sum_i f_i * P_i with f_i = n_experts / (top_k * T) * (tokens choosing i) and
    P_i the mean over the sequence of i's affinity normalized over experts; then the mean over sequences.
    1 when balanced; `affinity` (batch, seq, n_experts), `chosen` (batch, seq, top_k)."""
    n_experts, top_k = affinity.shape[-1], chosen.shape[-1]
    hits = torch.zeros_like(affinity).scatter_(-1, chosen, 1.0)
    f = hits.mean(dim=1) * n_experts / top_k
    p = (affinity / affinity.sum(-1, keepdim=True)).mean(dim=1)
    return (f * p).sum(-1).mean()


class AddLossGradient(torch.autograd.Function):
    """Returns `output` unchanged and gives `loss` the gradient `backward_scale` in backward: the loss joins the
    step's objective without the training loop adding it (as Megatron's MoEAuxLossAutoScaler). The step's loss
    is a per-rank mean and DDP / FSDP2 average the ranks, so a per-rank mean `loss` comes out as the global mean.
    Under gradient accumulation each micro-batch's loss counts by its share of the rank's batch, as its token
    loss does (`loss_share`)."""

    backward_scale = 1.0

    @staticmethod
    def forward(ctx, output, loss):
        ctx.save_for_backward(loss)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        (loss,) = ctx.saved_tensors
        return grad_output, torch.full_like(loss, AddLossGradient.backward_scale)


@contextmanager
def loss_share(share: float):
    """Backward passes inside weigh the sequence-wise balance loss by `share`, a micro-batch's part of the
    rank's batch (Megatron's MoEAuxLossAutoScaler.set_loss_scale)."""
    AddLossGradient.backward_scale = share
    try:
        yield
    finally:
        AddLossGradient.backward_scale = 1.0


def update_router_biases(moe_layers: dict[str, MoE]) -> dict:
    """Moves each MoE layer's router_bias by its load summed over ranks; returns the step's load entries of
    metrics.jsonl (none without experts)."""
    if not moe_layers:
        return {}
    loads = all_reduce_sum(torch.stack([layer.load for layer in moe_layers.values()]))
    for layer, load in zip(moe_layers.values(), loads):
        layer.update_router_bias(load)
    return load_metrics(list(moe_layers), loads)


def load_metrics(names: list[str], loads: torch.Tensor) -> dict:
    """Per layer, each expert's fraction of the layer's token slots and the max violation, max_i load_i / mean
    load - 1 (0: balanced; at most n_experts / top_k - 1, when top_k experts take every token); and the worst."""
    fractions = loads / loads.sum(dim=1, keepdim=True).clamp(min=1)
    violation = fractions.max(dim=1).values * loads.shape[1] - 1
    return {
        metrics.EXPERT_LOAD_BY_LAYER: dict(zip(names, fractions.tolist())),
        metrics.EXPERT_MAX_VIOLATION_BY_LAYER: dict(zip(names, violation.tolist())),
        metrics.EXPERT_MAX_VIOLATION: float(violation.max()),
    }
