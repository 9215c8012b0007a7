"""Licences as SPDX spells them: a source's `license` checked and normalized (an SPDX id or expression, such as
"MIT" or "GPL-2.0-or-later OR CC-BY-SA-3.0", a `LicenseRef-...` of one's own, or "unknown"), and whether a
mixture's `allow_licenses` allows one. The SPDX list is the one license-expression (nexB) ships, offline."""

from functools import cache

from base.errors import UserError, near_misses

UNKNOWN = "unknown"  # a source whose licence nobody recorded
OWN_PREFIX = "LicenseRef-"  # SPDX's prefix for a licence not on its list
EXAMPLES = '"MIT", "CC-BY-4.0", "GPL-2.0-or-later OR CC-BY-SA-3.0"'
DEBIAN_NAMES = {"expat": "mit"}  # Debian's copyright files' names that are not SPDX's (DEP-5)


@cache
def _licensing():
    from license_expression import get_spdx_licensing  # loads the SPDX index: only where a licence is checked

    return get_spdx_licensing()


@cache
def spdx_ids() -> dict[str, str]:
    """Every SPDX licence and exception id (the list's own, not scancode's additions), by its lowercase spelling."""
    return {key.lower(): key for key, symbol in _licensing().known_symbols.items()
            if key == symbol.key and not key.startswith(OWN_PREFIX)}


def spdx_license(value, where: str, key: str = "license") -> str:
    """`value` as SPDX spells it (ids matched case-insensitively: "mit" is "MIT", "gpl-2.0+" is
    "GPL-2.0-or-later"), or "unknown"; a UserError naming `where`'s `key`, with a did-you-mean, for anything else."""
    from license_expression import ExpressionError

    fix = f"use an SPDX licence id or expression ({EXAMPLES}), a LicenseRef-NAME of your own, or \"{UNKNOWN}\""
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{where}: `{key}` must be a non-empty string; {fix}")
    if value.strip().lower() == UNKNOWN:
        return UNKNOWN
    try:
        parsed = _licensing().parse(value, strict=True)  # strict: an exception only after WITH, a licence never
    except ExpressionError as err:  # its parse errors too
        raise UserError(f"{where}: `{key}` = {value!r} is not a licence expression ({err}); {fix}") from None
    symbols = _licensing().license_symbols(parsed, unique=True, decompose=True)
    if unknown := [s.key for s in symbols if s.key.lower() not in spdx_ids() and not s.key.startswith(OWN_PREFIX)]:
        raise UserError(f"{where}: `{key}` = {value!r}: '{unknown[0]}' is no SPDX licence id"
                        f"{_closest(unknown[0])}; {fix}")
    return parsed.render()


def _closest(word: str) -> str:
    """` (did you mean 'X'?)` for the SPDX id `word` means in Debian's copyright files' spelling ("GPL-3+",
    "GPL-2", "Expat"), else the nearest in any case, or ""."""
    base = word.lower().removesuffix("+")
    endings = ("-or-later", ".0-or-later") if word.endswith("+") else ("-only", ".0-only")
    debian = [DEBIAN_NAMES[base]] if base in DEBIAN_NAMES else [base + e for e in endings if base + e in spdx_ids()]
    close = debian or near_misses(word.lower(), spdx_ids())
    return f" (did you mean '{spdx_ids()[close[0]]}'?)" if close else ""


def allows(allowed, license: str) -> bool:
    """Whether a list of allowed licences admits `license`: named in it whole, or an OR with one side admitted, or
    an AND whose every side is admitted (a licence WITH an exception only when named whole). "unknown" only when
    the list names it."""
    if license in allowed:
        return True
    if license == UNKNOWN:
        return False
    return _admits(set(allowed), _licensing().parse(license))


def _admits(allowed: set[str], node) -> bool:
    if node.render() in allowed:
        return True
    operator = getattr(node, "operator", "").strip()
    if operator == "OR":
        return any(_admits(allowed, arg) for arg in node.args)
    if operator == "AND":
        return all(_admits(allowed, arg) for arg in node.args)
    return False
