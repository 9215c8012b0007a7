"""Writing a workspace's pages together: after a curation, its report and the index; for `loom report` and
`loom quickstart`, every page the workspace has data for, the index last so that each of its links finds a page."""

from pathlib import Path
from typing import Callable, NamedTuple

from base.errors import UserError
from base.store import as_path
from base.workspace import Workspace
from mixtures import compiled_mixtures
from reports.build import curation_report, mixture_report
from reports.html import REPORT_FILE
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


class PageWriter(NamedTuple):
    what: str  # "mixture 'web'", for a line saying why it was skipped
    path: Path  # where it writes the page
    write: Callable[[], Path]


def page_writers(ws: Workspace) -> list[PageWriter]:
    """A writer for the curation report, each compiled mixture's page, each run's, each fitted ladder's and
    search's: every page the workspace has data for, but the index and the comparisons."""
    writers = []
    gen = ws.published()
    if gen.manifest_table("shards").exists():
        writers.append(PageWriter("curation", gen.curation_report, lambda: curation_report(ws.root)))
    writers += [PageWriter(f"mixture '{name}'", ws.mixture_dir(name) / REPORT_FILE,
                           lambda name=name: mixture_report(ws.root, name)) for name in compiled_mixtures(ws.mixtures)]
    writers += [PageWriter(f"run '{run['run']}'", run["dir"] / REPORT_FILE, lambda run=run: run_report(run["dir"]))
                for run in run_summaries(ws)]
    for kind, report in SWEEP_REPORTS.items():
        for name, _, _ in sweep_states(ws, kind):
            folder = sweep_folder(ws, kind, name)
            if (folder / SWEEPS[kind].results_file).exists():
                writers.append(PageWriter(f"{SWEEPS[kind].one} '{name}'", folder / REPORT_FILE,
                                          lambda folder=folder, report=report: report(folder)))
    return writers


def write_pages(writers: list[PageWriter]) -> Written:
    """Each page written; one that cannot be (a mixture built on data since removed, say) is skipped with its
    reason, so that one stale thing does not keep the others from being written."""
    written = Written([], [])
    for writer in writers:
        try:
            written.pages.append(writer.write())
        except UserError as err:
            written.skipped.append(f"{writer.what}: {err}")
    return written


def every_page(root) -> Written:
    """Every page the workspace has data for (page_writers), then the index."""
    ws = Workspace(as_path(root))
    written = write_pages(page_writers(ws))
    written.pages.append(workspace_index(ws.root))
    return written
