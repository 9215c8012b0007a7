"""A source's personal-data settings in sources.toml (`pii`, `pii_kinds`, `max_pii`): every check, one line each,
before any compute. The patterns and placeholders are curation.steps.pii_patterns'; the step is curation.steps.pii."""

from base.errors import UserError, did_you_mean, is_whole_number, string_list
from curation.steps.pii import TOTAL
from curation.steps.pii_patterns import KINDS, check_kinds

PII_MODES = ("redact", "count", "off")


def parse_pii(values: dict, where: str) -> None:
    """Checks and normalizes, in place, a [[source]] table's pii keys: `pii_kinds` a tuple of known kinds, `max_pii`
    a table by kind (or TOTAL) of whole numbers (a number alone is the TOTAL)."""
    mode = values.get("pii")
    if mode is not None and mode not in PII_MODES:
        raise UserError(f"{where}: `pii` = {mode!r} is unknown{did_you_mean(str(mode), PII_MODES)}; use \"redact\" "
                        "(replace each span by its placeholder), \"count\" (count, change nothing) or \"off\"")
    if "pii_kinds" in values:
        kinds = string_list(values["pii_kinds"], f"{where}: `pii_kinds`")
        check_kinds(kinds, where)
        values["pii_kinds"] = tuple(dict.fromkeys(kinds))
    kinds = values.get("pii_kinds", KINDS)
    if "max_pii" in values:
        values["max_pii"] = max_pii_table(values["max_pii"], kinds, where)


def max_pii_table(value, kinds, where: str) -> dict:
    """`max_pii` as {kind or TOTAL: the most spans a kept document may hold}."""
    if is_whole_number(value):
        value = {TOTAL: value}
    if not isinstance(value, dict) or not all(is_whole_number(n) and n >= 0 for n in value.values()):
        raise UserError(f"{where}: `max_pii` must be a whole number of spans (of every kind together) or a table "
                        "of them by kind, e.g. max_pii = {email = 5, secret = 0}")
    known = (*kinds, TOTAL)
    if unknown := [key for key in value if key not in known]:
        raise UserError(f"{where}: max_pii.{unknown[0]} is not a kind the source looks for"
                        f"{did_you_mean(unknown[0], known)}; use any of {', '.join(known)} (pii_kinds names the kinds)")
    return dict(value)


def check_pii_runs(source, where: str, pii_set: bool) -> None:
    """A source whose `max_pii` cannot act (its pii is off, `pii_set` saying whether the table set it) is told so."""
    if source.max_pii and source.pii == "off":
        why = "" if pii_set else " (the default of a source that is not web text)"
        raise UserError(f"{where}: `max_pii` is set but pii = \"off\"{why}; set pii = \"redact\" or \"count\"")
