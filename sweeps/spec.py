"""Ladder specs: a TOML file naming the rungs (model shapes), how many tokens each trains on, the cooldowns that
give each rung shorter token budgets, the LR rule, the target run to predict and how the fit is made. Built-in
presets live in examples/ladders/ (quick, cpu, gpu)."""

from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from base.errors import UserError, reject_unknown_keys
from base.names import check_name
from base.small_files import read_toml
from base.store import as_path
from base.workspace import SPEC_GLOB
from mixtures.spec import is_finite_number

SHAPE_KEYS = ("d_model", "n_layers", "n_heads", "n_experts", "top_k")
RUNG_KEYS = {"name", *SHAPE_KEYS, "tokens", "lr", "warmup_steps"}
TARGET_KEYS = {*SHAPE_KEYS, "tokens", "flops"}
SPEC_KEYS = {"name", "tokens_per_parameter", "seq_len", "global_batch", "cooldowns", "decay_fraction", "rung",
             "target", "lr", "fit", "train"}
# `loom train` options a ladder sets itself, per rung: the spec cannot set them under [train]
SET_PER_RUNG = {"workspace", "mixture", "run_name", "model", *SHAPE_KEYS, "lr", "warmup_steps", "min_lr_ratio",
                "resume", "max_steps", "decay_start", "cooldowns", "decay_fraction", "budget_steps", "branch_from"}
INTERVALS = ("student-t", "bootstrap")
AUTO = "auto"  # with cooldowns: the bootstrap where a fit has the points for it, else Student-t


@dataclass(frozen=True)
class Shape:
    d_model: int
    n_layers: int
    n_heads: int
    n_experts: int = 0  # 0: dense
    top_k: int = 2


@dataclass(frozen=True)
class Rung:
    name: str
    shape: Shape
    tokens: int | None = None  # default: tokens_per_parameter x active parameters
    lr: float | None = None  # default: the [lr] rule
    warmup_steps: int | None = None  # default: the [lr] rule


@dataclass(frozen=True)
class Target:
    """The run to predict: a shape (and tokens, default tokens_per_parameter x its active parameters), or FLOPs."""
    shape: Shape | None = None
    tokens: int | None = None
    flops: float | None = None


@dataclass(frozen=True)
class LRRule:
    """lr = base x (base_width / d_model) ** width_exponent: the 1/width rule of muP-style transfer with exponent 1
    (a wider model takes a proportionally smaller step); warmup is a fraction of the rung's steps."""
    base: float = 3e-3
    base_width: int = 64
    width_exponent: float = 1.0
    warmup_fraction: float = 0.05
    min_lr_ratio: float = 0.1

    def lr(self, d_model: int) -> float:
        return self.base * (self.base_width / d_model) ** self.width_exponent

    def warmup(self, steps: int) -> int:
        return max(1, round(self.warmup_fraction * steps))


@dataclass(frozen=True)
class FitConfig:
    l_inf: float | None = None  # None: free; a number pins it
    huber_delta: float = 1e-3
    interval: str = "student-t"  # with cooldowns: AUTO unless the spec sets it
    confidence: float = 0.9
    noise_floor: float = 0.002  # least residual scale in log-loss: the run-to-run noise of a final loss


@dataclass(frozen=True)
class LadderSpec:
    rungs: tuple[Rung, ...]
    target: Target
    name: str = "ladder"
    tokens_per_parameter: float = 20.0
    seq_len: int | None = None  # default: the mixture's
    global_batch: int | None = None  # default: the mixture's
    # fractions of each rung's steps, each a cooldown branched from the rung's stable phase: a shorter budget, a
    # point more for the fit (the rung's own run is the longest budget); (): the rungs' final losses only
    cooldowns: tuple[float, ...] = ()
    decay_fraction: float | None = None  # the share of a budget its LR decays over; None: the mixture's mid-training
    lr: LRRule = LRRule()
    fit: FitConfig = FitConfig()
    train: dict = field(default_factory=dict)  # more `loom train` options for every rung (eval_every, device, ...)


def load_ladder_spec(path: Path) -> LadderSpec:
    return parse_ladder_spec(read_toml(path), str(path))


