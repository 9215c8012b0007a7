"""What a training run is: the mixture, the model's shape (ModelConfig, from a named size) and the optimizer's schedule
(warmup-stable-decay or cosine, over the mixture's steps or a shorter token budget of them)."""

import json
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from base.errors import UserError
from base.names import check_name
from base.store import as_path
from base.workspace import Workspace
from trainer.cooldowns import (branch_step, budget_steps, budget_switch, check_fractions, cooldown_run_name,
                               decay_start as budget_decay_start)

WSD, COSINE = "wsd", "cosine"
SCHEDULES = (WSD, COSINE)

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


def count_parameters(config: ModelConfig) -> dict[str, int]:
    """Parameters in all, and those each token passes through in matmuls (active: top_k of the experts,
    the head, not the embedding lookup), for the 6N FLOPs estimate."""
    d, width = config.d_model, config.ffn_width
    attention = 4 * d * d
    expert = 3 * d * width
    experts = config.n_experts or 1
    active_experts = config.top_k if config.n_experts else 1
    router = d * config.n_experts
    norms = 2 * d
    per_layer = attention + experts * expert + router + norms
    embed = config.vocab_size * d
    head = 0 if config.tie_embeddings else config.vocab_size * d
    total = embed + head + config.n_layers * per_layer + d
    active = config.n_layers * (attention + active_experts * expert + router) + config.vocab_size * d
    return {"total": total, "active_matmul": active}


