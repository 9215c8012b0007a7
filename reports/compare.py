"""`loom report compare RUN [RUN...]`: several training runs of a workspace on one page, written to
WORKSPACE/reports/compare/NAME.html: their losses, validation losses per source and eval-set losses overlaid (a
colour per run), and their settings side by side with the rows that differ marked."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from base.atomic_files import write_text
from base.errors import UserError
from base.names import check_name, is_name
from base.store import as_path
from base.workspace import COMPARE_DIR, RUNS_DIR, Workspace
from reports.colors import SourceColors
from reports.html import REPORT_FILE, Html, esc, legend, line_chart, page, table
from reports.run import TOP_SOURCES, corners, top_sources
from reports.settings import SETTINGS_STYLE, mixture_build, settings, settings_table, show_setting
from trainer.metrics import (
    EVAL_BPB_BY_SET, GLOBAL_BATCH, LOSS, PHASES, RUN_FILE, SEQ_LEN, STEP, STEPS, TOKENS_SEEN, VAL_LOSS,
    VAL_LOSS_BY_SOURCE, read_metrics, read_run, run_status,
)

NAMED_IN_FULL = 3  # a default page name spells out this many runs; a longer list gets the first two and a digest
STYLE = ("<style>.pair { display: flex; flex-wrap: wrap; gap: .5rem 1.5rem; } .pair > div { width: 520px; } "
         ".pair h3 { font-size: .95rem; } i.swatch { display: inline-block; width: .8rem; height: .8rem; "
         "margin-right: .4rem; vertical-align: -1px; }</style>")


@dataclass(frozen=True)
class Run:
    """One run on the page: its run.json, its metrics lines, its colour and its status (trainer.metrics.run_status)."""
    name: str
    info: dict
    records: list[dict]
    color: str
    status: str

    @property
    def tokens_per_step(self) -> int:
        return self.info[GLOBAL_BATCH] * self.info[SEQ_LEN]


def compare_path(root, name: str) -> Path:
    return Workspace(as_path(root)).root.joinpath(*COMPARE_DIR) / f"{name}.html"


def default_name(runs: list[str]) -> str:
    """The runs' names joined ("a-vs-b"); for a long list, the first two, how many more, and a digest of them all."""
    joined = "-vs-".join(runs)
    if len(runs) <= NAMED_IN_FULL and len(joined) <= 64:
        return joined
    digest = hashlib.sha256("\n".join(runs).encode()).hexdigest()[:8]
    more = f"-and-{len(runs) - 2}-more" if len(runs) > 2 else ""
    return f"{'-vs-'.join(r[:16] for r in runs[:2])}{more}-{digest}"


def load_run(ws: Workspace, name: str, color: str) -> Run:
    run_dir = ws.run_dir(name)
    if not (run_dir / RUN_FILE).is_file():
        raise UserError(f"no run '{name}' in {ws.runs} (no {RUN_FILE}); pick one of: {_known_runs(ws)}")
    info = read_run(run_dir)
    return Run(name, info, read_metrics(run_dir), color, run_status(run_dir, info))


def _known_runs(ws: Workspace) -> str:
    try:
        names = sorted(p.name for p in ws.runs.iterdir() if (p / RUN_FILE).is_file())
    except OSError:
        names = []
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "") if names else "none yet (`loom train`)"


def compare_report(root, runs: list[str], name: str | None = None) -> Path:
    """Writes the page comparing `runs` (two or more run names of the workspace at `root`); returns its path."""
    runs = list(dict.fromkeys(check_name("run", r) for r in runs))
    if len(runs) < 2:
        raise UserError(f"compare needs two runs or more, got {len(runs)}: `loom report compare RUN RUN [RUN...]`")
    page_name = check_name("comparison", name, "--name") if name is not None else default_name(runs)
    ws = Workspace(as_path(root))
    colors = SourceColors(runs)  # a colour per run, in the order given: the palette first
    loaded = [load_run(ws, r, colors.of(r)) for r in runs]
    out = compare_path(ws.root, page_name)
    write_text(page(f"Loom compare {', '.join(runs)}", comparison(ws, loaded)), out)
    return out


