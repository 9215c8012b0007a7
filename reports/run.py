"""`runs/<run>/report.html`: a training run's settings and curves from its run.json and metrics.jsonl, rewritten
while it trains and reloading itself in the browser until the run ends."""

from dataclasses import dataclass
from pathlib import Path
from statistics import median

from base.atomic_files import write_text
from base.errors import UserError
from base.store import as_path
from reports.colors import workspace_colors
from reports.html import REPORT_FILE, esc, line_chart, number, page, table
from reports.settings import mixture_build, settings, settings_panels
from trainer.config import COSINE, WSD, LRSchedule
from trainer.metrics import (
    ACTIVE_PARAMETERS, BRANCH, BUDGET_STEPS, COMPONENTS, CONFIG, DATA_WAIT_FRACTION, DECAY_START, DEVICE,
    EVAL_BPB_BY_SET, EVAL_LOSS_BY_SET,
    EXPERT_LOAD_BY_LAYER, EXPERT_MAX_VIOLATION, EXPERT_MAX_VIOLATION_BY_LAYER, FLOPS_PER_SECOND,
    FLOPS_PER_SECOND_PER_DEVICE, GLOBAL_BATCH, GRAD_NORM, GRAD_NORM_BY_GROUP, LOSS, LOSS_BY_SOURCE, LR, MFU, MIXTURE,
    MODEL, PARAM_NORM_BY_GROUP, PARAMETERS, PEAK_FLOPS, PEAK_SOURCE, PHASE, PHASES, PRECISION, RUN, RUN_FILE,
    RUNNING, SEQ_LEN, SHARE_BY_COMPONENT, SPIKE, STEP, STEPS, TARGET_SHARES, TOKENS_BY_SOURCE,
    TOKENS_PER_SECOND, TOKENS_SEEN, UPDATE_NORM_BY_GROUP, VAL_LOSS, VAL_LOSS_BY_SOURCE, WARMUP_STEPS, WORLD_SIZE,
    METRICS_FILE, read_metrics_counted, read_run, run_status,
)

REFRESH_SECONDS = 15
TOP_GROUPS = 6
TOP_SOURCES = 10  # per-source charts draw these; every source is in the table under them
PLANNED = "#9a9a9a"  # the planned LR: grey, under the actual one


@dataclass(frozen=True)
class Axes:
    """What every step chart of a run shares: its phase switches (one the run has not reached is listed under the
    chart, not drawn) and the token axis the reader can switch to."""
    markers: list
    alt_x: tuple | None

    def chart(self, series: list, chart_id: str, y_label: str, colors=None, flags=()) -> str:
        return line_chart(series, chart_id, y_label, self.markers, flags, colors=colors, alt_x=self.alt_x)


def token_axis(records: list[dict]) -> tuple | None:
    """("tokens", [(step, tokens seen after it), ...]): the x-axis a reader can switch a step chart to."""
    pairs = sorted({(r[STEP], r[TOKENS_SEEN]) for r in records if r.get(TOKENS_SEEN) is not None})
    return ("tokens", corners(pairs)) if pairs else None


