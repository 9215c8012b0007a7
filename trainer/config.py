"""What a training run is: the mixture, the model's shape (ModelConfig, from a named size) and the optimizer's schedule."""

import json
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from base.errors import UserError
from base.names import check_name
from base.store import as_path
from base.workspace import Workspace

SIZES = {  # named model sizes (ModelConfig fields); any of them can be overridden per run
    "tiny": dict(d_model=64, n_layers=2, n_heads=2),
    "small": dict(d_model=256, n_layers=4, n_heads=4),
    "medium": dict(d_model=512, n_layers=8, n_heads=8),
    "base": dict(d_model=768, n_layers=12, n_heads=12),
    "tiny-moe": dict(d_model=64, n_layers=2, n_heads=2, n_experts=4, top_k=2),
    "small-moe": dict(d_model=256, n_layers=4, n_heads=4, n_experts=8, top_k=2),
}


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int | None = None  # SwiGLU hidden width; default 8/3 d_model rounded up to a multiple of 64
    tie_embeddings: bool = True
    n_experts: int = 0  # 0: a dense feed-forward in every layer
    top_k: int = 2
    router_bias_rate: float = 1e-2  # how far the bias moves per step towards balanced load (MoE.update_router_bias)
    sequence_aux_coeff: float = 0.0  # DeepSeek-V3's sequence-wise balance loss, times this (0: off)
    rope_theta: float = 10000.0
    init_std: float = 0.02

    @property
    def ffn_width(self) -> int:
        return self.d_ff or 64 * -(-8 * self.d_model // (3 * 64))

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def model_config(size: str, vocab_size: int, **overrides) -> ModelConfig:
    """A named size, with any field overridden (None means keep the size's value)."""
    if size not in SIZES:
        raise ValueError(f"unknown model size '{size}'; sizes: {', '.join(SIZES)}")
    config = replace(ModelConfig(vocab_size=vocab_size, **SIZES[size]),
                     **{k: v for k, v in overrides.items() if v is not None})
    if config.d_model % config.n_heads or config.head_dim % 2:
        raise ValueError(f"d_model {config.d_model} must split into {config.n_heads} heads of even width")
    if config.n_experts and not 1 <= config.top_k <= config.n_experts:
        raise ValueError(f"top_k {config.top_k} must be between 1 and n_experts {config.n_experts}")
    return config


@dataclass(frozen=True)
class TrainConfig:
    workspace: Path  # a local folder, or a URL on an object store (a UPath, see base.store.as_path)
    mixture: str
    run_name: str | None = None  # runs/<run_name>/; default: <mixture>-<model>
    model: str = "tiny"
    d_model: int | None = None  # overrides of the named size
    n_layers: int | None = None
    n_heads: int | None = None
    n_experts: int | None = None
    top_k: int | None = None
    lr: float = 3e-3
    min_lr_ratio: float = 0.1  # the LR decays linearly to lr * min_lr_ratio at the last step
    warmup_steps: int | None = None  # default: 5% of the steps, at most 100
    decay_start: int | None = None  # default: the step the mixture's last phase (mid-training) begins
    weight_decay: float = 0.1
    beta2: float = 0.95
    grad_clip: float = 1.0
    max_steps: int | None = None  # stop early (a short run); the LR schedule still spans the whole mixture
    checkpoint_every: int = 100
    eval_every: int = 50
    report_every: int = 10
    resume: bool = False
    fsdp: bool = False
    compile: bool = False  # torch.compile each block (inductor)
    seed: int = 0
    device: str = "auto"  # auto: cuda when there is one, else cpu
    peak_tflops: float | None = None  # per device, for MFU; default: a known GPU's bf16 peak, else no MFU
    spike_factor: float = 3.0  # a grad norm above this times the running median is flagged
    micro_batches: int = 1  # the rank's share of each step's batch in this many forward+backward passes, one update
    moe_sequence_aux_coeff: float | None = None  # MoE: DeepSeek-V3's sequence-wise balance loss factor (0: off)

    def __post_init__(self):
        """The names become folders (mixtures/MIXTURE/, runs/NAME/): checked before any folder or compute."""
        check_name("mixture", self.mixture, "--mixture")
        check_name("run", self.name, "--run-name" if self.run_name else "the default --run-name, MIXTURE-MODEL")
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise UserError(f"--{field.name.replace('_', '-')} is {value}; give a finite number")

    @property
    def name(self) -> str:
        return self.run_name or f"{self.mixture}-{self.model}"

    @property
    def run_dir(self) -> Path:
        return Workspace(as_path(self.workspace)).run_dir(self.name)

    @property
    def mixture_dir(self) -> Path:
        return Workspace(as_path(self.workspace)).mixture_dir(self.mixture)

    def to_json(self) -> str:
        return json.dumps({k: str(v) if k == "workspace" else v for k, v in asdict(self).items()}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> "TrainConfig":
        raw = json.loads(text)
        known = {f.name for f in fields(cls)}
        return cls(**{k: as_path(v) if k == "workspace" else v for k, v in raw.items() if k in known})


@dataclass(frozen=True)
class LRSchedule:
    """Warmup-stable-decay: linear warmup, flat, then linear decay from `decay_start` to the last step."""
    peak: float
    steps: int
    warmup: int
    decay_start: int
    floor_ratio: float

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return self.peak * (step + 1) / self.warmup
        if step < self.decay_start:
            return self.peak
        remaining = max(1, self.steps - self.decay_start)
        progress = min(1.0, (step - self.decay_start + 1) / remaining)
        return self.peak * (1 - (1 - self.floor_ratio) * progress)


def lr_schedule(config: TrainConfig, steps: int, midtrain_start: int) -> LRSchedule:
    warmup = config.warmup_steps if config.warmup_steps is not None else max(1, min(100, steps // 20))
    decay_start = config.decay_start if config.decay_start is not None else midtrain_start
    return LRSchedule(config.lr, steps, max(1, warmup), max(decay_start, warmup), config.min_lr_ratio)