def find_ladder_spec(name_or_path: str, builtin: Path) -> Path:
    """A path to a .toml spec, or the name of a built-in preset."""
    given = as_path(name_or_path)
    if given.suffix == ".toml":
        if not given.is_file():
            raise UserError(f"no ladder spec at {given}; give a path to a .toml file or a preset "
                            f"({', '.join(presets(builtin))})")
        return given
    if (builtin / f"{name_or_path}.toml").is_file():
        return builtin / f"{name_or_path}.toml"
    raise UserError(f"no ladder preset named '{name_or_path}'; presets: {', '.join(presets(builtin))} "
                    "(or give a path to a .toml spec)")


def presets(builtin: Path) -> list[str]:
    return sorted(p.stem for p in builtin.glob(SPEC_GLOB))


def parse_ladder_spec(raw: dict, where: str) -> LadderSpec:
    reject_unknown_keys(raw, SPEC_KEYS, where)
    rungs = raw.get("rung")
    if not isinstance(rungs, list) or len(rungs) < 3:
        raise UserError(f"{where}: give at least 3 [[rung]] tables (a fit and a held-out rung need them)")
    parsed = tuple(_rung(entry, i, f"{where}: rung #{i + 1}") for i, entry in enumerate(rungs))
    names = [r.name for r in parsed]
    if len(set(names)) != len(names):
        raise UserError(f"{where}: rung names must be unique ({', '.join(names)})")
    values = {}
    if "tokens_per_parameter" in raw:
        values["tokens_per_parameter"] = _positive(raw["tokens_per_parameter"], f"{where}: `tokens_per_parameter`")
    for key in ("seq_len", "global_batch"):
        if key in raw:
            values[key] = _whole(raw[key], f"{where}: `{key}`")
    if "name" in raw:
        values["name"] = check_name("ladder", raw["name"], f"{where}: `name`")
    if "cooldowns" in raw:
        values["cooldowns"] = _cooldowns(raw["cooldowns"], f"{where}: `cooldowns`")
    if "decay_fraction" in raw:
        values["decay_fraction"] = _fraction(raw["decay_fraction"], f"{where}: `decay_fraction`")
    lr = _table(LRRule, raw.get("lr", {}), f"{where}: [lr]")
    if lr.base <= 0 or lr.base_width <= 0:
        raise UserError(f"{where}: [lr] `base` must be positive (the peak LR at base_width), and base_width too")
    fit = _fit(raw.get("fit", {}), f"{where}: [fit]", bool(values.get("cooldowns")))
    if values.get("cooldowns") and "interval" not in raw.get("fit", {}):
        fit = replace(fit, interval=AUTO)
    return LadderSpec(rungs=parsed, target=_target(raw.get("target"), f"{where}: [target]"), lr=lr, fit=fit,
                      train=_train(raw.get("train", {}), where), **values)


def _rung(entry, index: int, where: str) -> Rung:
    if not isinstance(entry, dict):
        raise UserError(f"{where}: a rung is a table with d_model, n_layers, n_heads (and optionally n_experts, "
                        "top_k, tokens, lr, warmup_steps, name)")
    reject_unknown_keys(entry, RUNG_KEYS, where)
    name = check_name("rung", entry.get("name", f"r{index}"), f"{where}: `name`")
    tokens = _whole(entry["tokens"], f"{where}: `tokens`") if "tokens" in entry else None
    lr = _positive(entry["lr"], f"{where}: `lr`") if "lr" in entry else None
    warmup = _whole(entry["warmup_steps"], f"{where}: `warmup_steps`", 0) if "warmup_steps" in entry else None
    return Rung(name, _shape(entry, where), tokens, lr, warmup)


