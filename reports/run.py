"""`runs/<run>/report.html`: a training run's settings and curves from its run.json and metrics.jsonl, rewritten
while it trains and reloading itself in the browser until the run ends. `settings` and `settings_table` are
shared with the comparison of several runs (reports/compare.py)."""

import json
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from loom.errors import UserError
from loom.io import as_path, read_text, write_text
from reports.colors import workspace_colors
from reports.html import REPORT_FILE, esc, line_chart, number, page, table
from trainer.config import LRSchedule, ModelConfig
from trainer.metrics import (
    ACTIVE_PARAMETERS, COMPONENTS, CONFIG, DATA_WAIT_FRACTION, DECAY_START, DEVICE, END_STEP, EVAL_BPB_BY_SET,
    EVAL_LOSS_BY_SET, EXPERT_LOAD_BY_LAYER, EXPERT_MAX_VIOLATION, EXPERT_MAX_VIOLATION_BY_LAYER, FLOPS_PER_SECOND,
    FLOPS_PER_SECOND_PER_DEVICE, GLOBAL_BATCH, GRAD_NORM, GRAD_NORM_BY_GROUP, LOSS, LOSS_BY_SOURCE, LR, MFU, MIXTURE,
    MODEL, PARAM_NORM_BY_GROUP, PARAMETERS, PEAK_FLOPS, PEAK_SOURCE, PHASE, PHASES, PRECISION, RUN, RUN_FILE,
    RUNNING, SCHEDULE_FINGERPRINT, SEQ_LEN, SHARE_BY_COMPONENT, SPIKE, STATUS, STEP, STEPS, TARGET_SHARES,
    TOKENS_PER_SECOND, TOKENS_SEEN, UPDATE_NORM_BY_GROUP, VAL_LOSS, VAL_LOSS_BY_SOURCE, WARMUP_STEPS, WORLD_SIZE,
    METRICS_FILE, read_metrics_counted, read_run,
)
from loom.workspace import Workspace
from mixtures.compiled import SCHEDULE_FILE

REFRESH_SECONDS = 15
TOP_GROUPS = 6
PLANNED = "#9a9a9a"  # the planned LR: grey, under the actual one


@dataclass(frozen=True)
class Axes:
    """What every step chart of a run shares: its phase switches, the token axis the reader can switch to, and
    the spike flags (drawn on the grad-norm chart and on the train loss)."""
    markers: list
    alt_x: tuple | None

    def chart(self, series: list, chart_id: str, y_label: str, colors=None, flags=()) -> str:
        return line_chart(series, chart_id, y_label, self.markers, flags, colors=colors, alt_x=self.alt_x)


def token_axis(records: list[dict]) -> tuple | None:
    """("tokens", [(step, tokens seen after it), ...]): the x-axis a reader can switch a step chart to."""
    pairs = [(r[STEP], r[TOKENS_SEEN]) for r in records if r.get(TOKENS_SEEN) is not None]
    return ("tokens", pairs) if pairs else None


def _series(records: list[dict], key: str, sub: str | None = None) -> list[tuple[float, float]]:
    if sub is None:
        return [(r[STEP], r[key]) for r in records if r.get(key) is not None]
    return [(r[STEP], r[key][sub]) for r in records if sub in (r.get(key) or {})]


def _by_source(records: list[dict], key: str) -> list[tuple[str, list]]:
    names = sorted({name for r in records for name in (r.get(key) or {})})
    return [(name, _series(records, key, name)) for name in names]


def headline(info: dict, records: list[dict]) -> str:
    last = records[-1] if records else {}
    recent = records[-20:]
    validated = [r for r in records if r.get(VAL_LOSS) is not None]
    items = [
        ("status", info.get(STATUS, "?")), ("step", f"{last.get(STEP, -1) + 1:,} / {info[STEPS]:,}"),
        ("tokens seen", number(last.get(TOKENS_SEEN, 0))), ("loss", number(last.get(LOSS))),
        ("val loss", number(validated[-1][VAL_LOSS]) if validated else "-"),
        ("tokens/s", number(round(median(r[TOKENS_PER_SECOND] for r in recent))) if recent else "-"),
        ("TFLOP/s", _median(recent, FLOPS_PER_SECOND, lambda v: f"{v / 1e12:.3g}")),
        ("MFU", _median(recent, MFU, lambda v: f"{v:.1%}")),
        ("data wait", f"{median(r[DATA_WAIT_FRACTION] for r in recent):.2%}" if recent else "-"),
    ]
    cards = "".join(f'<div id="headline-{esc(k.replace(" ", "-"))}">{esc(k)}<b>{esc(v)}</b></div>' for k, v in items)
    model = info[MODEL]
    shape = (f"{info[PARAMETERS]:,} parameters ({info[ACTIVE_PARAMETERS]:,} active in matmuls): d_model "
             f"{model['d_model']}, {model['n_layers']} layers, {model['n_heads']} heads"
             + (f", {model['n_experts']} experts (top {model['top_k']})" if model["n_experts"] else ""))
    return (f'<div class="headline">{cards}</div><p class="note">Mixture {esc(info[MIXTURE])}, '
            f"{info[GLOBAL_BATCH]} x {info[SEQ_LEN]} tokens per step on {info.get(WORLD_SIZE, 1)} rank(s) "
            f"({esc(info.get(DEVICE, '?'))}{esc(', ' + info[PRECISION] if PRECISION in info else '')}); "
            f"{esc(shape)}. {esc(mfu_note(recent))}</p>")


