"""`WORKSPACE/index.html`: every page of a workspace on one page. The curated sources, each mixture, run, ladder,
search and comparison with a line of what it is, linked by paths relative to the workspace (the folder can move);
a page not written yet shows the command that writes it. Built from small files only (curation.json, the
manifest's shards table, schedule.json, run.json and the last line of metrics.jsonl, fit.json, search.json), so
it stays quick with hundreds of runs."""

import json
import shlex
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

from base.atomic_files import write_text
from base.errors import UserError
from base.parquet_files import read_parquet
from base.store import as_path
from base.workspace import COMPARE_DIR, INDEX_FILE, LADDER_FIT_FILE, PAGE_GLOB, SEARCH_FILE, SPEC_GLOB, Workspace
from mixtures import compiled_mixtures, current_schedule
from reports.colors import workspace_colors
from reports.html import REPORT_FILE, Html, esc, number, page, table
from trainer.metrics import (
    BUDGET_STEPS, LOSS, METRICS_FILE, MIXTURE, RUN_FILE, STARTED_AT, STEP, STEPS, TOKENS_SEEN, VAL_LOSS, run_status,
)

TAIL_BYTES = 64 * 1024  # enough for a run's last metrics lines, whatever its length


def index_path(root) -> Path:
    return Workspace(as_path(root)).root / INDEX_FILE


def workspace_index(root) -> Path:
    """Write the workspace's index page and return its path."""
    ws = Workspace(as_path(root))
    out = ws.root / INDEX_FILE
    write_text(index_page(ws), out)
    return out


def index_page(ws: Workspace, more: tuple[str, ...] = (), refresh_seconds: int | None = None,
               published: bool = False) -> str:
    """The index page's HTML, its links relative to the workspace; `more` sections after the curated data (a
    published site's downloads). A `published` one leaves out the workspace's path on this machine."""
    where = "" if published else f"{esc(ws.root)} · "
    body = [f"<h1>Loom workspace {esc(ws.root.name)}</h1>",
            f'<p class="note">{where}written {time.strftime("%Y-%m-%d %H:%M:%S")}</p>',
            curation_section(ws), *more, mixtures_section(ws), runs_section(ws), sweeps_section(ws, "ladders"),
            sweeps_section(ws, "searches"), comparisons_section(ws)]
    return page(f"Loom workspace {ws.root.name}", body, refresh_seconds)


def named_page(root, name: str) -> Path:
    """The page of the mixture, run, ladder, search or comparison called `name`, looked for in that order."""
    ws = Workspace(as_path(root))
    pages = [ws.mixture_dir(name) / REPORT_FILE, ws.run_dir(name) / REPORT_FILE, ws.ladder_dir(name) / REPORT_FILE,
             ws.search_dir(name) / REPORT_FILE, ws.root.joinpath(*COMPARE_DIR) / f"{name}.html"]
    found = next((p for p in pages if p.exists()), None)
    if found is None:
        raise UserError(no_page(ws, name))
    return found


def no_page(ws: Workspace, name: str) -> str:
    """Why `name` has no page, with the commands that write it and open it (naming the workspace, so that they
    work from any folder)."""
    loom = f"loom -w {shlex.quote(str(ws.root))}"
    writers = [(ws.mixture_dir(name), "mixture", f"report mixture {name}"),
               (ws.run_dir(name) / RUN_FILE, "run", f"report run {name}")]
    for kind, sweep in SWEEPS.items():
        mixture = sweep_state(ws, kind, name)[0]
        writers.append((sweep_folder(ws, kind, name), sweep.one,
                        sweep.command.format(name=name, mixture=mixture or "MIX").removeprefix("loom ")))
    for path, kind, command in writers:
        if path.exists():
            return (f"{kind} '{name}' has no page yet: write it with `{loom} {command}`, then "
                    f"`{loom} report open {name}`")
    return (f"no page named '{name}' in {ws.root} (no mixture, run, ladder, search or comparison by that name has "
            f"one); `{loom} report open` with no name opens the index of every page")


def link(ws: Workspace, path: Path, text: str, fix: str) -> Html:
    """A link to `path` relative to the index, or the text and the command that writes the page."""
    if path.exists():
        relative = "/".join(quote(part) for part in path.relative_to(ws.root).parts)
        return Html(f'<a href="{esc(relative)}">{esc(text)}</a>')
    return Html(f'{esc(text)} <span class="note">(no page yet: <code>{esc(fix)}</code>)</span>')


