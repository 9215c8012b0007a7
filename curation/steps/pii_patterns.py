"""The patterns that find personal data and secrets in a text, and its redaction: pure Python and `re`, compiled once
at import, so any worker can import it. The `pii` step calls `redact` or `count`; the config checks `pii_kinds` with
`check_kinds`.

What the patterns match (precision first: a false positive destroys training text):
- email: datatrove's PIIFormatter regex (RFC 5322's dot-atom local part, a dotted domain or a bracketed IPv4), but
  the last domain label must be 2-63 letters and not an image or asset extension, so `pkg@1.2.3` (npm) and
  `icon@2x.png` are kept. Obfuscated forms (`user at example dot com`, `user[at]example.org`) are not redacted.
- ip: IPv4 dotted quads (no leading zeros) and IPv6 in 2000::/3 (full or `::`-compressed, at least two colons),
  only those `ipaddress` calls global and not multicast: private, loopback, link-local, shared, documentation
  (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32), reserved and multicast addresses identify no one and
  are kept. A dotted quad is a version, not an address, when it is part of a longer dotted number (1.2.3.4.5),
  follows `v`, a package name and a dash (`foo-1.2.3.4`) or, within three words, a version word (version, release,
  build, firmware, update, bump, ...), or is followed by a Debian-like revision (`1.2.3.4-1`, `~rc1`, `+dfsg`).
- phone: `+CC` numbers with spaces, dashes, dots or parentheses (7-15 digits in all), and national forms with
  separators: North American (555) 123-4567, 555-123-4567, 555.123.4567 and trunk-0 numbers (020 7946 0958,
  030 123456, 01 23 45 67 89; 9-11 digits). Never a bare digit run, a part of a longer number or hex string, a
  date, an ISBN, a time or a year range.
- secret: AWS access key ids, GitHub, Slack, Google API and Stripe live keys, PEM private key blocks (the whole
  block one span) and the value after a key-like name (password=, token:, api_key=, secret=, ...) when it is at
  least 8 characters, not a reference (`${X}`, `<your key>`), not a code identifier or dotted path without a digit
  (`password = form.password`, `password=changeme`: a default or example carries no one's secret and no entropy)
  and its Shannon entropy per character reaches min(3.0, 0.85 log2(length)). Hashes, UUIDs and base64 on their own
  are kept.

Where the email and IPv4 spans differ from datatrove's PIIFormatter (tests/curation/test_pii_patterns.py compares
them on the bundled corpora): datatrove also redacts an email whose domain ends in digits or an image extension, a
dotted quad inside a longer number (it has no boundaries: `1.2.3.45678` gives `1.2.3.45`), a version-like quad
and a multicast address; it finds no IPv6, phone or secret."""

import ipaddress
import math
import re

from base.errors import UserError, did_you_mean

KINDS = ("email", "ip", "phone", "secret")
PLACEHOLDERS = {"email": "<EMAIL>", "ip": "<IP_ADDRESS>", "phone": "<PHONE>", "secret": "<SECRET>"}
PRIORITY = ("secret", "email", "ip", "phone")  # where spans of two kinds overlap, the earlier kind takes the span

# --- email -----------------------------------------------------------------------------------------------------------
_ATOM = r"[A-Za-z0-9!#$%&'*+=?^_`{|}~/-]+"  # datatrove's; '/' apart from '*' (no glob)
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)"
_ASSET_EXTENSIONS = "png|jpe?g|gif|svg|webp|ico|bmp|tiff?|css|js"
EMAIL = re.compile(
    rf"\b{_ATOM}(?:\.{_ATOM})*@"
    rf"(?:(?:{_LABEL}\.)+(?!(?:{_ASSET_EXTENSIONS})(?![A-Za-z0-9-]))[A-Za-z]{{2,63}}(?![A-Za-z0-9-])"
    rf"|\[(?:{_OCTET}\.){{3}}{_OCTET}\])")

