"""A ladder spec made concrete for one mixture: each rung's model, tokens (whole steps of the mixture's batch),
FLOPs (the trainer's formula: 6N plus attention), LR and warmup, its budgets (the cooldowns' shorter ones, then
its own run), and the target run with its FLOPs.

Every rung trains on the same mixture with the same phase fractions; its budget is its own, but its mixture
stands in for the target's (`target_tokens`, simulated epoching): each component's pool is cut to
rung tokens / target tokens, so a rung reads every component as many times as the target run would."""

import dataclasses
import math
from dataclasses import dataclass

from base.errors import UserError
from mixtures import MixtureSpec
from sweeps.spec import LadderSpec, Rung, Shape
from trainer.config import ModelConfig, count_parameters, flops_per_token, model_config
from trainer.cooldowns import budget_steps, cooldown_run_name, decay_start

MIN_STEPS = 10  # fewer and the warmup alone is most of a rung (or of a budget)
ONE_PHASE_DECAY = 0.2  # a WSD cooldown's share of its budget where the mixture has no mid-training phase to follow


@dataclass(frozen=True)
class Budget:
    """One (N, D) point of a rung: a cooldown's shorter budget, or the rung's own run (the longest)."""
    steps: int
    tokens: int
    flops: float
    run: str
    branch_step: int | None  # the stable-phase step a cooldown branches at; None: the rung's own run


@dataclass(frozen=True)
class RungPlan:
    rung: str
    name: str  # the rung's mixture and run: mixtures/NAME/ and runs/NAME/ (LADDER-RUNG)
    shape: Shape
    parameters: int
    active_parameters: int  # the N of 6N: the matmuls a token passes through (experts: top_k of them)
    steps: int
    tokens: int
    flops_per_token: float
    flops: float
    lr: float
    warmup_steps: int
    cooldown_steps: tuple[int, ...] = ()  # the shorter budgets, ascending; (): the rung's own run only
    decay_fraction: float = 0.2  # the share of a budget its LR decays over (the cooldowns' branch points)

    @property
    def tokens_per_parameter(self) -> float:
        return self.tokens / self.active_parameters

    @property
    def budgets(self) -> tuple[Budget, ...]:
        """Ascending: each cooldown's, then the rung's own run."""
        per_step = self.tokens // self.steps
        cooldowns = tuple(Budget(s, s * per_step, s * per_step * self.flops_per_token, cooldown_run_name(self.name, s),
                                 decay_start(s, self.decay_fraction)) for s in self.cooldown_steps)
        return (*cooldowns, Budget(self.steps, self.tokens, self.flops, self.name, None))


@dataclass(frozen=True)
class TargetPlan:
    flops: float
    tokens: int
    active_parameters: int
    shape: Shape | None


@dataclass(frozen=True)
class LadderPlan:
    name: str
    mixture: str
    seq_len: int
    global_batch: int
    min_lr_ratio: float
    rungs: tuple[RungPlan, ...]  # in order of compute
    target: TargetPlan
    cooldowns: tuple[float, ...] = ()  # the spec's fractions: `loom train --cooldowns`
    decay_fraction: float | None = None  # the spec's: `loom train --decay-fraction`; None: the mixture's

    def rung_mixture(self, base: MixtureSpec, rung: RungPlan) -> MixtureSpec:
        """The mixture a rung trains on: the ladder's mixture with the rung's steps, standing in for the target."""
        return dataclasses.replace(base, name=rung.name, seq_len=self.seq_len, global_batch=self.global_batch,
                                   steps=rung.steps, total_tokens=None, target_tokens=self.target.tokens)


def model_of(shape: Shape, vocab_size: int) -> ModelConfig:
    return model_config("tiny", vocab_size, **dataclasses.asdict(shape))


def plan_ladder(spec: LadderSpec, name: str, mixture: MixtureSpec, vocab_size: int) -> LadderPlan:
    seq_len = spec.seq_len or mixture.seq_len
    global_batch = spec.global_batch or mixture.global_batch
    decay = spec.decay_fraction or mixture_decay_fraction(mixture)
    rungs = sorted((_with_cooldowns(_plan_rung(spec, name, rung, vocab_size, seq_len, global_batch), spec, decay)
                    for rung in spec.rungs), key=lambda r: r.flops)
    for smaller, larger in zip(rungs, rungs[1:]):
        if larger.flops <= smaller.flops * 1.05:
            raise UserError(f"rungs '{smaller.rung}' and '{larger.rung}' need the same compute ({smaller.flops:.3g} "
                            "FLOPs); a ladder needs rungs of growing compute: change a shape or its tokens")
    target = _plan_target(spec, vocab_size, seq_len)
    for rung in rungs:
        if rung.tokens > target.tokens or rung.flops >= target.flops:
            raise UserError(f"rung '{rung.rung}' ({rung.tokens:,} tokens, {rung.flops:.3g} FLOPs) is not "
                            f"smaller than the target ({target.tokens:,} tokens, {target.flops:.3g} FLOPs); a "
                            "ladder predicts a bigger run: enlarge [target] or shrink the rungs")
    given = spec.decay_fraction
    if given is None and spec.cooldowns and len(mixture.phases) == 1:
        given = ONE_PHASE_DECAY  # the trainer's default would decay a one-phase run from its warmup on
    return LadderPlan(name, mixture.name, seq_len, global_batch, spec.lr.min_lr_ratio, tuple(rungs), target,
                      spec.cooldowns, given)