def sweep_comparison(root, runs: list[str], name: str, what: str) -> str:
    """A sweep page's link to the comparison of its runs (written now, of those with a run.json), or nothing while
    fewer than two have started. The link is relative to a page two folders below the workspace."""
    ws = Workspace(as_path(root))
    started = [r for r in dict.fromkeys(runs) if (ws.run_dir(r) / RUN_FILE).is_file()]
    if len(started) < 2:
        return ""
    out = compare_report(ws.root, started, name if is_name(name) else default_name(started))
    return (f'<p id="compare-link">{esc(what)}, overlaid with their settings side by side: '
            f'<a href="../../reports/compare/{esc(out.name)}">{esc(out.name)}</a> '
            f'(<code>loom report compare {esc(" ".join(started))}</code>).</p>')


def comparison(ws: Workspace, runs: list[Run]) -> list[str]:
    axis = Axis.of(runs)
    body = [STYLE, SETTINGS_STYLE, f"<h1>Runs compared: {esc(', '.join(r.name for r in runs))}</h1>",
            summary(runs), f'<p class="note" id="x-axis-note">{esc(axis.note)}</p>', "<h2>Loss</h2>",
            axis.chart(runs, "loss-chart", "train loss", lambda record: record.get(LOSS)),
            "<h3>Validation loss (held out)</h3>",
            axis.chart(runs, "val-chart", "validation loss", lambda record: record.get(VAL_LOSS))]
    body += per_key_charts(runs, axis, VAL_LOSS_BY_SOURCE, "Validation loss per source", "source-val", "loss")
    body += per_key_charts(runs, axis, EVAL_BPB_BY_SET, "Eval sets: bits per byte", "eval", "bits per byte")
    rows = [settings(r.info, mixture_build(r.info, ws.run_dir(r.name))) for r in runs]
    merged = [(group, setting, [run_rows[i][2] for run_rows in rows]) for i, (group, setting, _) in enumerate(rows[0])]
    differing = sum(1 for _, _, values in merged if len({show_setting(v) for v in values}) > 1)
    body += ["<h2>Settings side by side</h2>",
             f'<p class="note" id="differing">{differing} of {len(merged)} settings differ between the runs '
             "(highlighted, marked &#8800;).</p>", settings_table([r.name for r in runs], merged, "config-table")]
    return body


def summary(runs: list[Run]) -> str:
    rows = []
    for run in runs:
        last = run.records[-1] if run.records else {}
        validated = [r for r in run.records if r.get(VAL_LOSS) is not None]
        link = Html(f'<i class="swatch" style="background:{run.color}"></i>'
                    f'<a href="../../{RUNS_DIR}/{esc(run.name)}/{REPORT_FILE}">{esc(run.name)}</a>')
        switches = ", ".join(f"{p['name']} from step {p['start_step']:,}" for p in run.info[PHASES][1:])
        rows.append([link, run.status, last.get(STEP, -1) + 1, run.info[STEPS], switches or "-",
                     last.get(TOKENS_SEEN, 0), last.get(LOSS), validated[-1][VAL_LOSS] if validated else None])
    return table(["run", "status", "steps done", "steps planned", "phase switch", "tokens seen", "last loss",
                  "last val loss"], rows, "runs-table", numeric={2, 3, 5, 6, 7})


