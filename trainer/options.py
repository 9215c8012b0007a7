"""The command-line options of a training run, made from TrainConfig's fields, shared by `loom train` and
`python -m trainer` (the torchrun entry point), and the way back from a config to those options."""

import types
import typing
from dataclasses import MISSING, fields

import click

from base.errors import UserError
from trainer.config import SCHEDULES, SIZES, TrainConfig

HELP = {
    "mixture": "A compiled mixture of the workspace (`loom mix build NAME`)",
    "run_name": "Its folder is WORKSPACE/runs/RUN_NAME: lowercase letters, digits, '_' or '-' [default: MIXTURE-MODEL]",
    "model": "Named model size", "d_model": "Override the size's width", "n_layers": "Override its depth",
    "n_heads": "Override its heads", "n_experts": "Mixture-of-experts feed-forward with N experts (0: dense)",
    "top_k": "Experts per token", "lr": "Peak learning rate", "min_lr_ratio": "Final LR as a fraction of the peak",
    "warmup_steps": "Linear warmup steps [default: 5% of the steps, at most 100]",
    "decay_start": "Step the LR decay begins [default: the mixture's mid-training switch]",
    "schedule": "wsd: linear warmup, flat, linear decay to the floor; cosine: warmup, then cosine decay to the floor",
    "decay_fraction": "wsd: share of the steps the LR decays over [default: the mixture's mid-training share]",
    "budget_steps": "Train to this step with the LR fully decayed there (a shorter token budget) "
                    "[default: the mixture's steps]",
    "weight_decay": "AdamW weight decay", "beta2": "AdamW beta2", "grad_clip": "Clip the gradient norm (0: off)",
    "max_steps": "Stop after this many steps (a short run); the LR schedule still spans the mixture",
    "checkpoint_every": "Checkpoint every N steps (and at the end)",
    "eval_every": "Validation loss on held-out sequences every N steps",
    "report_every": "Log a line and rewrite the run report every N steps",
    "resume": "Continue the run from its latest checkpoint", "fsdp": "Shard with FSDP2 instead of DDP",
    "compile": "torch.compile each transformer block (inductor; on CPU it needs g++)",
    "seed": "Model initialization seed", "device": "cpu, cuda or auto",
    "peak_tflops": "Peak TFLOP/s of one device, for MFU [default: a known GPU's dense bf16 peak; else no MFU]",
    "spike_factor": "Flag a grad norm above this times its running median",
    "micro_batches": "Split each rank's share of a step's batch into N micro-batches (gradient accumulation)",
    "moe_sequence_aux_coeff": "MoE: weight of DeepSeek-V3's sequence-wise balance loss (e.g. 1e-4) [default: 0, off]",
    "cooldowns": "wsd: then a cooldown run per shorter budget, fractions of the steps (e.g. 0.25,0.5), each "
                 "branched from this run's stable phase",
    "branch_from": "Start from run BRANCH_FROM's branch checkpoint at this run's decay start (what --cooldowns does)",
}
MAY_BE_ZERO = {"seed", "warmup_steps", "decay_start", "n_experts"}
POSITIVE = {"lr", "peak_tflops", "spike_factor", "decay_fraction"}
CHOICES = {"model": list(SIZES), "schedule": list(SCHEDULES)}
CHOICE_WORDS = {"model": "a named size", "schedule": "a schedule"}
COMMAND_FIELDS = [f for f in fields(TrainConfig) if f.name != "workspace"]


def _base_type(annotation):
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return next(a for a in typing.get_args(annotation) if a is not type(None))
    return annotation


def _is_tuple(kind) -> bool:
    return typing.get_origin(kind) is tuple


class Fractions(click.ParamType):
    """A comma list of numbers (`--cooldowns 0.25,0.5`), as a tuple; TrainConfig checks their range."""
    name = "FRACTIONS"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return tuple(float(part) for part in str(value).split(",") if part.strip())
        except ValueError:
            self.fail(f"{value!r} is not a comma list of fractions such as 0.25,0.5", param, ctx)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def train_options(command):
    """Decorates a click command with one option per TrainConfig field."""
    for field in reversed(COMMAND_FIELDS):
        kind = _base_type(field.type)
        default = None if field.default is MISSING else field.default
        if kind is bool:
            option = click.option(_flag(field.name), is_flag=True, help=HELP[field.name])
        elif field.name in CHOICES:
            option = click.option(_flag(field.name), type=click.Choice(CHOICES[field.name]), default=default,
                                  show_default=True, help=HELP[field.name])
        elif _is_tuple(kind):
            option = click.option(_flag(field.name), type=Fractions(), default=",".join(map(str, default)),
                                  help=HELP[field.name])
        else:
            param_type = {int: click.IntRange(min=0 if field.name in MAY_BE_ZERO else 1),
                          float: click.FloatRange(min=0, min_open=field.name in POSITIVE), str: str}[kind]
            # no default at all for a field without one: click takes an explicit default=None as given, and a
            # required --mixture would then go unchecked
            given_default = {} if default is None else {"default": default}
            option = click.option(_flag(field.name), type=param_type, required=field.name == "mixture",
                                  show_default=default is not None, help=HELP[field.name], **given_default)
        command = option(command)
    return command


def checked_options(options: dict) -> dict:
    """Options given from Python (loom.api's train), held to the rules the command-line options keep: a field of
    TrainConfig, of its type, in its range; each mistake one line naming the option as `loom train` spells it."""
    by_name = {field.name: field for field in COMMAND_FIELDS}
    for name, value in options.items():
        field = by_name.get(name)
        if field is None or name == "mixture":
            raise UserError(f"train has no option {name!r}; the options are TrainConfig's fields: "
                            f"{', '.join(f for f in by_name if f != 'mixture')}")
        if value is not None:
            check_option(name, _base_type(field.type), value)
    return options


def check_option(name: str, kind, value) -> None:
    flag, problem = _flag(name), None
    if kind is bool:
        problem = None if isinstance(value, bool) else "is a switch: True or False"
    elif name in CHOICES:
        problem = None if value in CHOICES[name] else f"is {CHOICE_WORDS[name]}: one of {', '.join(CHOICES[name])}"
    elif _is_tuple(kind):
        numbers = isinstance(value, (tuple, list)) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        problem = None if numbers else "is a list of fractions, e.g. (0.25, 0.5)"
    elif kind is int:
        least = 0 if name in MAY_BE_ZERO else 1
        problem = (None if isinstance(value, int) and not isinstance(value, bool) and value >= least
                   else f"is a whole number, {least} or more")
    elif kind is float:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        problem = None if number and (value > 0 if name in POSITIVE else value >= 0) else (
            f"is a number {'above' if name in POSITIVE else 'at least'} 0")
    elif kind is str:
        problem = None if isinstance(value, str) else "is text"
    if problem:
        raise UserError(f"{name} ({flag}) {problem}, not {value!r}")


def config_from_options(workspace, options: dict) -> TrainConfig:
    return TrainConfig(workspace=workspace, **{f.name: options[f.name] for f in COMMAND_FIELDS})


def config_to_args(config: TrainConfig) -> list[str]:
    """The options that give `config` again (for the processes torchrun starts)."""
    args = ["--workspace", str(config.workspace)]
    for field in COMMAND_FIELDS:
        value = getattr(config, field.name)
        if value is None or value is False or value == ():
            continue
        if isinstance(value, tuple):
            value = ",".join(map(str, value))
        args += [_flag(field.name)] if value is True else [_flag(field.name), str(value)]
    return args
