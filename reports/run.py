"""`runs/<run>/report.html`: a training run's curves from its metrics.jsonl, rewritten while it trains and
reloading itself in the browser until the run ends."""

from pathlib import Path
from statistics import median

from loom.errors import UserError
from loom.io import as_path, write_text
from reports.html import REPORT_FILE, esc, line_chart, number, page, table
from trainer.metrics import (
    ACTIVE_PARAMETERS, COMPONENTS, DATA_WAIT_FRACTION, DECAY_START, DEVICE, EVAL_BPB_BY_SET, EVAL_LOSS_BY_SET,
    EXPERT_LOAD_BY_LAYER, EXPERT_MAX_VIOLATION, EXPERT_MAX_VIOLATION_BY_LAYER, FLOPS_PER_SECOND,
    FLOPS_PER_SECOND_PER_DEVICE, GLOBAL_BATCH, GRAD_NORM, GRAD_NORM_BY_GROUP, LOSS, LOSS_BY_SOURCE, LR, MFU, MIXTURE,
    MODEL, PARAM_NORM_BY_GROUP, PARAMETERS, PEAK_FLOPS, PEAK_SOURCE, PHASE, PHASES, PRECISION, RUN, RUN_FILE,
    RUNNING, SEQ_LEN, SHARE_BY_COMPONENT, SPIKE, STATUS, STEP, STEPS, TARGET_SHARES, TOKENS_PER_SECOND, TOKENS_SEEN,
    UPDATE_NORM_BY_GROUP, VAL_LOSS, VAL_LOSS_BY_SOURCE, WORLD_SIZE,
    METRICS_FILE, read_metrics_counted, read_run,
)

REFRESH_SECONDS = 15
TOP_GROUPS = 6


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


def spikes(records: list[dict]) -> tuple[list[tuple[float, float, str]], str]:
    flagged = [r for r in records if r.get(SPIKE)]
    flags = [(r[STEP], r[GRAD_NORM], f"step {r[STEP]}: grad norm {r[GRAD_NORM]:.3f}, moved most: {r[SPIKE]}")
             for r in flagged]
    rows = [[r[STEP], r[GRAD_NORM], r[SPIKE], r[UPDATE_NORM_BY_GROUP].get(r[SPIKE])] for r in flagged]
    note = ("<p>No grad-norm spikes flagged.</p>" if not rows else
            table(["step", "grad norm", "group that moved most", "its update norm"], rows, "spikes-table"))
    return flags, note


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


def expert_load(info: dict, records: list[dict], markers) -> list[str]:
    """Each MoE layer's max violation per step, and its experts' shares of the token slots."""
    model = info[MODEL]
    ceiling = model["n_experts"] / model["top_k"] - 1
    layers = list(records[-1].get(EXPERT_MAX_VIOLATION_BY_LAYER) or {})
    parts = ["<h2>MoE expert load</h2>",
             f'<p class="note" id="expert-load-bounds">Max violation = max over experts of load / mean load - 1, '
             f"load being an expert's share of the layer's token slots summed over ranks: 0 is perfectly "
             f"balanced; {number(ceiling)} (n_experts / top_k - 1 = {model['n_experts']} / {model['top_k']} - 1) "
             f"is the ceiling, reached when {model['top_k']} experts take every token and the others none.</p>",
             line_chart(_by_source(records, EXPERT_MAX_VIOLATION_BY_LAYER), "expert-violation-chart",
                        "max violation", markers)]
    for layer in layers:
        shares = [(f"expert {e}", [(r[STEP], r[EXPERT_LOAD_BY_LAYER][layer][e]) for r in records
                                   if layer in (r.get(EXPERT_LOAD_BY_LAYER) or {})])
                  for e in range(model["n_experts"])]
        parts += [f"<h3>{esc(layer)}: share of token slots per expert (balanced: {number(1 / model['n_experts'])})</h3>",
                  line_chart(shares, f"expert-load-{layer.replace('.', '-')}", "share", markers)]
    return parts


