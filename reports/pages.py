"""Writing a workspace's pages together: after a curation, its report and the index; for `loom report` and
`loom quickstart`, every page the workspace has data for, the index last so that each of its links finds a page."""

from pathlib import Path
from typing import NamedTuple

from base.errors import UserError
from base.store import as_path
from base.workspace import Workspace
from mixtures import compiled_mixtures
from reports.build import curation_report, mixture_report
from reports.index import SWEEPS, run_summaries, sweep_folder, sweep_states, workspace_index
from reports.ladder import ladder_report
from reports.run import run_report
from reports.search import search_report

SWEEP_REPORTS = {"ladders": ladder_report, "searches": search_report}


class Written(NamedTuple):
    pages: list[Path]  # the index last
    skipped: list[str]  # a line for each page that could not be written, saying why


def curation_pages(root) -> list[Path]:
    """The published curation's report, then the index that links it."""
    return [curation_report(root), workspace_index(root)]


def every_page(root) -> Written:
    """The curation report, each compiled mixture's page, each run's, each fitted ladder's and search's, then the
    index. A page that cannot be written (a mixture built on data since removed, say) is skipped with its reason,
    so that one stale thing does not keep the others from being written."""
    ws = Workspace(as_path(root))
    writers = []
    if ws.published().manifest_table("shards").exists():
        writers.append(("curation", lambda: curation_report(ws.root)))
    writers += [(f"mixture '{name}'", lambda name=name: mixture_report(ws.root, name))
                for name in compiled_mixtures(ws.mixtures)]
    writers += [(f"run '{run['run']}'", lambda run=run: run_report(run["dir"])) for run in run_summaries(ws)]
    for kind, report in SWEEP_REPORTS.items():
        for name, _, _ in sweep_states(ws, kind):
            folder = sweep_folder(ws, kind, name)
            if (folder / SWEEPS[kind].results_file).exists():
                writers.append((f"{SWEEPS[kind].one} '{name}'", lambda folder=folder, report=report: report(folder)))
    written = Written([], [])
    for what, write in writers:
        try:
            written.pages.append(write())
        except UserError as err:
            written.skipped.append(f"{what}: {err}")
    written.pages.append(workspace_index(ws.root))
    return written
