"""`runs/<run>/report.html`: a training run's curves from its metrics.jsonl, rewritten while it trains and
reloading itself in the browser until the run ends."""

import json
from pathlib import Path
from statistics import median

from loom.io import write_text
from loom.errors import UserError
from reports.html import esc, line_chart, number, page, table

REFRESH_SECONDS = 15
TOP_GROUPS = 6


def read_metrics(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    records = []
    for i, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i != len(lines) - 1:  # only the line being written may be incomplete
                raise
    return records


def _series(records: list[dict], key: str, sub: str | None = None) -> list[tuple[float, float]]:
    if sub is None:
        return [(r["step"], r[key]) for r in records if r.get(key) is not None]
    return [(r["step"], r[key][sub]) for r in records if sub in (r.get(key) or {})]


def _by_source(records: list[dict], key: str) -> list[tuple[str, list]]:
    names = sorted({name for r in records for name in (r.get(key) or {})})
    return [(name, _series(records, key, name)) for name in names]


def headline(info: dict, records: list[dict]) -> str:
    last = records[-1] if records else {}
    recent = records[-20:]
    validated = [r for r in records if r.get("val_loss") is not None]
    items = [
        ("status", info.get("status", "?")), ("step", f"{last.get('step', -1) + 1:,} / {info['steps']:,}"),
        ("tokens seen", number(last.get("tokens_seen", 0))), ("loss", number(last.get("loss"))),
        ("val loss", number(validated[-1]["val_loss"]) if validated else "-"),
        ("tokens/s", number(round(median(r["tokens_per_second"] for r in recent))) if recent else "-"),
        ("MFU", f"{median(r['mfu'] for r in recent):.1%}" if recent else "-"),
        ("data wait", f"{median(r['data_wait_fraction'] for r in recent):.2%}" if recent else "-"),
    ]
    cards = "".join(f'<div id="headline-{esc(k.replace(" ", "-"))}">{esc(k)}<b>{esc(v)}</b></div>' for k, v in items)
    model = info["model"]
    shape = (f"{info['parameters']:,} parameters ({info['active_parameters']:,} active in matmuls): d_model "
             f"{model['d_model']}, {model['n_layers']} layers, {model['n_heads']} heads"
             + (f", {model['n_experts']} experts (top {model['top_k']})" if model["n_experts"] else ""))
    return (f'<div class="headline">{cards}</div><p class="note">Mixture {esc(info["mixture"])}, '
            f"{info['global_batch']} x {info['seq_len']} tokens per step on {info.get('world_size', 1)} rank(s) "
            f"({esc(info.get('device', '?'))}); {esc(shape)}. Peak for MFU: "
            f"{esc(last.get('peak_source', '?'))}, {number((last.get('peak_flops') or 0) / 1e12, 2)} TFLOP/s.</p>")


def phase_markers(info: dict) -> list[tuple[float, str]]:
    markers = [(p["start_step"], f"{p['name']} from step {p['start_step']}") for p in info["phases"][1:]]
    if info["decay_start"] not in [p["start_step"] for p in info["phases"]]:
        markers.append((info["decay_start"], f"LR decay from step {info['decay_start']}"))
    return markers


def spikes(records: list[dict]) -> tuple[list[tuple[float, float, str]], str]:
    flagged = [r for r in records if r.get("spike")]
    flags = [(r["step"], r["grad_norm"], f"step {r['step']}: grad norm {r['grad_norm']:.3f}, moved most: {r['spike']}")
             for r in flagged]
    rows = [[r["step"], r["grad_norm"], r["spike"], r["update_norm_by_group"].get(r["spike"])] for r in flagged]
    note = ("<p>No grad-norm spikes flagged.</p>" if not rows else
            table(["step", "grad norm", "group that moved most", "its update norm"], rows, "spikes-table"))
    return flags, note


def moving_groups(records: list[dict]) -> list[str]:
    """The groups with the largest relative updates over the run (weights and tracked buffers)."""
    def relative(group):
        values = [r["update_norm_by_group"][group] / (r["param_norm_by_group"].get(group) or 1e-12) for r in records]
        return max(values) if values else 0.0
    groups = list(records[-1]["update_norm_by_group"]) if records else []
    buffers = [g for g in groups if g.endswith("router_bias")]
    ranked = sorted((g for g in groups if g not in buffers), key=relative, reverse=True)
    return buffers + ranked[: max(1, TOP_GROUPS - len(buffers))]


def shares(info: dict, records: list[dict]) -> str:
    rows = []
    for phase in info["phases"]:
        inside = [r for r in records if r["phase"] == phase["name"]]
        for i, component in enumerate(info["components"]):
            target = info["target_shares"][phase["name"]][i]
            if inside and (target or any(r["share_by_component"].get(component) for r in inside)):
                realized = sum(r["share_by_component"].get(component, 0.0) for r in inside) / len(inside)
                rows.append([phase["name"], component, target, realized, len(inside)])
    return table(["phase", "component", "target share", "realized share (mean over steps)", "steps"], rows, "shares-table")


def group_table(records: list[dict]) -> str:
    last = records[-1]
    rows = [[g, last["param_norm_by_group"].get(g), last["grad_norm_by_group"].get(g), last["update_norm_by_group"][g]]
            for g in last["update_norm_by_group"]]
    return table(["group", "weight norm", "grad norm", "update norm"], rows, "groups-table")


def run_report(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    if not (run_dir / "run.json").is_file():
        raise UserError(f"no training run in {run_dir} (no run.json); start one with `loom train --mixture NAME`")
    info = json.loads((run_dir / "run.json").read_text())
    records = read_metrics(run_dir)
    markers = phase_markers(info)
    body = [f"<h1>Training run {esc(info['run'])}</h1>", headline(info, records)]
    if records:
        flags, spike_table = spikes(records)
        validated = [r for r in records if r.get("val_loss") is not None]
        body += [
            "<h2>Loss</h2>",
            line_chart([("train", _series(records, "loss")), ("validation (held out)", _series(validated, "val_loss"))],
                       "loss-chart", "loss", markers),
            "<h3>Training loss per source (token-weighted within each step)</h3>",
            line_chart(_by_source(records, "loss_by_source"), "source-loss-chart", "loss", markers),
            "<h3>Validation loss per source</h3>",
            line_chart(_by_source(validated, "val_loss_by_source"), "source-val-chart", "loss", markers),
            "<h2>Learning rate</h2>", line_chart([("lr", _series(records, "lr"))], "lr-chart", "lr", markers),
            "<h2>Gradient norm</h2>",
            line_chart([("grad norm (before clipping)", _series(records, "grad_norm"))], "grad-chart", "norm",
                       markers, flags),
            spike_table,
            "<h3>Update norms of the groups that moved most (relative to their weights), and router biases</h3>",
            line_chart([(g, _series(records, "update_norm_by_group", g)) for g in moving_groups(records)],
                       "update-chart", "update norm", markers),
            group_table(records),
            "<h2>Throughput</h2>",
            line_chart([("tokens/s", _series(records, "tokens_per_second"))], "throughput-chart", "tokens/s", markers),
            line_chart([("data wait fraction", _series(records, "data_wait_fraction"))], "data-wait-chart",
                       "fraction of step time waiting for data", markers),
        ]
        if any("expert_load_max_over_mean" in r for r in records):
            body += ["<h3>MoE expert load (max / mean, worst layer)</h3>",
                     line_chart([("max/mean", _series(records, "expert_load_max_over_mean"))], "expert-chart", "", markers)]
        body += ["<h2>Mixture: realized against target shares</h2>", shares(info, records)]
    else:
        body.append("<p>No step has finished yet.</p>")
    live = info.get("status") == "running"
    out = run_dir / "report.html"
    write_text(page(f"Loom run {info['run']}", body, refresh_seconds=REFRESH_SECONDS if live else None), out)
    return out