def _median(records: list[dict], key: str, show) -> str:
    """The median of the records' values of `key`, shown; "-" when none has one (null, or an older run's line)."""
    values = [r[key] for r in records if r.get(key) is not None]
    return show(median(values)) if values else "-"


def mfu_note(recent: list[dict]) -> str:
    """Against which peak MFU is, or why there is none. Older runs' lines have a peak and an MFU, no FLOP/s."""
    if not recent:
        return ""
    last = recent[-1]
    peak = last.get(PEAK_FLOPS)
    if peak is None:
        return f"{last.get(PEAK_SOURCE, 'no MFU: no known peak')}."
    note = f"Peak for MFU: {last.get(PEAK_SOURCE, '?')}, {peak / 1e12:.4g} TFLOP/s per device."
    above = [r[FLOPS_PER_SECOND_PER_DEVICE] for r in recent
             if r.get(MFU) is None and r.get(FLOPS_PER_SECOND_PER_DEVICE, 0) > peak]
    if above:
        note += (f" MFU left out on {len(above)} of the last {len(recent)} steps: a device achieved up to "
                 f"{max(above) / 1e12:.3g} TFLOP/s, above that peak.")
    return note


def phase_markers(info: dict) -> list[tuple[float, str]]:
    markers = [(p["start_step"], f"{p['name']} from step {p['start_step']}") for p in info[PHASES][1:]]
    if info[DECAY_START] not in [p["start_step"] for p in info[PHASES]]:
        markers.append((info[DECAY_START], f"LR decay from step {info[DECAY_START]}"))
    return markers


def planned_lr(info: dict) -> LRSchedule | None:
    """The LR the run's schedule plans for each step: the trainer's own schedule, with the warmup and decay start it
    resolved (run.json); None for a run.json without them."""
    config = info.get(CONFIG) or {}
    if "lr" not in config or "min_lr_ratio" not in config or WARMUP_STEPS not in info:
        return None
    return LRSchedule(config["lr"], info[STEPS], info[WARMUP_STEPS], info[DECAY_START], config["min_lr_ratio"])


def lr_section(info: dict, records: list[dict], axes: Axes) -> list[str]:
    """The LR the run had beside the one planned for every step of the schedule: a run stopped early (--max-steps)
    shows how much of its plan it reached. This chart alone spans the whole plan."""
    actual = [("lr (actual)", _series(records, LR))]
    schedule = planned_lr(info)
    if schedule is None:
        return ["<h2>Learning rate</h2>", axes.chart(actual, "lr-chart", "lr")]
    per_step = info[GLOBAL_BATCH] * info[SEQ_LEN]
    plan_axis = ("tokens", [(step, (step + 1) * per_step) for step in range(info[STEPS])])
    planned = ("lr (planned)", [(step, schedule(step)) for step in range(info[STEPS])])
    chart = line_chart([planned, *actual], "lr-chart", "lr", axes.markers, colors=[PLANNED, "#4e79a7"],
                       alt_x=plan_axis)
    last = records[-1][STEP] if records else -1
    note = (f'<p class="note" id="lr-plan">Planned: linear warmup over {schedule.warmup} step(s) to {schedule.peak:g}, '
            f"flat, then linear decay from step {schedule.decay_start} to {schedule.peak * schedule.floor_ratio:g} "
            f"(min LR ratio {schedule.floor_ratio:g}) at step {schedule.steps}. "
            + (f"This run has trained to step {last + 1} of {schedule.steps}." if last + 1 < schedule.steps else "")
            + "</p>")
    return ["<h2>Learning rate: planned and actual</h2>", chart, note]


def mixture_build(info: dict, run_dir: Path) -> dict:
    """The fingerprints of the run's mixture as built in the workspace now (empty when it is gone): the curated
    manifest and tokenizer it was compiled from."""
    folder = Workspace(as_path(run_dir).parent.parent).mixture_dir(info[MIXTURE])
    try:
        return json.loads(read_text(folder / SCHEDULE_FILE))
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
        ("data", "mixture", info[MIXTURE]), ("data", "schedule fingerprint", info.get(SCHEDULE_FINGERPRINT)),
        ("data", "mixture's build now", ("same steps and phases" if _same_build(info, build) else "changed since")
         if build else "gone"),
        ("data", "its manifest", build.get("manifest_fingerprint")),
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


