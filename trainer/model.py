"""A decoder-only transformer: RoPE, RMSNorm, SwiGLU, causal SDPA, and an optional mixture-of-experts
feed-forward (trainer.moe)."""

import torch
import torch.nn.functional as F
from torch import nn

from trainer.config import ModelConfig
from trainer.feedforward import SwiGLU
from trainer.moe import MoE


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps).type_as(x)


def rope_tables(seq_len: int, head_dim: int, theta: float, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    """x: (batch, heads, seq, head_dim); rotates each (even, odd) pair of channels by its position's angle."""
    even, odd = x[..., 0::2], x[..., 1::2]
    cos, sin = cos[: x.shape[-2]].to(x.dtype), sin[: x.shape[-2]].to(x.dtype)
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.head_dim = config.n_heads, config.head_dim
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=False)
        self.out = nn.Linear(config.d_model, config.d_model, bias=False)

    def forward(self, x, cos, sin):
        batch, seq, _ = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(batch, seq, -1))


class Block(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.attn_norm, self.ffn_norm = RMSNorm(config.d_model), RMSNorm(config.d_model)
        self.attn = Attention(config)
        self.ffn = MoE(config) if config.n_experts else SwiGLU(config.d_model, config.ffn_width)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class Transformer(nn.Module):
    def __init__(self, config: ModelConfig, max_seq_len: int):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.head.weight = self.embed.weight
        cos, sin = rope_tables(max_seq_len, config.head_dim, config.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by depth
            if name.endswith(("out.weight", "down.weight")):
                nn.init.normal_(p, std=config.init_std / (2 * config.n_layers) ** 0.5)

    def _init(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=self.config.init_std)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, self.rope_cos, self.rope_sin)
        return self.head(self.norm(x))

    def moe_layers(self) -> list[MoE]:
        return list(self.named_moe_layers().values())

    def named_moe_layers(self) -> dict[str, MoE]:
        """Each MoE feed-forward by its name in the model ("layers.0.ffn"), as the metrics name it."""
        return {f"layers.{i}.ffn": layer.ffn for i, layer in enumerate(self.layers) if isinstance(layer.ffn, MoE)}
