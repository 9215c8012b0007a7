"""The patterns that find personal data and secrets in a text, and its redaction: pure Python and `re`, compiled once
at import, so any worker can import it. The `pii` step calls `redact` or `count`; the config checks `pii_kinds` with
`check_kinds`. Where spans of two kinds overlap, one span is counted and replaced, under the first of PRIORITY.

What the patterns match (precision first: a false positive destroys training text):
- email: datatrove's PIIFormatter regex (RFC 5322's dot-atom local part, a dotted domain or a bracketed IPv4), but
  the last domain label must be 2-63 letters and not a file extension, so `pkg@1.2.3` (npm), `icon@2x.png` and
  `po/sr@latin.po` are kept, and it must not run on into a word (`a@b.org_c`). Obfuscated forms (`user at example
  dot com`, `user[at]example.org`) are not redacted.
- ip: IPv4 dotted quads (no leading zeros) and IPv6 in 2000::/3 (full or `::`-compressed, at least three groups
  written: not `2002::`, nor times or MAC addresses), only those `ipaddress` calls global and not multicast:
  private, loopback, link-local, shared, documentation (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32),
  reserved and multicast addresses identify no one and are kept, and so is a network's address (`192.0.3.0/24`).
  A dotted quad is a version or section number, not an address, when it is part of a longer number or name
  (`1.2.3.4.5`, `1.0.0.127.in-addr.arpa`), follows `v`, `==`, `->`, a name and a dash (`foo-1.2.3.4`) or, within
  four words on its line, a version word (version, release, build, changes, update, section, requires, ...), is
  followed by a revision (`1.2.3.4-1`, `~rc1`, `+dfsg`, `->`) or a heading's `. `, or has small parts (at most
  25.99.99.x: `1.2.3.4`, `1.16.4.3`, `6.2.4.1`) with no address word near it on its line (ip, address, host,
  server, dns, ping, connection, client, ..., or `from` right before it).
- phone: `+CC` numbers with spaces, dashes, dots or parentheses (7-15 digits; 10-13 written without separators),
  and national forms with separators: North American (555) 123-4567, 555-123-4567, 555.123.4567, 1-800-555-0199
  and trunk-0 numbers (020 7946 0958, 030 123456, 01 23 45 67 89: 9-11 digits, the last group of 4 or more or five
  pairs). Never a bare digit run, a part of a longer number, hex string or space-separated list, a date, an ISBN,
  an id after '#', a US ZIP+4, a time or a year range.
- secret: AWS access key ids, GitHub, Slack, Google API and Stripe live keys, PEM private key blocks (the whole
  block one span) and the value after a key-like name (password=, passwd:, token:, api_key=, secret=,
  access_key=, `"password": "..."`, `DB_PASSWORD=...`) when it is at least 8 characters, not a reference (`$X`,
  `${X}`, `<your key>`), a path or a URL (`PWD=/home/ann`), not a placeholder (your, example, xxxx, ****, or the
  key's own name again) and not a code identifier, dotted path or colon-separated field list without a digit
  (`password = form.password`, `token = next_token`, getpw(3)'s `name:passwd:uid:gid:gecos:dir:shell`), and its
  Shannon entropy per character reaches min(3.0, 0.85 log2(length)). So `password=changeme` is kept: a default or an
  example identifies no one and has no entropy to lose; `password=hunter2x9` is redacted. Hashes, UUIDs and base64
  on their own are kept.

Where the email and IPv4 spans differ from datatrove's PIIFormatter (tests/curation/test_pii_patterns.py compares
them on the bundled corpora, each difference in a named class): datatrove also redacts an email whose last domain
label is not 2-63 letters or is a file extension, a dotted quad inside a longer number or name (it has no
boundaries: `1.2.3.45678` gives `1.2.3.45`, `id-1.9.18.6` gives `1.9.18.6`), a version or section number, a
network's address and a multicast address; it finds no IPv6, phone or secret."""

import bisect
import functools
import ipaddress
import math
import re

from base.errors import UserError, did_you_mean

KINDS = ("email", "ip", "phone", "secret")
PLACEHOLDERS = {"email": "<EMAIL>", "ip": "<IP_ADDRESS>", "phone": "<PHONE>", "secret": "<SECRET>"}
MAX_PASSES = 4  # redact reads a text again while it finds more; each pass leaves fewer characters to match
PRIORITY = ("secret", "email", "ip", "phone")  # where spans of two kinds overlap, the earlier kind takes the span