def swatch(color: str, text: str) -> Html:
    return Html(f'<i class="swatch" style="background:{esc(color)}"></i>{esc(text)}')


def curation_section(ws: Workspace) -> str:
    gen = ws.published()
    shards = gen.manifest_table("shards")
    if not shards.exists():
        return "<h2>Curated data</h2><p>Nothing curated yet: <code>loom curate</code>.</p>"
    per_source: dict[str, list[int]] = {}
    for row in read_parquet(shards, columns=["source", "n_docs", "n_tokens"]).to_pylist():
        docs, tokens = per_source.setdefault(row["source"], [0, 0])
        per_source[row["source"]] = [docs + row["n_docs"], tokens + row["n_tokens"]]
    colors = workspace_colors(ws.root)
    rows = [[swatch(colors.of(s), s), docs, tokens] for s, (docs, tokens) in per_source.items()]
    total_docs, total_tokens = (sum(v[i] for v in per_source.values()) for i in (0, 1))
    report = link(ws, gen.curation_report, "the curation report", "loom report curation")
    return (f"<h2>Curated data</h2><p>Generation {esc(gen.id or '(before generations)')}: {len(rows)} sources, "
            f"{number(total_docs)} documents, {number(total_tokens)} tokens kept. Funnel, distributions and spot "
            f"checks: {report}.</p>"
            + table(["source", "documents kept", "tokens kept"], rows, "index-sources", sortable=True))


def mixtures_section(ws: Workspace) -> str:
    folder = ws.mixtures
    compiled = compiled_mixtures(folder)
    specs = sorted(p.stem for p in folder.glob(SPEC_GLOB)) if folder.exists() else []
    rows = []
    for name in compiled:
        meta = current_schedule(ws.mixture_dir(name))
        if meta is None:  # its folder removed meanwhile
            continue
        phases = ", ".join(f"{p['name']} {p['end_step'] - p['start_step']:,}" for p in meta["phases"])
        rows.append([link(ws, ws.mixture_dir(name) / REPORT_FILE, name, f"loom report mixture {name}"),
                     meta["tokens"], meta["steps"], phases, meta["manifest_fingerprint"]])
    rows += [[Html(f'{esc(name)} <span class="note">(spec only: <code>loom mix build {esc(name)}</code>)</span>'),
              None, None, "", ""] for name in specs if name not in compiled]
    if not rows:
        return "<h2>Mixtures</h2><p>None yet: <code>loom mix build NAME</code>.</p>"
    return ("<h2>Mixtures</h2>" + table(["mixture", "tokens", "steps", "phases (steps)", "manifest fingerprint"],
                                        rows, "index-mixtures", numeric={1, 2}, sortable=True))


def last_metrics(run_dir: Path) -> tuple[dict, dict]:
    """The run's last metrics line and its last line with a validation loss (empty when none is readable)."""
    path = run_dir / METRICS_FILE
    if not path.exists():
        return {}, {}
    with path.open("rb") as fh:
        fh.seek(0, 2)
        fh.seek(max(0, fh.tell() - TAIL_BYTES))
        lines = fh.read().decode("utf-8", "replace").splitlines()
    records = []
    for line in lines[1:] if len(lines) > 1 else lines:  # the first may be cut by the seek
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # a line being written, or torn
    validated = [r for r in records if r.get(VAL_LOSS) is not None]
    return (records[-1] if records else {}), (validated[-1] if validated else {})


def run_summaries(ws: Workspace) -> list[dict]:
    """Each run of the workspace, by name: its mixture, status, steps done of its steps, tokens seen, last loss,
    last validation loss and when it started (seconds since the epoch), from run.json and metrics' last lines."""
    runs = sorted(p.parent for p in ws.runs.glob(f"*/{RUN_FILE}")) if ws.runs.exists() else []
    summaries = []
    for run_dir in runs:
        info = json.loads((run_dir / RUN_FILE).read_text())
        last, validated = last_metrics(run_dir)
        summaries.append({"run": run_dir.name, "dir": run_dir, "mixture": info.get(MIXTURE, ""),
                          "status": run_status(run_dir, info), "steps_done": last.get(STEP, -1) + 1,
                          "steps": info.get(BUDGET_STEPS) or info.get(STEPS),  # a cooldown's: its budget
                          "tokens_seen": last.get(TOKENS_SEEN), "loss": last.get(LOSS),
                          "val_loss": validated.get(VAL_LOSS), "started": info.get(STARTED_AT)})
    return summaries