def _shape(entry: dict, where: str) -> Shape:
    missing = [k for k in ("d_model", "n_layers", "n_heads") if k not in entry]
    if missing:
        raise UserError(f"{where}: `{missing[0]}` is missing; a shape needs d_model, n_layers and n_heads")
    values = {k: _whole(entry[k], f"{where}: `{k}`", 0 if k == "n_experts" else 1) for k in SHAPE_KEYS if k in entry}
    shape = Shape(**values)
    if shape.d_model % shape.n_heads or (shape.d_model // shape.n_heads) % 2:
        raise UserError(f"{where}: d_model {shape.d_model} must split into {shape.n_heads} heads of even width")
    if shape.n_experts and not 1 <= shape.top_k <= shape.n_experts:
        raise UserError(f"{where}: top_k {shape.top_k} must be between 1 and n_experts {shape.n_experts}")
    return shape


def _target(entry, where: str) -> Target:
    if not isinstance(entry, dict):
        raise UserError(f"{where} is missing: give the run to predict, a shape (d_model, n_layers, n_heads, "
                        "optionally tokens) or `flops`")
    reject_unknown_keys(entry, TARGET_KEYS, where)
    has_shape = any(k in entry for k in SHAPE_KEYS)
    if has_shape == ("flops" in entry):
        raise UserError(f"{where}: give a shape (d_model, n_layers, n_heads; optionally tokens) or `flops`, "
                        "exactly one of them")
    if "flops" in entry:
        if "tokens" in entry:
            raise UserError(f"{where}: with `flops` the tokens follow from tokens_per_parameter; drop `tokens`")
        return Target(flops=_positive(entry["flops"], f"{where}: `flops`"))
    tokens = _whole(entry["tokens"], f"{where}: `tokens`") if "tokens" in entry else None
    return Target(shape=_shape(entry, where), tokens=tokens)


def _fit(entry, where: str, cooldowns: bool) -> FitConfig:
    if not isinstance(entry, dict):
        raise UserError(f"{where} must be a table")
    entry = dict(entry)
    l_inf = entry.pop("l_inf", "free")
    if l_inf != "free" and not (is_finite_number(l_inf) and l_inf >= 0):
        raise UserError(f"{where}: `l_inf` = {l_inf!r}; give \"free\" or the loss to pin it at (a number >= 0)")
    config = _table(FitConfig, entry, where, skip={"l_inf"})
    known = (*INTERVALS, AUTO) if cooldowns else INTERVALS
    if config.interval not in known:
        raise UserError(f"{where}: `interval` = {config.interval!r}; use one of {', '.join(known)}"
                        + ("" if cooldowns else f" ({AUTO} needs `cooldowns`)"))
    if cooldowns and l_inf != "free":
        raise UserError(f"{where}: `l_inf` = {l_inf!r} pins the power law of final points; with `cooldowns` the "
                        "fit is L(N, D), whose E is always fitted: drop `l_inf`")
    if not 0 < config.confidence < 1:
        raise UserError(f"{where}: `confidence` = {config.confidence}; give a level in (0, 1), e.g. 0.9")
    return FitConfig(**{**config.__dict__, "l_inf": None if l_inf == "free" else float(l_inf)})


def _train(entry, where: str) -> dict:
    from trainer.config import TrainConfig

    if not isinstance(entry, dict):
        raise UserError(f"{where}: [train] must be a table of `loom train` options")
    known = {f.name for f in fields(TrainConfig)} - SET_PER_RUNG
    reject_unknown_keys(entry, known, f"{where}: [train]")
    return dict(entry)


def _table(cls, entry, where: str, skip=frozenset()):
    """A dataclass of numbers (and strings) from a TOML table, each value checked against its default's type."""
    if not isinstance(entry, dict):
        raise UserError(f"{where} must be a table")
    known = {f.name: f.default for f in fields(cls) if f.name not in skip}
    reject_unknown_keys(entry, known, where)
    for key, value in entry.items():
        default = known[key]
        if isinstance(default, str):
            if not isinstance(value, str):
                raise UserError(f"{where}: `{key}` must be a string")
        elif isinstance(default, int) and not isinstance(default, bool):
            _whole(value, f"{where}: `{key}`")
        elif not is_finite_number(value) or value < 0:
            raise UserError(f"{where}: `{key}` = {value!r} must be a finite number >= 0")
    return cls(**entry)


def _cooldowns(value, where: str) -> tuple[float, ...]:
    from trainer.cooldowns import check_fractions

    if not isinstance(value, list):
        raise UserError(f"{where} = {value!r}; give a list of fractions of each rung's steps, e.g. [0.25, 0.5]")
    try:
        return tuple(float(f) for f in check_fractions(value))
    except UserError as err:  # its words name the CLI option; here it is the spec's key
        raise UserError(f"{where}: {str(err).replace('--cooldowns ', '', 1)}") from None


def _fraction(value, where: str) -> float:
    if not is_finite_number(value) or not 0 < value < 1:
        raise UserError(f"{where} = {value!r}; give the share of each budget the LR decays over, between 0 and 1 "
                        "(e.g. 0.2), or leave it out for the mixture's mid-training share")
    return float(value)


def _whole(value, where: str, at_least: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < at_least:
        raise UserError(f"{where} must be a whole number of at least {at_least}")
    return value


def _positive(value, where: str) -> float:
    if not is_finite_number(value) or value <= 0:
        raise UserError(f"{where} = {value!r} must be a positive, finite number")
    return float(value)