# --- email -----------------------------------------------------------------------------------------------------------
_ATOM = r"[A-Za-z0-9!#$%&'*+=?^_`{|}~/-]+"  # datatrove's; '/' apart from '*' (no glob)
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)"
# File extensions that are no top-level domain: `icon@2x.png`, `po/sr@latin.po` name files, not mailboxes.
FILE_EXTENSIONS = "png|jpe?g|gif|svg|webp|ico|bmp|tiff?|css|js|html?|php|txt|json|xml|ya?ml|toml|po|pot|header"
_DOMAIN = (rf"(?:(?:{_LABEL}\.)+(?!(?:{FILE_EXTENSIONS})(?![A-Za-z0-9-]))[A-Za-z]{{2,63}}(?![\w-])"
           rf"|\[(?:{_OCTET}\.){{3}}{_OCTET}\])")
EMAIL = re.compile(rf"\b{_ATOM}(?:\.{_ATOM})*@{_DOMAIN}")
DOMAIN = re.compile(_DOMAIN)

_LOCAL_PART_WINDOW, _DOMAIN_WINDOW = 128, 256  # RFC 5321 allows 64 and 255 characters

# --- ip --------------------------------------------------------------------------------------------------------------
# The candidates' boundaries are checked in Python (`_isolated`): a pattern that starts with a lookbehind is not
# pre-scanned by `re` and costs several times as much.
IPV4 = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}")
_IPV4_TAIL = re.compile(r"\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}")  # led by a literal: scanned for 20x faster
IPV6 = re.compile(r"[23][0-9A-Fa-f]{3}(?::[0-9A-Fa-f]{0,4}){2,7}(?:(?<=:)[0-9]{1,3}(?:\.[0-9]{1,3}){3})?")
_VERSION_BEFORE = re.compile(
    r"(?:\b(?:versions?|ver|release[sd]?|rel|builds?|firmware|kernel|changelog|changes|tag(?:ged)?|sections?|"
    r"chapters?|abschnitt|kapitel|appendix|paragraph|§|merged?|revert(?:ed)?|requires?|new\s+in|"
    r"updat(?:e[sd]?|ing)|upgrad(?:e[sd]?|ing)|bump(?:ed|s)?)\W*(?:[\w.-]+\W+){0,3}"
    r"|\bv\.?\s*|[A-Za-z][\w.]*[-_]|[=<>~!]=\s*|->\s*)$", re.IGNORECASE)
_VERSION_AFTER = re.compile(r"[~+][\w.]|-[0-9]++(?!(?:\.[0-9]{1,3}){3})|\s*->")  # 1.2.3.4-1, ~rc1, +dfsg, 1.2.3.4 ->
_ADDRESS_WORDS = re.compile(  # not the <IP_ADDRESS> placeholder's `IP`, cut off by the window
    r"\b(?<!<)(?:ips?|ipv4|address(?:es)?|addr|hosts?|hostname|server|nameserver|dns|resolver|ping(?:ed)?|"
    r"connect(?:s|ed|ion)?|gateway|router|proxy|client|peer|remote|inet|login|logged|"
    r"block(?:ed)?|ban(?:ned)?|firewall|deny|denied|whois|visitor)\b", re.IGNORECASE)
_FROM = re.compile(r"\bfrom\s+$", re.IGNORECASE)  # `from` is an address word only right before the address
_NETWORK_PREFIX = re.compile(r"/([0-9]{1,3})(?![0-9])|/[0-9a-fA-F]*:")  # /24, or an IPv6 mask (/ffff:ff00::)
_BEFORE, _AFTER = 40, 24  # characters of the line read on either side of an address for the words around it