# --- ip --------------------------------------------------------------------------------------------------------------
IPV4 = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?!\.?\d|\w)")
IPV6 = re.compile(r"(?<![\w:.])[23][0-9A-Fa-f]{3}(?::[0-9A-Fa-f]{0,4}){2,7}"
                  r"(?:(?<=:)\d{1,3}(?:\.\d{1,3}){3})?(?![\w:]|\.\d)")
_VERSION_BEFORE = re.compile(
    r"(?:\b(?:versions?|ver|release[sd]?|rel|builds?|firmware|kernel|updated?|upgraded?|bump(?:ed|s)?|"
    r"changelog|tag(?:ged)?)\b\W*(?:[\w.-]+\W+){0,2}|\bv\.?\s*|[A-Za-z][\w.]*[-_])$", re.IGNORECASE)
_VERSION_AFTER = re.compile(r"[~+][\w.]|-\d+(?!\.\d{1,3}\.\d{1,3}\.\d{1,3})")
_CONTEXT = 40  # characters before a dotted quad read for a version word


def _public(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return ip.is_global and not ip.is_multicast


def _version_like(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - _CONTEXT):start].rsplit("\n", 1)[-1]
    return bool(_VERSION_BEFORE.search(before) or _VERSION_AFTER.match(text, end))


def ip_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    if "." in text:
        spans += [m.span() for m in IPV4.finditer(text)
                  if _public(m.group()) and not _version_like(text, m.start(), m.end())]
    if "::" in text or text.count(":") >= 7:
        spans += [m.span() for m in IPV6.finditer(text) if _public(m.group())]
    return spans


def email_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in EMAIL.finditer(text)] if "@" in text else []


# --- phone -----------------------------------------------------------------------------------------------------------
INTERNATIONAL = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(\d{1,4}\)[ .-]?\d+|[ .-]?\d+)(?:[ .-]\d+)*")
NATIONAL = re.compile(
    r"(?<![\w.+-])(?:\(\d{3}\) ?\d{3}[-. ]\d{4}"  # (555) 123-4567
    r"|\d{3}-\d{3}-\d{4}|\d{3}\.\d{3}\.\d{4}"  # 555-123-4567, 555.123.4567
    r"|\(0[1-9]\d{0,3}\) ?\d{2,8}(?:[ -]\d{2,8}){0,3}"  # (020) 7946 0958
    r"|0[1-9]\d{0,3}(?:[ -]\d{2,8}){1,4})")  # 020 7946 0958, 030 123456, 01 23 45 67 89
_CONTINUES = re.compile(r"[ .-]?\d|[\w/]")  # a number that goes on past the match is not a phone number
_NO_PHONE_BEFORE = re.compile(r"(?:\b(?:ISBN|ISSN)(?:-1[03])?:?\s*|[\d/:]\s?|[\d][.-])$", re.IGNORECASE)


def _digits(s: str) -> int:
    return sum(c.isdigit() for c in s)


def _phone_like(text: str, m: re.Match, low: int, high: int) -> bool:
    if not low <= _digits(m.group()) <= high or _CONTINUES.match(text, m.end()):
        return False
    return not _NO_PHONE_BEFORE.search(text[max(0, m.start() - 12):m.start()])


def phone_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    if "+" in text:
        spans += [m.span() for m in INTERNATIONAL.finditer(text) if _phone_like(text, m, 7, 15)]
    for m in NATIONAL.finditer(text):
        low = 10 if m.group()[0] != "0" and not m.group().startswith("(0") else 9
        if _phone_like(text, m, low, 11):
            spans.append(m.span())
    return spans


# --- secret ----------------------------------------------------------------------------------------------------------
TOKENS = re.compile(
    r"\b(?:(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key id
    r"|gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9-]{10,250}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|[sr]k_live_[0-9A-Za-z]{16,247})(?![\w-])"  # Stripe live keys
    r"|-----BEGIN (?P<pem>[A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?-----END (?P=pem)PRIVATE KEY-----")
_KEY_NAMES = (r"password|passwd|passphrase|pwd|secret|secret[_-]?key|secret[_-]?access[_-]?key|client[_-]?secret"
              r"|token|auth[_-]?token|access[_-]?token|refresh[_-]?token|api[_-]?key|api[_-]?secret"
              r"|access[_-]?key|private[_-]?key")
