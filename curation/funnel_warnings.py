"""What a source's funnel says that its owner must not miss: its filters (or langid, or plugin steps) took most
of it (the web filters judging documentation or code), one removal took nearly all of it (duplicates of a
mirrored corpus, records over max_doc_bytes, malformed input), or nothing of it was kept. Each warning is one line
naming the setting that changes it."""

import json
import math
from dataclasses import dataclass

from base.sql import literal
from curation.config import SourceConfig
from curation.readers import READERS
from curation.steps.filters import FILTERS, web_filters
from curation.steps.pii import PersonalData
from curation.steps.plugins import ERROR_REASON, STAGE_PREFIX, is_plugin_stage, step_name

MOST = 0.5  # losing more than this share of a source's records to its filters together is a warning
NEARLY_ALL = 0.8  # and more than this share to any one removal (duplicates, too_large, malformed, ...)
WHERE = "for it in sources.toml"


@dataclass(frozen=True)
class Removals:
    """How many of a source's records ended in one fate at one stage for one reason, and their commonest detail."""

    fate: str
    stage: str
    reason: str | None
    n: int
    detail: str | None = None


def funnel_counts(con, funnel) -> dict[str, list[Removals]]:
    """Per source, its funnel counted by (fate, stage, reason), the largest first; `funnel` is a Parquet glob."""
    rows = con.sql(f"""
        SELECT source, fate, stage, reason, count(*) AS n, mode(detail)
        FROM read_parquet({literal(funnel)}) GROUP BY source, fate, stage, reason ORDER BY source, n DESC, stage, reason
    """).fetchall()
    counts: dict[str, list[Removals]] = {}
    for source, *group in rows:
        counts.setdefault(source, []).append(Removals(*group))
    return counts


def source_warnings(source: SourceConfig, counts: list[Removals]) -> list[str]:
    """The warnings of one source's funnel counts, each one line (without the `warning: ` its printer adds): one
    for its filters together, one for a source that kept nothing, else one per removal that took nearly all of it.
    A filter is judged by all it removed, whatever the reason: short pages fail Gopher's repetition filter on
    top_2_gram, top_3_gram or top_4_gram, none of which alone may be most of them."""
    docs_in = sum(c.n for c in counts)
    kept = sum(c.n for c in counts if c.fate == "kept")
    removals = [c for c in counts if c.fate != "kept"]
    stages = by_stage(removals)
    filtered = sum(n for _, n in stages)
    warnings = []
    if filtered > MOST * docs_in:
        warnings.append(filters_warning(source, removals, stages, docs_in))
    if kept == 0 and removals and filtered < docs_in:
        warnings.append(kept_nothing(source, removals, docs_in))
    elif kept:
        warnings += [nearly_all_warning(source, group, docs_in) for group in removal_groups(removals, stages)
                     if sum(c.n for c in group) > NEARLY_ALL * docs_in]
    return warnings


def by_stage(removals: list[Removals]) -> list[tuple[str, int]]:
    """The documents each stage a setting can turn off or loosen (a filter, langid, a plugin step) filtered out, the
    most first."""
    totals: dict[str, int] = {}
    for c in removals:
        if c.fate == "filtered" and (c.stage in FILTERS or c.stage == "langid" or is_plugin_stage(c.stage)):
            totals[c.stage] = totals.get(c.stage, 0) + c.n
    return sorted(totals.items(), key=lambda item: -item[1])


def filters_warning(source: SourceConfig, removals: list[Removals], stages: list[tuple[str, int]],
                    docs_in: int) -> str:
    """The line of a source that its filters (langid and plugin steps among them) took more than half of: one
    stage with its reasons, or each stage with its share, the most first; then the settings that would keep
    enough of them to lose less than half."""
    lost = sum(n for _, n in stages)
    if len(stages) == 1:
        what = f"{stages[0][0]} ({reasons(of_stage(removals, stages[0][0]))})"
    else:
        what = "filters: " + ", ".join(f"{stage} {n:,} ({percent(n, docs_in)})" for stage, n in stages)
    return (f"source '{source.name}' lost {lost:,} of {docs_in:,} documents ({percent(lost, docs_in)}) to {what}; "
            + "; ".join(keeping_settings(source, removals, stages, docs_in)))


def keeping_settings(source: SourceConfig, removals: list[Removals], stages: list[tuple[str, int]],
                     docs_in: int) -> list[str]:
    """The settings that keep what the fewest stages, the largest first, removed, so that what the others remove
    is less than half of the source; the filters among them as one `filters = [...]`."""
    lost, dropped = sum(n for _, n in stages), []
    for stage, n in stages:
        if lost <= MOST * docs_in:
            break
        dropped.append(stage)
        lost -= n
    clauses = [setting(source, of_stage(removals, stage)[0]) for stage in dropped if stage not in FILTERS]
    if off := [stage for stage in dropped if stage in FILTERS]:
        clauses.insert(0, without_filters(source, off))
    return clauses


def without_filters(source: SourceConfig, off: list[str]) -> str:
    """The `filters` setting without `off`, and why a web source that sets none runs them all."""
    others = [f for f in source.filters if f not in off]
    # A document counts against the first filter that rejects it: the filters left may reject some of these too.
    instead = (f"filters = {json.dumps(others)} (the filters left may take some of those: each document counts against "
               "the first that rejects it; filters = [] keeps them all)" if others else "filters = []")
    default = ""
    if source.is_web and source.filters == web_filters():
        which = f"with format = \"{source.format}\"" if READERS[source.format].web else "tagged \"web\""
        default = f" (a source {which} gets the web filters unless it sets `filters`)"
    return f"if that is not noise, set {instead} {WHERE}{default}"


