"""The SwiGLU feed-forward: a dense layer's, and each expert's of a mixture-of-experts layer."""

import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, width: int):
        super().__init__()
        self.gate_up = nn.Linear(d_model, 2 * width, bias=False)
        self.down = nn.Linear(width, d_model, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)