def _line_around(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the context of a match starts and ends: its line, at most _BEFORE and _AFTER characters of it. Patterns
    search it in place (pos, endpos), so that a word boundary at its edges is the text's own."""
    newline = text.find("\n", end, end + _AFTER)
    return max(text.rfind("\n", 0, start) + 1, start - _BEFORE), newline if newline >= 0 else end + _AFTER


def _led_by(text: str, tails: re.Pattern, pattern: re.Pattern, back: int):
    """The pattern's matches that start at most `back` characters before a match of `tails` and run through it, the
    earliest start first. `re` scans for a pattern led by a literal (`.`, `-`) many times faster than for one led by
    a digit class: the tail finds the few places worth matching the whole pattern at."""
    for tail in tails.finditer(text):
        for start in range(max(0, tail.start() - back), tail.start()):
            m = pattern.match(text, start)
            if m and m.end() >= tail.end():
                yield m
                break


def _isolated(text: str, start: int, end: int, before: str, after: str, joins: str = ".-") -> bool:
    """Whether the match is not part of something longer: the character before it is neither a letter, a digit nor
    one of `before`, and the one after neither a letter, a digit, one of `after`, nor one of `joins` before a
    digit."""
    if start and (text[start - 1].isalnum() or text[start - 1] in before):
        return False
    if end < len(text):
        nxt = text[end]
        if nxt.isalnum() or nxt in after or (nxt in joins and text[end + 1:end + 2].isdigit()):
            return False
    return True


@functools.lru_cache(maxsize=4096)  # a log repeats its addresses
def _public(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return ip.is_global and not ip.is_multicast


def _network(text: str, end: int, address: str) -> bool:
    """Whether the address is followed by a prefix length that makes it a network's address (192.0.3.0/24,
    2001:db00::/24): a range, not one host."""
    prefix = _NETWORK_PREFIX.match(text, end)
    if not prefix or not prefix.group(1):
        return bool(prefix)
    try:
        network = ipaddress.ip_network(f"{address}/{prefix.group(1)}")  # strict: host bits must be zero
    except ValueError:
        return False
    return network.prefixlen < network.max_prefixlen


def _version_like(text: str, start: int, end: int, address: str) -> bool:
    """Whether a dotted quad reads as a version or section number rather than an address: a version or section word,
    a package name or a pin (==) before it, a revision after it, a hostname label or a heading's '. ' after it, or small
    parts (at most 25.99.99.x: 1.2.3.4, 6.2.4.1, 1.91.6.1) with no address word near it (ip, host, server, ... or
    `from` just before it)."""
    lo, hi = _line_around(text, start, end)
    if _VERSION_BEFORE.search(text, lo, start) or _VERSION_AFTER.match(text, end):
        return True
    after = text[end:end + 2]
    if after[:1] == "." and (after[1:].isalpha() or not text[lo:start].strip() and after[1:].isspace()):
        return True  # a hostname's label follows (1.0.0.127.in-addr.arpa), or a heading's number (8.3.1.1. DNS)
    first, second, third, _ = map(int, address.split("."))
    small = first <= 25 and second <= 99 and third <= 99
    return small and not (_ADDRESS_WORDS.search(text, lo, start) or _ADDRESS_WORDS.search(text, end, hi)
                          or _FROM.search(text, lo, start))


def _ipv4_address(text: str, start: int, end: int, address: str) -> bool:
    return (_isolated(text, start, end, "_.", "_", ".") and _public(address)
            and not _network(text, end, address) and not _version_like(text, start, end, address))


def _ipv6_address(text: str, start: int, end: int, address: str) -> bool:
    """2000::/3 with at least three groups written (not `2002::`, nor `2004::` closing a sentence in reST)."""
    return (sum(1 for group in address.split(":") if group) >= 3 and _isolated(text, start, end, "_:.", "_:")
            and _public(address) and not _network(text, end, address))


def ip_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _led_by(text, _IPV4_TAIL, IPV4, 3) if _ipv4_address(text, *m.span(), m.group())]
    if "::" in text or text.count(":") >= 7:
        spans += [m.span() for m in IPV6.finditer(text) if _ipv6_address(text, *m.span(), m.group())]
    return spans


def email_spans(text: str) -> list[tuple[int, int]]:
    """EMAIL's matches, each looked for in a window around an '@': a scan of the whole text restarts at every word
    boundary of a long run of local-part characters (base64, `a-b-c-...`) and costs its square."""
    spans, pos = [], 0
    while (at := text.find("@", pos)) >= 0:
        if not DOMAIN.match(text, at + 1, at + _DOMAIN_WINDOW):
            pos = at + 1  # no address can use this '@'
            continue
        m = EMAIL.search(text, max(pos, at - _LOCAL_PART_WINDOW), at + _DOMAIN_WINDOW)
        if m:
            spans.append(m.span())
        pos = m.end() if m else at + 1
    return spans


# --- phone -----------------------------------------------------------------------------------------------------------
INTERNATIONAL = re.compile(r"\+[0-9]{1,3}(?:[ .-]?\([0-9]{1,4}\)[ .-]?[0-9]+|[ .-]?[0-9]+)(?:[ .-][0-9]+)*")
NORTH_AMERICAN = re.compile(r"[0-9][0-9][0-9]([-.])[0-9][0-9][0-9]\1[0-9]{4}|\([0-9]{3}\) ?[0-9]{3}[-. ][0-9]{4}")
_NORTH_AMERICAN_TAIL = re.compile(r"-[0-9]{3}-[0-9]{4}|\.[0-9]{3}\.[0-9]{4}|\) ?[0-9]{3}[-. ][0-9]{4}")
TRUNK_ZERO = re.compile(r"\(0[1-9][0-9]{0,3}\) ?[0-9]{2,8}(?:[ -][0-9]{2,8}){0,3}"  # (020) 7946 0958
                        r"|0[1-9][0-9]{0,3}(?:[ -][0-9]{2,8}){1,4}")  # 020 7946 0958, 030 123456, 01 23 45 67 89
_ZIP_PLUS_4 = re.compile(r"[0-9]{5}-[0-9]{4}")
_NOT_A_PHONE_BEFORE = re.compile(r"\b(?:ISBN|ISSN)(?:-1[03])?:?\s*$|[0-9][ .:/-]?$|#\s?$", re.IGNORECASE)  # #: an id


def _phone_numbers(text: str, matches, pattern: re.Pattern, fewest: int, most: int) -> list[tuple[int, int]]:
    """The pattern's matches with `fewest` to `most` digits that do not continue a number (a national one: nor
    follow a number and a space, an ISBN or a '#')."""
    spans = []
    for m in matches:
        start, end = m.span()
        if pattern is NORTH_AMERICAN and start >= 2 and text[start - 2] == "1" and text[start - 1] in "-. ":
            start -= 2  # 1-800-555-0199: the country code without its '+'
        digits = sum(c.isdigit() for c in text[start:end])
        if (fewest <= digits <= most and _isolated(text, start, end, "+-./_~", "/_+", " .-")
                and (pattern is INTERNATIONAL or not _NOT_A_PHONE_BEFORE.search(text, max(0, start - 12), start))
                and _phone_shaped(text[start:end], digits)):
            spans.append((start, end))
    return spans


def _phone_shaped(number: str, digits: int) -> bool:
    """An international number written without separators has 10-13 digits (not a +20191229111838 snapshot); a
    trunk-0 one ends in a group of 4 or more digits or is five pairs (01 23 45 67 89), and is not a US ZIP+4
    (02111-1307)."""
    if number[0] == "+":
        return digits + 1 != len(number) or 10 <= digits <= 13
    if number[0] == "0" or number.startswith("(0"):
        groups = re.split(r"[ ()-]+", number.strip("()"))
        pairs = len(groups) == 5 and all(len(g) == 2 for g in groups)
        return (pairs or len(groups[-1]) >= 4) and not _ZIP_PLUS_4.fullmatch(number)
    return True


def phone_spans(text: str) -> list[tuple[int, int]]:
    spans = _phone_numbers(text, INTERNATIONAL.finditer(text), INTERNATIONAL, 7, 15) if "+" in text else []
    north_american = _led_by(text, _NORTH_AMERICAN_TAIL, NORTH_AMERICAN, 4)
    return (spans + _phone_numbers(text, north_american, NORTH_AMERICAN, 10, 11)
            + _phone_numbers(text, TRUNK_ZERO.finditer(text), TRUNK_ZERO, 9, 11))


# --- secret ----------------------------------------------------------------------------------------------------------
TOKENS = re.compile(
    r"(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key id
    r"|gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9-]{10,250}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|[sr]k_live_[0-9A-Za-z]{16,247}"  # Stripe live keys
    r"|-----BEGIN (?P<pem>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----"  # PEM, OpenSSH and PGP private keys: the block,
    r"(?:[\s\S]{0,16384}?-----END (?P=pem)-----|(?:\s*[A-Za-z0-9+/=]{16,})+)")  # or, cut short, its base64
_TOKEN_START = re.compile(  # literals, which `re` scans for several times faster than TOKENS itself
    r"AKIA|ASIA|ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|xoxa-|xoxb-|xoxp-|xoxr-|xoxs-|AIza|sk_live_|rk_live_|-----BEGIN ")
# Where a key-like name is assigned: case-sensitive literals first, which `re` scans for far faster than an
# IGNORECASE pattern; the whole identifier around it is then read and checked against _KEY_NAME.
_NAME_HINT = re.compile(r"(?:pass|Pass|PASS|pwd|Pwd|PWD|secret|Secret|SECRET|token|Token|TOKEN|key|Key|KEY)"
                        r"[\w.-]*['\"]?\s*(?::=|=>|[:=])")
_KEY_NAME = re.compile(
    r"(?:.*[_.-])?(?:password|passwd|passphrase|pwd|secret|secret[_-]?key|secret[_-]?access[_-]?key|client[_-]?secret"
    r"|token|auth[_-]?token|access[_-]?token|refresh[_-]?token|api[_-]?key|apikey|api[_-]?secret|access[_-]?key"
    r"|private[_-]?key)", re.IGNORECASE)
_ASSIGNED = re.compile(
    r"['\"]?\s*(?::=|=>|[:=])(?![:=])[ \t]*"
    r"(?:(?P<quote>['\"])(?P<quoted>[^'\"\s<>{}]{8,200})(?P=quote)"
    r"|(?P<bare>[^\s'\"<>,;&(){}\[\]\\`|]{8,200})(?![^\s'\",;&)}\]]))")
_IDENTIFIER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_CODE_PATH = re.compile(r"[A-Za-z_]+(?:[.:][A-Za-z_]+)*")  # self.password, changeme, uid:gid:shell: letters, no digit
_PLACEHOLDER_VALUE = re.compile(  # an example or a name, not a secret (nor ****, which has no entropy): also
    r"your|example|sample|placeholder|dummy|redacted|xxxx|\.\.\.|%20|password|passwd|secret|token",  # the key again
    re.IGNORECASE)
_PATH_STARTS = ("/", "~/", "./", "../")  # PWD=/home/ann/src is a folder, token: https://... a URL
MIN_SECRET_LENGTH = 8
MAX_ENTROPY_NEEDED = 3.0  # bits per character; a random 16-character base62 token has about 3.7


def shannon_entropy(value: str) -> float:
    """Bits per character of the value's own character distribution."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in (value.count(ch) for ch in set(value)))


def secret_value(value: str) -> bool:
    """Whether the value after a key-like name is a secret rather than code, a reference, a path, a URL or a
    placeholder."""
    if (len(value) < MIN_SECRET_LENGTH or value[0] in "$%" or value.startswith(_PATH_STARTS) or "://" in value
            or _CODE_PATH.fullmatch(value) or _PLACEHOLDER_VALUE.search(value)):
        return False
    return shannon_entropy(value) >= min(MAX_ENTROPY_NEEDED, 0.85 * math.log2(len(value)))


def _assigned_secrets(text: str) -> list[tuple[int, int]]:
    """The secret values assigned to key-like names (`DB_PASSWORD=...`, `"api_key": "..."`, `token: ...`)."""
    spans = []
    for hint in _NAME_HINT.finditer(text):
        start = end = hint.start()
        while start and text[start - 1] in _IDENTIFIER_CHARS:
            start -= 1
        while end < len(text) and text[end] in _IDENTIFIER_CHARS:
            end += 1
        if not _KEY_NAME.fullmatch(text, start, end):
            continue
        value = _ASSIGNED.match(text, end)
        if value:
            group = "quoted" if value.group("quoted") else "bare"
            start, end = value.span(group)
            if group == "bare":
                end = start + len(text[start:end].rstrip(".,:;!?"))  # a sentence's punctuation after it
            if secret_value(text[start:end]):
                spans.append((start, end))
    return spans


def secret_spans(text: str) -> list[tuple[int, int]]:
    tokens = (TOKENS.match(text, start.start()) for start in _TOKEN_START.finditer(text))
    spans = [m.span() for m in tokens if m and _isolated(text, *m.span(), "_", "_-", "")]
    return spans + _assigned_secrets(text)


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
    starts: list[int] = []
    taken: list[tuple[int, int, str]] = []  # sorted by start, none overlapping
    for kind in PRIORITY:
        if kind not in kinds:
            continue
        for start, end in sorted(FINDERS[kind](text), key=lambda s: (s[0], -s[1])):
            i = bisect.bisect_right(starts, start)
            if (i and taken[i - 1][1] > start) or (i < len(taken) and taken[i][0] < end):
                continue
            starts.insert(i, start)
            taken.insert(i, (start, end, kind))
    return taken


def count(text: str, kinds) -> dict[str, int]:
    """How many spans of each given kind redact finds in the text (every given kind a key)."""
    return redact(text, kinds)[1]


def redact(text: str, kinds) -> tuple[str, dict[str, int]]:
    """The text with each span of the given kinds replaced by its kind's placeholder, and the count per kind. A span
    can stand out only once its neighbour is replaced (an IPv4 address run into an IPv6 one: `1.2.3.4-2001:db8::`
    reads as a version's revision until the IPv6 is a placeholder), so the text is read again until nothing more
    is found: redacting twice changes nothing."""
    counts = dict.fromkeys(_as_tuple(kinds), 0)
    for _ in range(MAX_PASSES):
        found = spans(text, kinds)
        if not found:
            break
        parts, last = [], 0
        for start, end, kind in found:
            parts += [text[last:start], PLACEHOLDERS[kind]]
            counts[kind] += 1
            last = end
        parts.append(text[last:])
        text = "".join(parts)
    return text, counts