KEY_VALUE = re.compile(
    rf"(?:(?<=[_.-])|(?<![A-Za-z0-9]))(?:{_KEY_NAMES})['\"]?\s*(?::=|=>|[:=])[ \t]*"
    r"(?:(?P<quote>['\"])(?P<quoted>[^'\"\s<>{}$]{8,200})(?P=quote)"
    r"|(?P<bare>[^\s'\"<>,;&(){}\[\]$\\`|]{8,200})(?![^\s'\",;&)}\]]))", re.IGNORECASE)
_KEY_HINT = re.compile(r"pass|pwd|secret|token|key", re.IGNORECASE)
_CODE_PATH = re.compile(r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)*")  # self.password, changeme: no digit
_PLACEHOLDER_VALUE = re.compile(r"(?i)(?:your|example|sample|placeholder|dummy|redacted|xxxx|\*\*\*\*|\.\.\.)")
MIN_SECRET_LENGTH = 8
MAX_ENTROPY_NEEDED = 3.0  # bits per character; a random 16-character base62 token has about 3.7


def shannon_entropy(value: str) -> float:
    """Bits per character of the value's own character distribution."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in (value.count(ch) for ch in set(value)))


def secret_value(value: str) -> bool:
    """Whether the value after a key-like name is a secret rather than code, a reference or a placeholder."""
    if len(value) < MIN_SECRET_LENGTH or _CODE_PATH.fullmatch(value) or _PLACEHOLDER_VALUE.search(value):
        return False
    return shannon_entropy(value) >= min(MAX_ENTROPY_NEEDED, 0.85 * math.log2(len(value)))


def secret_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in TOKENS.finditer(text)]
    if _KEY_HINT.search(text):
        for m in KEY_VALUE.finditer(text):
            group = "quoted" if m.group("quoted") else "bare"
            if secret_value(m.group(group)):
                spans.append(m.span(group))
    return spans


# --- the API ---------------------------------------------------------------------------------------------------------
FINDERS = {"email": email_spans, "ip": ip_spans, "phone": phone_spans, "secret": secret_spans}


def check_kinds(kinds, where: str) -> None:
    """Every kind must be one of KINDS; the first unknown one is named, with the known ones."""
    for kind in _as_tuple(kinds):
        if kind not in PLACEHOLDERS:
            raise UserError(f"{where}: pii_kinds has unknown kind '{kind}'; known: {', '.join(KINDS)}"
                            f"{did_you_mean(str(kind), KINDS)}")


def _as_tuple(kinds) -> tuple:
    return (kinds,) if isinstance(kinds, str) else tuple(kinds)


def spans(text: str, kinds) -> list[tuple[int, int, str]]:
    """The spans of the given kinds, sorted, none overlapping: where two overlap, the kind earlier in PRIORITY (then
    the earlier, then the longer span) keeps it."""
    kinds = _as_tuple(kinds)
    check_kinds(kinds, "pii")
    taken: list[tuple[int, int, str]] = []
    for kind in PRIORITY:
        if kind not in kinds:
            continue
        for start, end in sorted(FINDERS[kind](text), key=lambda s: (s[0], -s[1])):
            if not any(start < t_end and t_start < end for t_start, t_end, _ in taken):
                taken.append((start, end, kind))
    return sorted(taken)


def count(text: str, kinds) -> dict[str, int]:
    """How many spans of each given kind the text holds (every given kind a key)."""
    counts = dict.fromkeys(_as_tuple(kinds), 0)
    for _, _, kind in spans(text, kinds):
        counts[kind] += 1
    return counts


def redact(text: str, kinds) -> tuple[str, dict[str, int]]:
    """The text with each span of the given kinds replaced by its kind's placeholder, and the count per kind."""
    counts = dict.fromkeys(_as_tuple(kinds), 0)
    found = spans(text, kinds)
    if not found:
        return text, counts
    parts, last = [], 0
    for start, end, kind in found:
        parts += [text[last:start], PLACEHOLDERS[kind]]
        counts[kind] += 1
        last = end
    parts.append(text[last:])
    return "".join(parts), counts