def eval_sets(records: list[dict], markers) -> list[str]:
    """The mixture's eval sets: bits per byte over the steps, and the latest loss and bpb of each."""
    evaluated = [r for r in records if r.get(EVAL_LOSS_BY_SET)]
    if not evaluated:
        return []
    last = evaluated[-1]
    rows = [[name, last[STEP] + 1, loss, last[EVAL_BPB_BY_SET][name]] for name, loss in last[EVAL_LOSS_BY_SET].items()]
    return ["<h3>Eval sets: bits per byte</h3>",
            line_chart(_by_source(evaluated, EVAL_BPB_BY_SET), "eval-chart", "bits per byte", markers),
            table(["eval set", "after step", "loss (nats/token)", "bits per byte"], rows, "eval-table")]


def run_report(run_dir: Path) -> Path:
    run_dir = as_path(run_dir)
    if not (run_dir / RUN_FILE).is_file():
        raise UserError(f"no training run in {run_dir} (no {RUN_FILE}); start one with `loom train --mixture NAME`")
    info = read_run(run_dir)
    records, unreadable = read_metrics_counted(run_dir)
    markers = phase_markers(info)
    body = [f"<h1>Training run {esc(info[RUN])}</h1>", headline(info, records)]
    if unreadable:
        body.append(f'<p class="note" id="unreadable-metrics">{unreadable} unreadable line(s) of {METRICS_FILE} '
                    "skipped: a line being written, or one torn by a killed run "
                    "(<code>loom train --resume</code> drops it).</p>")
    if records:
        flags, spike_table = spikes(records)
        validated = [r for r in records if r.get(VAL_LOSS) is not None]
        body += [
            "<h2>Loss</h2>",
            line_chart([("train", _series(records, LOSS)), ("validation (held out)", _series(validated, VAL_LOSS))],
                       "loss-chart", "loss", markers),
            "<h3>Training loss per source (token-weighted within each step)</h3>",
            line_chart(_by_source(records, LOSS_BY_SOURCE), "source-loss-chart", "loss", markers),
            "<h3>Validation loss per source</h3>",
            line_chart(_by_source(validated, VAL_LOSS_BY_SOURCE), "source-val-chart", "loss", markers),
            *eval_sets(records, markers),
            "<h2>Learning rate</h2>", line_chart([("lr", _series(records, LR))], "lr-chart", "lr", markers),
            "<h2>Gradient norm</h2>",
            line_chart([("grad norm (before clipping)", _series(records, GRAD_NORM))], "grad-chart", "norm",
                       markers, flags),
            spike_table,
            "<h3>Update norms of the groups that moved most (relative to their weights), and router biases</h3>",
            line_chart([(g, _series(records, UPDATE_NORM_BY_GROUP, g)) for g in moving_groups(records)],
                       "update-chart", "update norm", markers),
            group_table(records),
            "<h2>Throughput</h2>",
            line_chart([("tokens/s", _series(records, TOKENS_PER_SECOND))], "throughput-chart", "tokens/s", markers),
            line_chart([("achieved, all devices", [(s, v / 1e12) for s, v in _series(records, FLOPS_PER_SECOND)])],
                       "flops-chart", "TFLOP/s", markers),
            line_chart([("data wait fraction", _series(records, DATA_WAIT_FRACTION))], "data-wait-chart",
                       "fraction of step time waiting for data", markers),
        ]
        if any(EXPERT_MAX_VIOLATION in r for r in records):
            body += expert_load(info, records, markers)
        body += ["<h2>Mixture: realized against target shares</h2>", shares(info, records)]
    else:
        body.append("<p>No step has finished yet.</p>")
    live = info.get(STATUS) == RUNNING
    out = run_dir / REPORT_FILE
    write_text(page(f"Loom run {info[RUN]}", body, refresh_seconds=REFRESH_SECONDS if live else None), out)
    return out