def mixture_decay_fraction(mixture: MixtureSpec) -> float:
    """The share of a run its LR decays over when the spec sets none: the mixture's last phase (mid-training);
    a mixture of one phase has none to follow, and its cooldowns decay over ONE_PHASE_DECAY of each budget."""
    return mixture.phases[-1].fraction if len(mixture.phases) > 1 else ONE_PHASE_DECAY


def _with_cooldowns(rung: RungPlan, spec: LadderSpec, decay: float) -> RungPlan:
    """The rung with its shorter budgets, each checked: enough steps, a stable step to branch from."""
    shorter = budget_steps(rung.steps, spec.cooldowns)
    planned = dataclasses.replace(rung, cooldown_steps=tuple(shorter), decay_fraction=decay)
    if len(shorter) < len(spec.cooldowns):
        raise UserError(f"rung '{rung.rung}' ({rung.steps} steps) has budgets {', '.join(map(str, shorter))} "
                        f"from cooldowns {list(spec.cooldowns)}: two fractions round to the same step; give "
                        "fractions further apart or the rung more tokens")
    if shorter and shorter[0] < MIN_STEPS:
        raise UserError(f"rung '{rung.rung}': its cooldown at {min(spec.cooldowns):g} of {rung.steps} steps gets "
                        f"{shorter[0]} steps; at least {MIN_STEPS} are needed: raise the smallest `cooldowns` "
                        "fraction, or the rung's tokens (or tokens_per_parameter)")
    for budget in shorter:
        if _branch_step(budget, decay) <= rung.warmup_steps:
            raise UserError(f"rung '{rung.rung}': a cooldown at step {budget} with decay fraction {decay:g} branches "
                            f"before its warmup of {rung.warmup_steps} steps ends; set a smaller `decay_fraction` "
                            "in the ladder spec, or larger `cooldowns`")
    return planned


def _branch_step(budget: int, decay: float) -> int:
    try:
        return decay_start(budget, decay)
    except UserError:  # no stable step at all
        return 0


def _plan_rung(spec: LadderSpec, ladder: str, rung: Rung, vocab_size: int, seq_len: int,
               global_batch: int) -> RungPlan:
    config = model_of(rung.shape, vocab_size)
    counts = count_parameters(config)
    wanted = rung.tokens or round(spec.tokens_per_parameter * counts["active_matmul"])
    steps = round(wanted / (seq_len * global_batch))
    if steps < MIN_STEPS:
        raise UserError(f"rung '{rung.name}' gets {steps} steps of {global_batch} x {seq_len} tokens "
                        f"({wanted:,} tokens); at least {MIN_STEPS} are needed: raise its tokens (or "
                        "tokens_per_parameter), or lower global_batch or seq_len in the ladder spec")
    tokens = steps * seq_len * global_batch
    per_token = flops_per_token(config, seq_len)
    return RungPlan(rung.name, f"{ladder}-{rung.name}", rung.shape,
                    counts["total"], counts["active_matmul"], steps, tokens, per_token, per_token * tokens,
                    rung.lr or spec.lr.lr(rung.shape.d_model),
                    rung.warmup_steps if rung.warmup_steps is not None else spec.lr.warmup(steps))


def _plan_target(spec: LadderSpec, vocab_size: int, seq_len: int) -> TargetPlan:
    target = spec.target
    if target.shape is None:  # C = 6 N D with D = tokens_per_parameter x N
        tokens = round(math.sqrt(target.flops * spec.tokens_per_parameter / 6))
        return TargetPlan(target.flops, tokens, round(tokens / spec.tokens_per_parameter), None)
    config = model_of(target.shape, vocab_size)
    active = count_parameters(config)["active_matmul"]
    tokens = target.tokens or round(spec.tokens_per_parameter * active)
    return TargetPlan(flops_per_token(config, seq_len) * tokens, tokens, active, target.shape)