def spikes(records: list[dict]) -> tuple[list[tuple[float, float, str]], list[tuple[float, float, str]], str]:
    """The flags on the grad-norm chart, the same steps' flags on the train loss, and the table of spikes."""
    flagged = [r for r in records if r.get(SPIKE)]
    on_grad = [(r[STEP], r[GRAD_NORM], f"step {r[STEP]}: grad norm {r[GRAD_NORM]:.3f}, moved most: {r[SPIKE]}")
               for r in flagged]
    on_loss = [(r[STEP], r[LOSS], f"step {r[STEP]}: grad-norm spike ({r[GRAD_NORM]:.3f}), loss {r[LOSS]:.4f}")
               for r in flagged if r.get(LOSS) is not None]
    rows = [[r[STEP], r[GRAD_NORM], r[SPIKE], r[UPDATE_NORM_BY_GROUP].get(r[SPIKE])] for r in flagged]
    note = ("<p>No grad-norm spikes flagged.</p>" if not rows else
            table(["step", "grad norm", "group that moved most", "its update norm"], rows, "spikes-table"))
    return on_grad, on_loss, note


def moving_groups(records: list[dict]) -> list[str]:
    """The groups with the largest relative updates over the run (weights and tracked buffers)."""
    def relative(group):
        values = [r[UPDATE_NORM_BY_GROUP][group] / (r[PARAM_NORM_BY_GROUP].get(group) or 1e-12) for r in records]
        return max(values) if values else 0.0
    groups = list(records[-1][UPDATE_NORM_BY_GROUP]) if records else []
    buffers = [g for g in groups if g.endswith("router_bias")]
    ranked = sorted((g for g in groups if g not in buffers), key=relative, reverse=True)
    return buffers + ranked[: max(1, TOP_GROUPS - len(buffers))]


def shares(info: dict, records: list[dict]) -> str:
    rows = []
    for phase in info[PHASES]:
        inside = [r for r in records if r[PHASE] == phase["name"]]
        for i, component in enumerate(info[COMPONENTS]):
            target = info[TARGET_SHARES][phase["name"]][i]
            if inside and (target or any(r[SHARE_BY_COMPONENT].get(component) for r in inside)):
                realized = sum(r[SHARE_BY_COMPONENT].get(component, 0.0) for r in inside) / len(inside)
                rows.append([phase["name"], component, target, realized, len(inside)])
    return table(["phase", "component", "target share", "realized share (mean over steps)", "steps"], rows, "shares-table")


def group_table(records: list[dict]) -> str:
    last = records[-1]
    rows = [[g, last[PARAM_NORM_BY_GROUP].get(g), last[GRAD_NORM_BY_GROUP].get(g), last[UPDATE_NORM_BY_GROUP][g]]
            for g in last[UPDATE_NORM_BY_GROUP]]
    return table(["group", "weight norm", "grad norm", "update norm"], rows, "groups-table")


def expert_load(info: dict, records: list[dict], axes: Axes) -> list[str]:
    """Each MoE layer's max violation per step, and its experts' shares of the token slots."""
    model = info[MODEL]
    experts, top_k = model["n_experts"], model["top_k"]
    ceiling = experts / top_k - 1
    layers = list(records[-1].get(EXPERT_MAX_VIOLATION_BY_LAYER) or {})
    parts = ["<h2>MoE expert load</h2>",
             f'<p class="note" id="expert-load-bounds">How evenly each layer\'s router spreads the tokens over its '
             f"{experts} experts. Every token goes to {top_k} of them, so a layer has {top_k} slots per token; an "
             f"expert's load is its share of those slots, summed over ranks. Balanced, each expert takes 1 / "
             f"{experts} = {number(1 / experts)} of them. The max violation is the busiest expert's load over that "
             f"balanced load, minus 1: <b>0 is perfectly balanced</b>, 1 means the busiest expert does twice its "
             f"fair share, and <b>{number(ceiling)} is the worst possible</b> (n_experts / top_k - 1 = {experts} / "
             f"{top_k} - 1), reached when {top_k} experts take every token and the others none. The router biases "
             f"move a little each step towards balance, so the violation should fall as the run goes on.</p>",
             axes.chart(_by_source(records, EXPERT_MAX_VIOLATION_BY_LAYER), "expert-violation-chart",
                        f"max violation (0 balanced, {number(ceiling)} worst)")]
    for layer in layers:
        loads = [(f"expert {e}", [(r[STEP], r[EXPERT_LOAD_BY_LAYER][layer][e]) for r in records
                                  if layer in (r.get(EXPERT_LOAD_BY_LAYER) or {})])
                 for e in range(experts)]
        parts += [f"<h3>{esc(layer)}: share of token slots per expert (balanced: {number(1 / experts)})</h3>",
                  axes.chart(loads, f"expert-load-{layer.replace('.', '-')}", "share")]
    return parts


