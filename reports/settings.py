"""A training run's settings as the run and compare pages show them: what it trained with (run.json's config and
model, and the fingerprints of its mixture's build), in tables of one column per run."""

import json
from pathlib import Path

from base.small_files import read_text
from base.store import as_path
from base.workspace import Workspace
from mixtures.compiled import current_build
from reports.html import esc
from trainer.config import ModelConfig
from trainer.metrics import (
    ACTIVE_PARAMETERS, BUILD, CONFIG, DECAY_START, DEVICE, END_STEP, GLOBAL_BATCH, MIXTURE, MODEL, PARAMETERS, PHASES,
    PRECISION, SCHEDULE_FINGERPRINT, SEQ_LEN, STEPS, WARMUP_STEPS, WORLD_SIZE,
)


def mixture_build(info: dict, run_dir: Path) -> dict:
    """The fingerprints of the run's mixture as built in the workspace now (empty when it is gone): the curated
    manifest and tokenizer it was compiled from."""
    folder = Workspace(as_path(run_dir).parent.parent).mixture_dir(info[MIXTURE])
    try:
        build = current_build(folder)
        return {**json.loads(read_text(build.schedule)), BUILD: build.id} if build is not None else {}
    except (OSError, ValueError):
        return {}


def settings(info: dict, build: dict) -> list[tuple[str, str, object]]:
    """(group, setting, value) of a run: what it trained with, from its run.json (and its mixture's build)."""
    config, model = info.get(CONFIG) or {}, info[MODEL]
    per_step = info[GLOBAL_BATCH] * info[SEQ_LEN]
    lr, ratio = config.get("lr"), config.get("min_lr_ratio")
    return [
        ("optimizer", "peak LR", lr), ("optimizer", "min LR ratio", ratio),
        ("optimizer", "final LR", lr * ratio if lr is not None and ratio is not None else None),
        ("optimizer", "warmup steps", info.get(WARMUP_STEPS)), ("optimizer", "LR decay from step", info[DECAY_START]),
        ("optimizer", "weight decay", config.get("weight_decay")), ("optimizer", "AdamW beta2", config.get("beta2")),
        ("optimizer", "grad clip", config.get("grad_clip")), ("optimizer", "spike factor", config.get("spike_factor")),
        ("batch", "global batch (sequences)", info[GLOBAL_BATCH]), ("batch", "seq len", info[SEQ_LEN]),
        ("batch", "tokens per step", per_step), ("batch", "micro-batches", config.get("micro_batches")),
        ("batch", "planned steps", info[STEPS]), ("batch", "planned tokens", info[STEPS] * per_step),
        ("batch", "end step (--max-steps)", info.get(END_STEP)),
        ("model", "size", config.get("model")), ("model", "d_model", model["d_model"]),
        ("model", "layers", model["n_layers"]), ("model", "heads", model["n_heads"]),
        ("model", "feed-forward width", ModelConfig(**model).ffn_width), ("model", "vocab size", model["vocab_size"]),
        ("model", "experts (top k)", f"{model['n_experts']} (top {model['top_k']})" if model["n_experts"] else "dense"),
        ("model", "parameters", info[PARAMETERS]), ("model", "active in matmuls", info[ACTIVE_PARAMETERS]),
        ("data", "mixture", info[MIXTURE]), ("data", "build", info.get(BUILD)),
        ("data", "schedule fingerprint", info.get(SCHEDULE_FINGERPRINT)),
        ("data", "mixture's build now", ("same steps and phases" if _same_build(info, build) else "changed since")
         if build else "gone"),
        ("data", "its build", build.get(BUILD)), ("data", "its manifest", build.get("manifest_fingerprint")),
        ("data", "its tokenizer", build.get("tokenizer_fingerprint")),
        ("data", "its generation", build.get("generation")),
        ("system", "seed", config.get("seed")), ("system", "precision", info.get(PRECISION)),
        ("system", "world size", info.get(WORLD_SIZE)), ("system", "device", info.get(DEVICE)),
        ("system", "FSDP", config.get("fsdp")), ("system", "torch.compile", config.get("compile")),
        ("system", "validation every (steps)", config.get("eval_every")),
        ("system", "checkpoint every (steps)", config.get("checkpoint_every")),
    ]


def _same_build(info: dict, build: dict) -> bool:
    """Whether the mixture's build now plans the run's steps and phases (a cheap check: its schedule fingerprint is
    computed in trainer.checkpoint, which imports torch)."""
    return bool(build) and build.get("steps") == info[STEPS] and build.get("phases") == info[PHASES]


def show_setting(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def settings_table(columns: list[str], rows: list[tuple[str, str, list]], table_id: str) -> str:
    """Settings as rows under their group's heading, one column of values per run. With several runs, a row whose
    values differ is marked: class "differs", highlighted, and a sign the eye finds without colour. Numbers carry
    their value (data-value)."""
    several, grouped = len(columns) > 1, len({group for group, _, _ in rows}) > 1
    body, current = [], None
    for group, name, values in rows:
        if grouped and group != current:
            body.append(f'<tr class="group"><th colspan="{len(columns) + 1}">{esc(group)}</th></tr>')
            current = group
        differs = several and len({show_setting(v) for v in values}) > 1
        cells = "".join(_setting_cell(v) for v in values)
        mark = '<span class="mark" title="differs between the runs">&#8800; </span>' if differs else ""
        row_class = ' class="differs"' if differs else ""
        body.append(f"<tr{row_class}><td>{mark}{esc(name)}</td>{cells}</tr>")
    head = "".join(f"<th>{esc(c)}</th>" for c in ["setting", *columns])
    return (f'<table class="settings" id="{esc(table_id)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _setting_cell(value) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<td class="num" data-value="{esc(value)}">{esc(show_setting(value))}</td>'
    return f"<td>{esc(show_setting(value))}</td>"


SETTINGS_STYLE = ("<style>.settings tr.differs td { background: #fff4d6; } .settings .mark { color: #b35900; "
                  "font-weight: 700; } .settings tr.group th { background: none; color: #888; font-weight: 400; "
                  "padding-top: .6rem; }</style>")


def settings_panels(rows: list[tuple[str, str, object]]) -> str:
    """A run's settings, a small table per group side by side: ids config-optimizer, config-batch, ..."""
    groups = dict.fromkeys(group for group, _, _ in rows)
    panels = "".join(f'<div><h3>{esc(group)}</h3>'
                     + settings_table(["value"], [(g, n, [v]) for g, n, v in rows if g == group], f"config-{group}")
                     + "</div>" for group in groups)
    return f'{SETTINGS_STYLE}<div class="panels" id="config">{panels}</div>'
