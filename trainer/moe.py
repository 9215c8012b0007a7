"""The mixture-of-experts feed-forward: top-k routed SwiGLU experts with auxiliary-loss-free balancing (a
`router_bias` buffer moved by the load, not by gradients), and the step's bias update over all ranks."""

import torch
from torch import nn

from trainer.config import ModelConfig
from trainer.distributed import all_reduce_sum
from trainer.feedforward import SwiGLU


class MoE(nn.Module):
    """Top-k routed SwiGLU experts. Selection uses sigmoid affinity + `router_bias`; the output is weighted by
    the affinities alone, so the bias steers load without entering the gradient (DeepSeek-V3)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.top_k, self.rate = config.top_k, config.router_bias_rate
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
        with torch.no_grad():
            self.load += torch.bincount(chosen.flatten(), minlength=len(self.experts)).to(self.load.dtype)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            token, slot = torch.nonzero(chosen == e, as_tuple=True)
            if len(token):
                out.index_add_(0, token, expert(flat[token]) * weights[token, slot, None])
        return out.view_as(x)

    @torch.no_grad()
    def update_router_bias(self, load: torch.Tensor) -> None:
        """Under-loaded experts become more likely to be chosen, over-loaded ones less; `load` is the count of
        tokens each expert received this step, summed over ranks so every rank moves the bias identically."""
        self.router_bias += self.rate * torch.sign(load.mean() - load)
        self.load.zero_()



def update_router_biases(moe_layers) -> float | None:
    """Moves each MoE layer's router_bias by its load summed over ranks; returns the worst max/mean load."""
    if not moe_layers:
        return None
    loads = all_reduce_sum(torch.stack([layer.load for layer in moe_layers]))
    for layer, load in zip(moe_layers, loads):
        layer.update_router_bias(load)
    return float((loads.max(dim=1).values / loads.mean(dim=1).clamp(min=1e-9)).max())