def eval_sets(records: list[dict], axes: Axes) -> list[str]:
    """The mixture's eval sets: bits per byte over the steps, and the latest loss and bpb of each."""
    evaluated = [r for r in records if r.get(EVAL_LOSS_BY_SET)]
    if not evaluated:
        return []
    last = evaluated[-1]
    rows = [[name, last[STEP] + 1, loss, last[EVAL_BPB_BY_SET][name]] for name, loss in last[EVAL_LOSS_BY_SET].items()]
    return ["<h3>Eval sets: bits per byte</h3>",
            axes.chart(_by_source(evaluated, EVAL_BPB_BY_SET), "eval-chart", "bits per byte"),
            table(["eval set", "after step", "loss (nats/token)", "bits per byte"], rows, "eval-table")]


def curves(info: dict, records: list[dict], axes: Axes, colors) -> list[str]:
    """Every chart of the steps so far, and the tables beside them."""
    on_grad, on_loss, spike_table = spikes(records)
    validated = [r for r in records if r.get(VAL_LOSS) is not None]
    train_sources, val_sources = _by_source(records, LOSS_BY_SOURCE), _by_source(validated, VAL_LOSS_BY_SOURCE)
    return [
        "<h2>Loss</h2>",
        axes.chart([("train", _series(records, LOSS)), ("validation (held out)", _series(validated, VAL_LOSS))],
                   "loss-chart", "loss", flags=on_loss),
        "<h3>Training loss per source (token-weighted within each step)</h3>",
        axes.chart(train_sources, "source-loss-chart", "loss", [colors.of(name) for name, _ in train_sources]),
        "<h3>Validation loss per source</h3>",
        axes.chart(val_sources, "source-val-chart", "loss", [colors.of(name) for name, _ in val_sources]),
        *eval_sets(records, axes),
        *lr_section(info, records, axes),
        "<h2>Gradient norm</h2>",
        axes.chart([("grad norm (before clipping)", _series(records, GRAD_NORM))], "grad-chart", "norm",
                   flags=on_grad),
        spike_table,
        "<h3>Update norms of the groups that moved most (relative to their weights), and router biases</h3>",
        axes.chart([(g, _series(records, UPDATE_NORM_BY_GROUP, g)) for g in moving_groups(records)],
                   "update-chart", "update norm"),
        group_table(records),
        "<h2>Throughput</h2>",
        axes.chart([("tokens/s", _series(records, TOKENS_PER_SECOND))], "throughput-chart", "tokens/s"),
        axes.chart([("achieved, all devices", [(s, v / 1e12) for s, v in _series(records, FLOPS_PER_SECOND)])],
                   "flops-chart", "TFLOP/s"),
        axes.chart([("data wait fraction", _series(records, DATA_WAIT_FRACTION))], "data-wait-chart",
                   "fraction of step time waiting for data"),
    ]


def run_report(run_dir: Path) -> Path:
    run_dir = as_path(run_dir)
    if not (run_dir / RUN_FILE).is_file():
        raise UserError(f"no training run in {run_dir} (no {RUN_FILE}); start one with `loom train --mixture NAME`")
    info = read_run(run_dir)
    records, unreadable = read_metrics_counted(run_dir)
    axes = Axes(phase_markers(info), token_axis(records))
    body = [f"<h1>Training run {esc(info[RUN])}</h1>", headline(info, records)]
    if unreadable:
        body.append(f'<p class="note" id="unreadable-metrics">{unreadable} unreadable line(s) of {METRICS_FILE} '
                    "skipped: a line being written, or one torn by a killed run "
                    "(<code>loom train --resume</code> drops it).</p>")
    body += ["<h2>Hyperparameters</h2>", settings_panels(settings(info, mixture_build(info, run_dir)))]
    if records:
        body += curves(info, records, axes, workspace_colors(run_dir.parent.parent))
        if any(EXPERT_MAX_VIOLATION in r for r in records):
            body += expert_load(info, records, axes)
        body += ["<h2>Mixture: realized against target shares</h2>", shares(info, records)]
    else:
        body += ["<p>No step has finished yet.</p>", *lr_section(info, records, axes)]
    live = info.get(STATUS) == RUNNING
    out = run_dir / REPORT_FILE
    write_text(page(f"Loom run {info[RUN]}", body, refresh_seconds=REFRESH_SECONDS if live else None), out)
    return out