def corners(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ends of a piecewise-linear mapping and the points where its slope changes: the same mapping once
    interpolated (as the page's script does), in two points for a run whose steps all have the same tokens, instead
    of one per step in every chart."""
    kept = pairs[:1]
    for (x0, y0), (x1, y1), (x2, y2) in zip(pairs, pairs[1:], pairs[2:]):
        if (y1 - y0) * (x2 - x1) != (y2 - y1) * (x1 - x0):
            kept.append((x1, y1))
    return kept + pairs[-1:] if len(pairs) > 1 else kept


def _series(records: list[dict], key: str, sub: str | None = None) -> list[tuple[float, float]]:
    if sub is None:
        return [(r[STEP], r[key]) for r in records if r.get(key) is not None]
    return [(r[STEP], r[key][sub]) for r in records if sub in (r.get(key) or {})]


def _source_names(records: list[dict], key: str) -> list[str]:
    return sorted({name for r in records for name in (r.get(key) or {})})


def _by_source(records: list[dict], key: str) -> list[tuple[str, list]]:
    return [(name, _series(records, key, name)) for name in _source_names(records, key)]


def top_sources(records: list[dict], limit: int = TOP_SOURCES) -> list[str]:
    """The sources with the most training tokens (a chart of 300 lines reads as none)."""
    tokens = {}
    for r in records:
        for name, count in (r.get(TOKENS_BY_SOURCE) or {}).items():
            tokens[name] = tokens.get(name, 0) + count
    return sorted(tokens, key=lambda name: (-tokens[name], name))[:limit]


def source_table(records: list[dict], validated: list[dict]) -> str:
    """Every source's tokens and latest losses, sortable: the charts above draw only the top ones."""
    tokens, last_loss, last_val = {}, {}, {}
    for r in records:
        for name, count in (r.get(TOKENS_BY_SOURCE) or {}).items():
            tokens[name] = tokens.get(name, 0) + count
        last_loss.update(r.get(LOSS_BY_SOURCE) or {})
    for r in validated:
        last_val.update(r.get(VAL_LOSS_BY_SOURCE) or {})
    rows = [[name, tokens.get(name, 0), last_loss.get(name), last_val.get(name)]
            for name in sorted(set(tokens) | set(last_val))]
    return table(["source", "training tokens", "latest train loss", "latest val loss"], rows, "sources-table",
                 numeric={1, 2, 3}, sortable=True)


def headline(info: dict, records: list[dict], status: str) -> str:
    last = records[-1] if records else {}
    recent = records[-20:]
    validated = [r for r in records if r.get(VAL_LOSS) is not None]
    items = [
        ("status", status), ("step", f"{last.get(STEP, -1) + 1:,} / {info.get(BUDGET_STEPS, info[STEPS]):,}"),
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
            f"{esc(shape)}. {esc(branch_note(info))}{esc(mfu_note(recent))}</p>"
            f'<p class="note" id="metrics-file">Every step\'s metrics, a JSON line each: '
            f'<a href="{METRICS_FILE}">{METRICS_FILE}</a>.</p>')


def branch_note(info: dict) -> str:
    """A cooldown's origin: its steps before the branch are the run's it branched from."""
    if BRANCH not in info:
        return ""
    branch = info[BRANCH]
    return (f"A cooldown of run {branch[RUN]} to {info[BUDGET_STEPS]:,} steps, branched at step {branch[STEP]:,}: "
            f"its steps before that are run {branch[RUN]}'s. ")


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
    return LRSchedule(config["lr"], info.get(BUDGET_STEPS, info[STEPS]), info[WARMUP_STEPS], info[DECAY_START],
                      config["min_lr_ratio"], config.get("schedule", WSD))


def lr_section(info: dict, records: list[dict], axes: Axes) -> list[str]:
    """The LR the run had beside the one planned for every step of the schedule: a run stopped early (--max-steps)
    shows how much of its plan it reached. This chart alone spans the whole plan."""
    actual = [("lr (actual)", _series(records, LR))]
    schedule = planned_lr(info)
    if schedule is None:
        return ["<h2>Learning rate</h2>", axes.chart(actual, "lr-chart", "lr")]
    per_step = info[GLOBAL_BATCH] * info[SEQ_LEN]
    plan_axis = ("tokens", corners([(step, (step + 1) * per_step) for step in range(schedule.steps)]))
    planned = ("lr (planned)", [(step, schedule(step)) for step in range(schedule.steps)])
    chart = line_chart([planned, *actual], "lr-chart", "lr", axes.markers, colors=[PLANNED, "#4e79a7"],
                       alt_x=plan_axis)
    last = records[-1][STEP] if records else -1
    decay = "then cosine decay" if schedule.shape == COSINE else "flat, then linear decay"
    note = (f'<p class="note" id="lr-plan">Planned: linear warmup over {schedule.warmup} step(s) to {schedule.peak:g}, '
            f"{decay} from step {schedule.decay_start} to {schedule.peak * schedule.floor_ratio:g} "
            f"(min LR ratio {schedule.floor_ratio:g}) at step {schedule.steps}. "
            + (f"This run has trained to step {last + 1} of {schedule.steps}." if last + 1 < schedule.steps else "")
            + "</p>")
    return ["<h2>Learning rate: planned and actual</h2>", chart, note]


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
    top = top_sources(records)
    train_sources = [(name, line) for name, line in _by_source(records, LOSS_BY_SOURCE) if name in top]
    val_sources = [(name, line) for name, line in _by_source(validated, VAL_LOSS_BY_SOURCE) if name in top]
    every = len(set(_source_names(records, LOSS_BY_SOURCE)) | set(_source_names(validated, VAL_LOSS_BY_SOURCE)))
    return [
        "<h2>Loss</h2>",
        axes.chart([("train", _series(records, LOSS)), ("validation (held out)", _series(validated, VAL_LOSS))],
                   "loss-chart", "loss", flags=on_loss),
        "<h3>Training loss per source (token-weighted within each step)</h3>",
        axes.chart(train_sources, "source-loss-chart", "loss", [colors.of(name) for name, _ in train_sources]),
        "<h3>Validation loss per source</h3>",
        axes.chart(val_sources, "source-val-chart", "loss", [colors.of(name) for name, _ in val_sources]),
        *([f'<p class="note">The {len(top)} sources with the most training tokens of {every}; every one:</p>',
           source_table(records, validated)] if every > len(top) else []),
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
    status = run_status(run_dir, info)  # the page reloads itself only while the run lives
    records, unreadable = read_metrics_counted(run_dir)
    axes = Axes(phase_markers(info), token_axis(records))
    body = [f"<h1>Training run {esc(info[RUN])}</h1>", headline(info, records, status)]
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
    live = status == RUNNING
    out = run_dir / REPORT_FILE
    write_text(page(f"Loom run {info[RUN]}", body, refresh_seconds=REFRESH_SECONDS if live else None), out)
    return out
