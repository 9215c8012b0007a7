"""Write the self-contained report pages of a workspace."""

from pathlib import Path

from loom.errors import UserError
from loom.io import as_path, write_text
from loom.workspace import Workspace
from mixtures import SCHEDULE_FILE
from reports import sections
from reports.html import REPORT_FILE, page
from reports.views import connect


def curation_report(root: Path) -> Path:
    """The published generation's `manifest/report.html`: the funnel, distributions and spot checks of every
    curated source."""
    con, views = connect(root)
    if "funnel" not in views:
        raise UserError(f"no curated data in {root}; run `loom curate` first")
    sources = [s for (s,) in con.sql("SELECT DISTINCT source FROM funnel ORDER BY source").fetchall()]
    body = [f"<h1>Curation of {len(sources)} sources</h1>",
            sections.funnel(con, sources), sections.distributions(con, sources), sections.spot_checks(con, sources, 0)]
    out = Workspace(as_path(root)).published().curation_report
    write_text(page("Loom curation report", body), out)
    return out


def mixture_report(root: Path, name: str) -> Path:
    """`mixtures/NAME/report.html`: what the mixture is made of, phase by phase, and of what data."""
    ws = Workspace(as_path(root))
    folder = ws.mixture_dir(name)
    if not (folder / SCHEDULE_FILE).is_file():
        raise UserError(f"mixture '{name}' is not compiled in {root}; run `loom mix build {name}`")
    meta = sections.load_json(folder / SCHEDULE_FILE)
    curation = sections.load_json(ws.generation(meta.get("generation", "")).curation_info)
    con, _ = connect(root)
    sources = sorted({s for c in meta["components"] for s in c["sources"]})
    documents = con.execute("SELECT count(*) FROM (SELECT DISTINCT shard, row FROM mixture_documents "
                            "WHERE mixture = ?)", [name]).fetchall()[0][0]
    body = [f"<h1>Mixture {sections.esc(name)}</h1>", sections.mixture_headline(meta, curation, documents, sources),
            sections.composition(con, name, meta), sections.funnel(con, sources),
            sections.distributions(con, sources), sections.spot_checks(con, sources, meta["seed"])]
    out = folder / REPORT_FILE
    write_text(page(f"Loom mixture {name}", body), out)
    return out
