"""What a source's funnel says that its owner must not miss: one filter (or plugin step) took most of it (the web
filters judging documentation or code), or nothing of it was kept. Each warning names the setting that changes it."""

import json
import math
from dataclasses import dataclass

from base.sql import literal
from curation.config import SourceConfig
from curation.steps.filters import FILTERS
from curation.steps.plugins import ERROR_REASON, STAGE_PREFIX, is_plugin_stage, step_name

MOST = 0.5  # losing more than this share of a source's records to one filter is a warning


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
    """The warnings of one source's funnel counts, each one line (without the `warning: ` its printer adds). A
    filter is judged by all it removed, whatever the reason: short pages fail Gopher's repetition filter on
    top_2_gram, top_3_gram or top_4_gram, none of which alone may be most of them."""
    docs_in = sum(c.n for c in counts)
    kept = sum(c.n for c in counts if c.fate == "kept")
    removals = [c for c in counts if c.fate != "kept"]
    warnings = []
    stage, lost = next(iter(by_stage(removals)), (None, 0))
    if lost > MOST * docs_in:
        mine = [c for c in removals if c.fate == "filtered" and c.stage == stage]
        warnings.append(f"source '{source.name}' lost {lost:,} of {docs_in:,} documents ({percent(lost, docs_in)}) "
                        f"to {stage} ({reasons(mine)}); {setting(source, mine[0])}")
    if kept == 0 and removals and lost < docs_in:
        top = removals[0]
        detail = f": {top.detail}" if top.detail else ""
        change = setting(source, top)
        fix = f"; {change}" if change else ""
        warnings.append(f"source '{source.name}' kept 0 of {docs_in:,} documents; {top.n:,} were {top.fate} at "
                        f"{top.stage} ({top.reason}{detail}){fix}")
    return warnings


def by_stage(removals: list[Removals]) -> list[tuple[str, int]]:
    """The documents each stage a setting can turn off or loosen (a filter, langid, a plugin step) filtered out, the
    most first."""
    totals: dict[str, int] = {}
    for c in removals:
        if c.fate == "filtered" and (c.stage in FILTERS or c.stage == "langid" or is_plugin_stage(c.stage)):
            totals[c.stage] = totals.get(c.stage, 0) + c.n
    return sorted(totals.items(), key=lambda item: -item[1])


def reasons(removals: list[Removals], shown: int = 3) -> str:
    """A stage's reasons: the one, or the first `shown` with their counts."""
    if len(removals) == 1:
        return str(removals[0].reason)
    return ", ".join(f"{c.reason} {c.n:,}" for c in removals[:shown]) + (", ..." if len(removals) > shown else "")


def setting(source: SourceConfig, removals: Removals) -> str | None:
    """The change to sources.toml that keeps what `removals` counts, as a clause; None when no setting does."""
    where = "for it in sources.toml"
    if removals.stage in FILTERS:
        others = [f for f in source.filters if f != removals.stage]
        instead = f"filters = {json.dumps(others)} (or filters = [])" if others else "filters = []"
        return f"if that is not noise, set {instead} {where}"
    if (removals.stage, removals.reason) == ("langid", "lang_not_allowed"):
        return f"if those are wanted, add \"{removals.detail}\" to `languages` (or set languages = []) {where}"
    if (removals.stage, removals.reason) == ("langid", "low_lang_score"):
        return f"if those are wanted, lower min_lang_score (now {source.min_lang_score}) {where}"
    if is_plugin_stage(removals.stage) and removals.fate == "filtered":
        reference = next((r for r in source.steps if STAGE_PREFIX + step_name(r) == removals.stage), "")
        return f"if that is not noise, change the step or remove \"{reference}\" from `steps` {where}"
    if removals.reason == ERROR_REASON:
        return "fix the step's error on those documents (their text is in the generation's quarantine/)"
    if removals.reason == "missing_text_field":
        return f"set text_field to the field that holds the text {where}"
    return None


def percent(part: int, whole: int) -> str:
    """A share rounded down, so that only all of a source reads as 100%."""
    return f"{math.floor(100 * part / whole)}%"


def curation_warnings(con, funnel, sources: list[SourceConfig]) -> dict[str, list[str]]:
    """Every source's warnings, by source name in the order of `sources`; sources without one are left out."""
    counts = funnel_counts(con, funnel)
    found = {s.name: source_warnings(s, counts.get(s.name, [])) for s in sources}
    return {name: lines for name, lines in found.items() if lines}