def per_key_charts(runs: list[Run], axis: "Axis", key: str, title: str, prefix: str, y_label: str) -> list[str]:
    """One chart per name under `key` (a source, an eval set), the runs as its series: the TOP_SOURCES names with
    the most training tokens, and a sortable table of every name's latest value per run when there are more."""
    names = sorted({n for run in runs for r in run.records for n in (r.get(key) or {})})
    if not names:
        return []
    ranked = [n for n in top_sources([r for run in runs for r in run.records], len(names)) if n in names]
    drawn = (ranked + [n for n in names if n not in ranked])[:TOP_SOURCES]
    ids = chart_ids(prefix, drawn)
    panels = "".join(
        f"<div><h3>{esc(n)}</h3>"
        + axis.chart(runs, ids[n], y_label, lambda record, n=n: (record.get(key) or {}).get(n), width=520)
        + "</div>" for n in drawn)
    parts = [f"<h3>{esc(title)}</h3>", f'<div class="pair">{panels}</div>']
    if len(names) > len(drawn):
        latest = [{n: v for r in run.records for n, v in (r.get(key) or {}).items()} for run in runs]
        rows = [[n, *(values.get(n) for values in latest)] for n in names]
        parts += [f'<p class="note">{len(drawn)} of {len(names)} drawn (the most training tokens); the latest value '
                  "of every one:</p>", table(["name", *(run.name for run in runs)], rows, f"{prefix}-table",
                                             numeric=set(range(1, len(runs) + 1)), sortable=True)]
    return parts


def chart_ids(prefix: str, names: list[str]) -> dict[str, str]:
    """An element id per name: its letters and digits, numbered where two names would share one."""
    ids = {}
    for i, name in enumerate(names):
        slug = f"{prefix}-{''.join(c if c.isalnum() or c in '-_' else '-' for c in name)}"
        ids[name] = slug if slug not in ids.values() else f"{slug}-{i}"
    return ids


@dataclass(frozen=True)
class Axis:
    """The shared x-axis: steps (with tokens to switch to) when every run has the same tokens per step, else tokens
    seen (a step of one run is not a step of another)."""
    by_tokens: bool
    alt_x: tuple | None
    note: str

    @classmethod
    def of(cls, runs: list[Run]) -> "Axis":
        if len({r.tokens_per_step for r in runs}) > 1:
            sizes = ", ".join(f"{r.name} {r.tokens_per_step:,}" for r in runs)
            return cls(True, None, f"The runs differ in tokens per step ({sizes}): the x-axis is tokens seen.")
        pairs = sorted({(r[STEP], r[TOKENS_SEEN]) for run in runs for r in run.records if r.get(TOKENS_SEEN)})
        return cls(False, ("tokens", corners(pairs)) if pairs else None,
                   f"Every run has {runs[0].tokens_per_step:,} tokens per step: the x-axis is the step "
                   "(switch it to tokens seen above a chart).")

    def points(self, run: Run, value) -> list[tuple[float, float]]:
        """(x, value(record)) for each of the run's records that has a value."""
        xs_values = ((r[TOKENS_SEEN] if self.by_tokens else r[STEP], value(r)) for r in run.records)
        return [(x, v) for x, v in xs_values if v is not None]

    def markers(self, runs: list[Run]) -> list[tuple[float, str]]:
        """The phase switches every run shares (each run's own are in the table of runs: one line per run's
        switch would bury the curves under labels)."""
        switches = [self.switches(run) for run in runs]
        return [(x, label) for x, label in switches[0] if all((x, label) in others for others in switches[1:])]

    def switches(self, run: Run) -> list[tuple[float, str]]:
        unit, scale = ("tokens", run.tokens_per_step) if self.by_tokens else ("step", 1)
        return [(p["start_step"] * scale, f"{p['name']} from {unit} {p['start_step'] * scale:,}")
                for p in run.info[PHASES][1:]]

    def chart(self, runs: list[Run], chart_id: str, y_label: str, value, width: int = 760) -> str:
        """A line per run of `value(record)`, in the run's colour; a run without such values is left out."""
        drawn = [(run, points) for run in runs if (points := self.points(run, value))]
        key = legend([drawn[0][0].name], [drawn[0][0].color]) if len(drawn) == 1 else ""  # line_chart's needs two
        chart = line_chart([(run.name, points) for run, points in drawn], chart_id, y_label, self.markers(runs),
                           width=width, colors=[run.color for run, _ in drawn],
                           x_label="tokens seen" if self.by_tokens else "step", alt_x=self.alt_x)
        return key + chart