def of_stage(removals: list[Removals], stage: str) -> list[Removals]:
    return [c for c in removals if c.fate == "filtered" and c.stage == stage]


def kept_nothing(source: SourceConfig, removals: list[Removals], docs_in: int) -> str:
    top = removals[0]
    detail = f": {top.detail}" if top.detail else ""
    change = setting(source, top)
    fix = f"; {change}" if change else ""
    return (f"source '{source.name}' kept 0 of {docs_in:,} documents; {top.n:,} were {top.fate} at {top.stage} "
            f"({top.reason}{detail}){fix}")


def removal_groups(removals: list[Removals], stages: list[tuple[str, int]]) -> list[list[Removals]]:
    """The removals that are not the filters' (those are judged together), grouped as one setting changes them: a
    fate (duplicates of every dedup stage, low quality, contamination, malformed input), or for `filtered` one
    stage (records over max_doc_bytes at read, an annotator's bounds, extraction)."""
    theirs = {stage for stage, _ in stages}
    groups: dict[tuple, list[Removals]] = {}
    for c in removals:
        if c.fate == "filtered" and c.stage in theirs:
            continue
        groups.setdefault((c.fate, c.stage) if c.fate == "filtered" else (c.fate,), []).append(c)
    return list(groups.values())


def nearly_all_warning(source: SourceConfig, group: list[Removals], docs_in: int) -> str:
    """The line of one removal (a group of removal_groups) that took more than NEARLY_ALL of a source."""
    lost, top = sum(c.n for c in group), group[0]
    where = f" at {top.stage}" if top.fate == "filtered" or len({c.stage for c in group}) == 1 else ""
    change = setting(source, top) or FATE_SETTINGS.get(top.fate)
    fix = f"; {change}" if change else ""
    return (f"source '{source.name}' lost {lost:,} of {docs_in:,} documents ({percent(lost, docs_in)}) as "
            f"{top.fate}{where} ({reasons(group)}){fix}")


FATE_SETTINGS = {  # what changes a fate's removals when no one reason's setting does
    "duplicate": "expected of a mirrored or repeated corpus; else the [dedup] settings (threshold, scope) say what "
                 "counts as a copy",
    "contaminated": "check the [decontaminate] eval sets and threshold in sources.toml",
    "malformed": "their raw records are in the generation's quarantine/",
}


def reasons(removals: list[Removals], shown: int = 3) -> str:
    """A stage's reasons: the one, or the first `shown` with their counts."""
    if len(removals) == 1:
        return str(removals[0].reason)
    return ", ".join(f"{c.reason} {c.n:,}" for c in removals[:shown]) + (", ..." if len(removals) > shown else "")


def setting(source: SourceConfig, removals: Removals) -> str | None:
    """The change to sources.toml that keeps what `removals` counts, as a clause; None when no setting does."""
    if removals.stage in FILTERS:
        return without_filters(source, [removals.stage])
    if (removals.stage, removals.reason) == ("langid", "lang_not_allowed"):
        return f"if those are wanted, add \"{removals.detail}\" to `languages` (or set languages = []) {WHERE}"
    if (removals.stage, removals.reason) == ("langid", "low_lang_score"):
        return f"if those are wanted, lower min_lang_score (now {source.min_lang_score}) {WHERE}"
    if is_plugin_stage(removals.stage) and removals.fate == "filtered":
        reference = next((r for r in source.steps if STAGE_PREFIX + step_name(r) == removals.stage), "")
        return f"if that is not noise, change the step or remove \"{reference}\" from `steps` {WHERE}"
    if removals.reason == ERROR_REASON:
        return "fix the step's error on those documents (their text is in the generation's quarantine/)"
    if removals.reason == "missing_text_field":
        return f"set text_field to the field that holds the text {WHERE}"
    if removals.reason == "too_large":
        return f"if those are wanted, raise max_doc_bytes (now {source.max_doc_bytes:,}) {WHERE}"
    if removals.stage == PersonalData.name:
        limits = ", ".join(f"{key} = {n}" for key, n in source.max_pii.items())
        return f"if those are wanted, raise max_pii (now {{{limits}}}) or drop it {WHERE}"
    if removals.fate == "low_quality":
        return low_quality_setting(source)
    return None


def low_quality_setting(source: SourceConfig) -> str:
    if source.keep_fraction is not None:
        return f"if those are wanted, raise keep_fraction (now {source.keep_fraction}) {WHERE}"
    return f"if those are wanted, lower quality_threshold (now {source.quality_threshold}) {WHERE}"


def percent(part: int, whole: int) -> str:
    """A share rounded down, so that only all of a source reads as 100%."""
    return f"{math.floor(100 * part / whole)}%"


def curation_warnings(con, funnel, sources: list[SourceConfig]) -> dict[str, list[str]]:
    """Every source's warnings, by source name in the order of `sources`; sources without one are left out."""
    counts = funnel_counts(con, funnel)
    found = {s.name: source_warnings(s, counts.get(s.name, [])) for s in sources}
    return {name: lines for name, lines in found.items() if lines}