def runs_section(ws: Workspace) -> str:
    runs = run_summaries(ws)
    if not runs:
        return "<h2>Runs</h2><p>None yet: <code>loom train --mixture NAME</code>.</p>"
    rows = [[link(ws, r["dir"] / REPORT_FILE, r["run"], f"loom report run {r['run']}"), r["mixture"], r["status"],
             r["steps_done"], r["steps"], r["tokens_seen"], r["loss"], r["val_loss"], started_text(r["started"])]
            for r in runs]
    return (f"<h2>Runs</h2><p>{len(rows)} runs. Overlay several with <code>loom report compare RUN RUN...</code>.</p>"
            + table(["run", "mixture", "status", "steps done", "steps", "tokens seen", "last loss", "last val loss",
                     "started"], rows, "index-runs", numeric={3, 4, 5, 6, 7}, sortable=True))


def started_text(started: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else ""


class Sweep(NamedTuple):
    title: str
    one: str  # what one of them is called
    results_file: str
    command: str  # the command that starts one is the one that resumes it and rewrites its page
    folder_of: str  # the Workspace method that gives one's folder


SWEEPS = {
    "ladders": Sweep("Scaling ladders", "ladder", LADDER_FIT_FILE, "loom ladder {name} --mixture {mixture}",
                     "ladder_dir"),
    "searches": Sweep("Mixture searches", "search", SEARCH_FILE, "loom mix search {name} --from {mixture}",
                      "search_dir"),
}


def sweep_folder(ws: Workspace, kind: str, name: str) -> Path:
    return getattr(ws, SWEEPS[kind].folder_of)(name)


def sweep_state(ws: Workspace, kind: str, name: str) -> tuple[str, str]:
    """(mixture, a line of where it stands) of one ladder (`kind` "ladders") or search ("searches")."""
    results = sweep_folder(ws, kind, name) / SWEEPS[kind].results_file
    return sweep_summary(kind, json.loads(results.read_text())) if results.exists() else ("", "not fitted yet")


def sweep_states(ws: Workspace, kind: str) -> list[tuple[str, str, str]]:
    """(name, mixture, a line of where it stands) of each ladder (`kind` "ladders") or search ("searches")."""
    folder = ws.root / kind
    names = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.exists() else []
    return [(name, *sweep_state(ws, kind, name)) for name in names]


def sweeps_section(ws: Workspace, kind: str) -> str:
    sweep = SWEEPS[kind]
    states = sweep_states(ws, kind)
    if not states:
        start = sweep.command.format(name="NAME", mixture="MIX")
        return f"<h2>{sweep.title}</h2><p>None yet: <code>{esc(start)}</code>.</p>"
    rows = []
    for name, mixture, state in states:
        fix = sweep.command.format(name=name, mixture=mixture or "MIX")
        rows.append([link(ws, sweep_folder(ws, kind, name) / REPORT_FILE, name, fix), mixture, state])
    return f"<h2>{sweep.title}</h2>" + table(["name", "mixture", "state"], rows, f"index-{kind}", sortable=True)


def sweep_summary(kind: str, results: dict) -> tuple[str, str]:
    """(mixture, a line of where it stands) from a ladder's fit.json or a search's search.json."""
    if kind == "ladders":
        rungs = results.get("rungs") or []
        done = sum(1 for r in rungs if all(b.get("status") == "finished" for b in r.get("budgets") or [r]))
        target = ((results.get("fits") or {}).get(VAL_LOSS) or {}).get("target") or {}
        predicted = f"; predicted target val loss {number(target.get('predicted'))}" if target.get("predicted") else ""
        return str(results.get("mixture", "")), f"{done} of {len(rungs)} rungs finished{predicted}"
    proxies = results.get("proxies") or []
    done = sum(1 for p in proxies if p.get("status") == "finished")
    chosen = "; chosen mixture written" if results.get("chosen") else ""
    return str(results.get("from") or results.get("mixture", "")), f"{done} of {len(proxies)} proxies finished{chosen}"


def comparison_pages(ws: Workspace) -> list[Path]:
    folder = ws.root.joinpath(*COMPARE_DIR)
    return sorted(folder.glob(PAGE_GLOB)) if folder.exists() else []


def comparisons_section(ws: Workspace) -> str:
    pages = comparison_pages(ws)
    if not pages:
        return ""
    return "<h2>Comparisons</h2><ul>" + "".join(f"<li>{link(ws, p, p.stem, '')}</li>" for p in pages) + "</ul>"
