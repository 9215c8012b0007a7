"""Write the self-contained report pages of a workspace: the curation report and a mixture's."""

from pathlib import Path

from base.atomic_files import write_text
from base.errors import UserError
from base.store import as_path
from base.workspace import Workspace
from mixtures import current_schedule
from reports import mixture, sections
from reports.annotations import annotators_section
from reports.colors import workspace_colors
from reports.contamination import decontamination
from reports.domains import domains_section
from reports.html import REPORT_FILE, esc, page
from reports.pii import pii_section
from reports.removed import removed_section
from reports.views import connect


def curation_report(root: Path) -> Path:
    """The published generation's `manifest/report.html`: the funnel of every curated source, and the
    distributions and spot checks of the largest."""
    con, views = connect(root)
    if "funnel" not in views:
        raise UserError(f"no curated data in {root}; run `loom curate` first")
    stats = sections.source_stats(con)
    colors = workspace_colors(root)
    shown = sections.largest(stats, key=lambda s: s.documents)
    gen = Workspace(as_path(root)).published()
    curation = sections.load_json(gen.curation_info) if gen.curation_info.exists() else {}
    body = [f"<h1>Curation of {len(stats)} sources</h1>", sections.curation_headline(stats),
            sections.funnel(stats, colors), decontamination(con, views, curation.get("decontamination")),
            pii_section(con, views), domains_section(con, views), annotators_section(con, curation.get("annotators") or [], colors),
            sections.distributions(con, shown, colors, list(stats)), sections.spot_checks(con, shown, 0, len(stats)),
            removed_section(con, views, stats)]
    out = gen.curation_report
    write_text(page("Loom curation report", body), out)
    return out


def mixture_report(root: Path, name: str) -> Path:
    """`mixtures/NAME/report.html`: what the mixture is made of, phase by phase, and of what data."""
    ws = Workspace(as_path(root))
    folder = ws.mixture_dir(name)
    meta = current_schedule(folder)  # read while its build is held
    if meta is None:
        raise UserError(f"mixture '{name}' is not compiled in {root}; run `loom mix build {name}`")
    curation = sections.load_json(ws.generation(meta.get("generation", "")).curation_info)
    con, views = connect(root)
    colors = workspace_colors(root)
    sources = sorted({s for c in meta["components"] for s in c["sources"]})
    documents = con.execute("SELECT count(*) FROM (SELECT DISTINCT shard, row FROM mixture_documents "
                            "WHERE mixture = ?)", [name]).fetchall()[0][0]
    rows = mixture.plan_rows(con, name)
    stats = sections.source_stats(con, sources)
    totals = mixture.source_tokens(con, name, meta, rows)
    shown = sorted(totals, key=lambda s: (-totals[s], s))[:sections.TOP_N]
    body = [f"<h1>Mixture {esc(name)}</h1>", mixture.headline(meta, curation, documents, sources, ws),
            mixture.phases(meta, rows, colors),
            mixture.source_totals(totals, {s: st.tokens for s, st in stats.items()}, colors),
            mixture.licenses(con, views, name, meta), mixture.cells(meta, rows), mixture.composition(meta, rows),
            sections.funnel(stats, colors),
            sections.distributions(con, shown, colors, sources), sections.spot_checks(con, shown, meta["seed"], len(sources))]
    out = folder / REPORT_FILE
    write_text(page(f"Loom mixture {name}", body), out)
    return out