def flops_per_token(config: ModelConfig, seq_len: int) -> float:
    """Training FLOPs per token: 6N for the matmuls plus 12 * layers * d_model * seq_len for attention (PaLM)."""
    return 6 * count_parameters(config)["active_matmul"] + 12 * config.n_layers * config.d_model * seq_len


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
    schedule: str = WSD  # wsd: warmup, flat, linear decay; cosine: warmup, then cosine decay over the rest
    decay_fraction: float | None = None  # wsd: the share of the budget's steps the LR decays over (or decay_start)
    budget_steps: int | None = None  # train to this step, the LR fully decayed there [default: the mixture's steps]
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
    cooldowns: tuple[float, ...] = ()  # wsd: after the run, a cooldown run per budget (fractions of its steps)
    branch_from: str | None = None  # start from run BRANCH_FROM's branch checkpoint at this run's decay start

    def __post_init__(self):
        """The names become folders (mixtures/MIXTURE/, runs/NAME/): checked before any folder or compute."""
        check_name("mixture", self.mixture, "--mixture")
        check_name("run", self.name, "--run-name" if self.run_name else "the default --run-name, MIXTURE-MODEL")
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise UserError(f"--{field.name.replace('_', '-')} is {value}; give a finite number")
        object.__setattr__(self, "cooldowns", check_fractions(self.cooldowns))  # a list (JSON, Python) as a tuple
        self._check_schedule()

    def _check_schedule(self) -> None:
        if self.schedule not in SCHEDULES:
            raise UserError(f"--schedule {self.schedule!r}: one of {', '.join(SCHEDULES)}")
        if self.decay_fraction is not None and self.decay_start is not None:
            raise UserError("--decay-fraction and --decay-start both place the LR decay; give one of them")
        if self.decay_fraction is not None and not 0 < self.decay_fraction < 1:
            raise UserError(f"--decay-fraction {self.decay_fraction}: the share of the steps the LR decays over, "
                            "between 0 and 1 (e.g. 0.2)")
        if self.schedule == COSINE:
            given = [name for name in ("cooldowns", "branch_from", "decay_fraction", "decay_start")
                     if getattr(self, name) not in (None, ())]
            wsd_only = [f"--{name.replace('_', '-')}" for name in given]
            if wsd_only:
                verb = "needs" if len(wsd_only) == 1 else "need"
                raise UserError(f"{' and '.join(wsd_only)} {verb} --schedule wsd: a cosine schedule decays from the "
                                "end of warmup on, so it has no stable phase to branch or place a decay in")
        if self.cooldowns and self.branch_from:
            raise UserError("--cooldowns with --branch-from: a cooldown has no cooldowns of its own; give "
                            "--cooldowns to the run it branches from")

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
    """Linear warmup, flat, then a decay from `decay_start` to the floor at the last step (`steps` - 1): linear
    (warmup-stable-decay, "wsd") or a half cosine ("cosine", whose decay starts where warmup ends)."""
    peak: float
    steps: int  # the budget: the LR reaches the floor at its last step
    warmup: int
    decay_start: int
    floor_ratio: float
    shape: str = WSD

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return self.peak * (step + 1) / self.warmup
        if step < self.decay_start:
            return self.peak
        remaining = max(1, self.steps - self.decay_start)
        progress = min(1.0, (step - self.decay_start + 1) / remaining)
        if self.shape == COSINE:
            return self.peak * (self.floor_ratio + (1 - self.floor_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
        return self.peak * (1 - (1 - self.floor_ratio) * progress)


def lr_schedule(config: TrainConfig, steps: int, midtrain_start: int) -> LRSchedule:
    """The run's LR over its budget. Warmup's default comes from the mixture's `steps` (not the budget), so that
    every budget of one mixture shares its warmup and stable phase."""
    budget = run_budget(config, steps)
    warmup = max(1, config.warmup_steps if config.warmup_steps is not None else max(1, min(100, steps // 20)))
    if config.schedule == COSINE:
        return LRSchedule(config.lr, budget, warmup, warmup, config.min_lr_ratio, COSINE)
    if config.decay_start is not None:
        decay_start = config.decay_start
    elif config.decay_fraction is None and budget == steps:
        decay_start = midtrain_start  # the 80/20 switch and the decay coincide
    else:
        decay_start = budget_decay_start(budget, decay_fraction_of(config, steps, midtrain_start))
    return LRSchedule(config.lr, budget, warmup, max(decay_start, warmup), config.min_lr_ratio)


def run_budget(config: TrainConfig, steps: int) -> int:
    """The steps the run's schedule spans: --budget-steps, at most the mixture's `steps`."""
    if config.budget_steps is None:
        return steps
    if config.budget_steps > steps:
        raise UserError(f"--budget-steps {config.budget_steps} is above the {steps} steps of mixture "
                        f"'{config.mixture}'; give at most {steps} (or build the mixture with more --steps)")
    return config.budget_steps


def decay_fraction_of(config: TrainConfig, steps: int, midtrain_start: int) -> float:
    """The share of a budget's steps its LR decays over: --decay-fraction, else the share --decay-start leaves of
    the mixture's steps, else the mixture's mid-training share."""
    if config.decay_fraction is not None:
        return config.decay_fraction
    start = config.decay_start if config.decay_start is not None else midtrain_start
    return (steps - start) / steps


@dataclass(frozen=True)
class Cooldown:
    """A shorter budget of a WSD run, trained as a run of its own from the run's branch checkpoint."""
    budget: int
    branch_step: int  # where it first differs from the run (its decay or its switch): the branch checkpoint's step
    config: TrainConfig


def cooldown_plan(config: TrainConfig, steps: int, midtrain_start: int) -> list[Cooldown]:
    """The cooldowns of `config` (a run on a mixture of `steps` steps), shortest first."""
    if not config.cooldowns:
        return []
    if midtrain_start == 0 and config.decay_fraction is None and config.decay_start is None:
        raise UserError(f"mixture '{config.mixture}' has one phase, so its LR decays over the whole run and leaves "
                        "no stable phase to branch cooldowns from; give --decay-fraction (e.g. 0.2)")
    fraction = decay_fraction_of(config, steps, midtrain_start)
    own_decay = lr_schedule(config, steps, midtrain_start).decay_start
    plan = []
    budgets = budget_steps(run_budget(config, steps), config.cooldowns)
    if len(budgets) < len(config.cooldowns):
        raise UserError(f"--cooldowns {','.join(map(str, config.cooldowns))} of {run_budget(config, steps)} steps "
                        f"gives {len(budgets)} distinct budget(s) ({', '.join(map(str, budgets)) or 'none'}) between "
                        "1 step and the run's own; give fractions that round to distinct step counts")
    for budget in budgets:
        cooldown = replace(config, run_name=cooldown_run_name(config.name, budget), budget_steps=budget,
                           decay_fraction=fraction, decay_start=None, max_steps=None, cooldowns=(),
                           branch_from=config.name)
        switch = budget_switch(budget, steps, midtrain_start)
        branch = branch_step(lr_schedule(cooldown, steps, midtrain_start).decay_start, switch)
        if branch > own_decay:  # before its branch step the cooldown must have had the run's own LRs
            raise UserError(f"the cooldown at {budget} steps would branch at step {branch}, after run "
                            f"'{config.name}' starts its own decay at step {own_decay}; give smaller --cooldowns")
        plan.append(Cooldown(budget, branch, cooldown))
    return plan
