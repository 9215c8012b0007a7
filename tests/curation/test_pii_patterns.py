"""The PII patterns (curation/steps/pii_patterns.py) on planted sentences (tests/curation/pii_planted.py) and against
datatrove's PIIFormatter on the bundled corpora: pure functions, no cluster."""

import ipaddress
import re
from collections import Counter

import pytest
from datatrove.pipeline.formatters.pii import PIIFormatter
from hypothesis import given, settings
from hypothesis import strategies as st

from base.errors import UserError
from curation.config import load_sources
from curation.samples import source_texts
from curation.steps.pii_patterns import (FILE_EXTENSIONS, KINDS, PLACEHOLDERS, _version_like, check_kinds, count,
                                         redact, spans)
from helpers import EXAMPLES
from pii_planted import KNOWN_MISSES, NEAR_MISSES, VALID


def scores(kind: str) -> tuple[int, int, int, list[str]]:
    """(planted, found, near misses redacted, the valid sentences missed) for one kind, every kind looked for."""
    missed = [text for text in VALID[kind] if count(text, KINDS) != {k: int(k == kind) for k in KINDS}]
    false_positives = sum(1 for text in NEAR_MISSES[kind] if any(count(text, KINDS).values()))
    return len(VALID[kind]), len(VALID[kind]) - len(missed), false_positives, missed


@pytest.mark.parametrize("kind", KINDS)
def test_recall_and_false_positives_on_the_planted_sentences(kind):
    """Each valid sentence holds exactly one span, of its kind; no near miss holds any. The misses are the known
    ones, each with its reason in pii_planted.KNOWN_MISSES."""
    planted, found, false_positives, missed = scores(kind)
    assert len(VALID[kind]) >= 10 and len(NEAR_MISSES[kind]) >= 10
    assert missed == KNOWN_MISSES[kind]
    assert false_positives == 0, [t for t in NEAR_MISSES[kind] if any(count(t, KINDS).values())]
    assert found >= 0.9 * planted


@pytest.mark.parametrize("text, redacted", [
    ("Mail jane.doe@example.com or ping 8.8.8.8 from 10.0.0.1.",
     "Mail <EMAIL> or ping <IP_ADDRESS> from 10.0.0.1."),
    ("loom (1.2.3.4-1) unstable; maintainer Ann <ann@debian.org>",
     "loom (1.2.3.4-1) unstable; maintainer Ann <<EMAIL>>"),
    ("Call +44 20 7946 0958 or (555) 123-4567, not ISBN 0-306-40615-2 on 2024-01-15.",
     "Call <PHONE> or <PHONE>, not ISBN 0-306-40615-2 on 2024-01-15."),
    ("DB_PASSWORD=Xk9#mQ2$vL7p\nAWS=AKIAIOSFODNN7EXAMPLE\npassword = form.password",
     "DB_PASSWORD=<SECRET>\nAWS=<SECRET>\npassword = form.password"),
    ("key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\nkqhkiG9w0BAQEF\n-----END PRIVATE KEY-----\ndone",
     "key:\n<SECRET>\ndone"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAEbm9uZQAAAAAAAAAB\n(cut here)",
     "<SECRET>\n(cut here)"),
    ("host 2001:4860:4860::8888, docs 2001:db8::1, at 12:30:45", "host <IP_ADDRESS>, docs 2001:db8::1, at 12:30:45"),
    ("Write to user at example dot com; sha 9fceb02d0ae598e95dc970b74767f19372d61af8.",
     "Write to user at example dot com; sha 9fceb02d0ae598e95dc970b74767f19372d61af8."),
])
def test_redact_replaces_each_span_with_its_kinds_placeholder(text, redacted):
    assert redact(text, KINDS)[0] == redacted


def test_counts_name_every_given_kind_and_only_those():
    text = "a@example.com b@example.org from 93.184.216.34 +1 (555) 123-4567"
    assert count(text, KINDS) == {"email": 2, "ip": 1, "phone": 1, "secret": 0}
    assert redact(text, ["ip"]) == ("a@example.com b@example.org from <IP_ADDRESS> +1 (555) 123-4567", {"ip": 1})
    assert count(text, ("phone", "secret")) == {"phone": 1, "secret": 0}
    assert redact("no personal data", KINDS) == ("no personal data", dict.fromkeys(KINDS, 0))


def test_an_overlap_is_counted_once_under_one_kind():
    """A bracketed IP inside an email and a digit run inside a token are one span each."""
    assert redact("to x@[93.184.216.34] now", KINDS) == ("to <EMAIL> now",
                                                          {"email": 1, "ip": 0, "phone": 0, "secret": 0})
    assert count("to x@[93.184.216.34] now", ["ip"]) == {"ip": 1}
    token = "token: ghp_5551234567aBcDeFgHiJkLmNoPqRsTuVwXyZ0123"
    assert redact(token, KINDS) == ("token: <SECRET>", {"email": 0, "ip": 0, "phone": 0, "secret": 1})


def test_redaction_is_idempotent_and_placeholders_are_never_matched():
    texts = [t for sets in (VALID, NEAR_MISSES) for kind in KINDS for t in sets[kind]]
    for text in texts:
        once = redact(text, KINDS)[0]
        assert redact(once, KINDS) == (once, dict.fromkeys(KINDS, 0)), text
    placeholders = " ".join(PLACEHOLDERS.values())
    around = f"{placeholders} password={PLACEHOLDERS['secret']} api_key: '{PLACEHOLDERS['secret']}' " \
             f"{PLACEHOLDERS['email']}@example {PLACEHOLDERS['ip']}.5 +1 {PLACEHOLDERS['phone']}"
    assert count(around, KINDS) == dict.fromkeys(KINDS, 0)


PIECES = ["8.8.8.8", "93.184.216.34", "2001:4860:4860::8888", "@", "x@y.org", "example.com", ".", "-", "_", " ", "\n",
          "+1", "(555)", "123", "4567", "020", "0", "9", "password", "=", ":", "'", "Xk9#mQ2vL7p",
          "AKIAIOSFODNN7EXAMPLE", "version", "from", "ip", "1.2.3.4", "/24", "::", "<EMAIL>", "<SECRET>",
          "<IP_ADDRESS>", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_redacting_twice_changes_nothing_whatever_runs_into_what(text):
    """Spans run into each other (an email's local part into an IPv6 address, an IPv4 address into a revision-like
    `-2001:...`): what stands out once a neighbour is a placeholder is found by redact's next reading."""
    once, counts = redact(text, KINDS)
    assert redact(once, KINDS) == (once, dict.fromkeys(KINDS, 0))
    assert count(text, KINDS) == counts


def test_an_unknown_kind_is_named_with_the_known_ones():
    with pytest.raises(UserError) as err:
        check_kinds(["email", "mail"], "source 'web'")
    assert str(err.value) == ("source 'web': pii_kinds has unknown kind 'mail'; known: email, ip, phone, secret "
                              "(did you mean 'email'?)")
    with pytest.raises(UserError, match="^pii: pii_kinds has unknown kind 'phones'"):
        redact("text", ["phones"])
    check_kinds(KINDS, "source 'web'")


def bundled_documents() -> list[str]:
    """Every document of the bundled corpora as curation reads it, but the web pages as their HTML files (their text
    extraction would take 1.5 s; addresses in markup are as good a test), and the planted sentences."""
    sources = [s for s in load_sources(EXAMPLES / "sources.toml") if s.format != "html-dir"]
    texts = [text for source in sources for text in source_texts(source)]
    pages = [page.read_text(encoding="utf-8", errors="replace")
             for page in sorted((EXAMPLES / "corpora" / "web").glob("*/*.html"))]
    planted = [text for sets in (VALID, NEAR_MISSES) for kind in ("email", "ip") for text in sets[kind]]
    return texts + pages + planted


def datatrove_spans(formatter: PIIFormatter, text: str) -> set[tuple[int, int, str]]:
    """The spans PIIFormatter.format replaces: emails first, then the valid IPs outside them."""
    emails = {(*m.span(), "email") for m in formatter.emails_replacer.regex.finditer(text)}
    ips = {(*m.span(), "ip") for m in formatter.ip_replacer.regex.finditer(text)
           if formatter.ip_replacer.validator(m.group())
           and not any(s < m.end() and m.start() < e for s, e, _ in emails)}
    return emails | ips


NOT_A_DOMAIN = re.compile(rf".*\.(?:{FILE_EXTENSIONS}|[^.]*[^A-Za-z.][^.]*|[A-Za-z]|[A-Za-z]{{64,}})", re.IGNORECASE)


def difference_class(text: str, start: int, end: int, kind: str, ours: bool) -> str:
    """The documented reason a span is found by one of the two and not the other ("unexplained" if none)."""
    found = text[start:end]
    if ours:
        return "ipv6 (datatrove finds IPv4 only)" if kind == "ip" and ":" in found else "unexplained"
    if kind == "email":
        return "email: last label not 2-63 letters or a file extension" if NOT_A_DOMAIN.fullmatch(found) \
            else "unexplained"
    before, after = text[start - 1:start], text[end:end + 2]
    if before.isalnum() or before in "._" or after[:1].isalnum() or (after[:1] == "." and after[1:].isdigit()):
        return "ip: part of a longer number or word"
    if ipaddress.ip_address(found).is_multicast:
        return "ip: multicast"
    if re.match(r"/[0-9]", after):
        return "ip: a network's address (/N)"
    if _version_like(text, start, end, found):
        return "ip: a version or section number"
    return "unexplained"


def test_emails_and_ipv4_as_datatrove_finds_them_but_for_named_differences():
    """The same spans as datatrove's PIIFormatter on every bundled document, or a difference of a named class."""
    formatter, agreed, differences = PIIFormatter(), 0, Counter()
    for text in bundled_documents():
        theirs = datatrove_spans(formatter, text)
        ours = set(spans(text, ["email", "ip"]))
        agreed += len(theirs & ours)
        differences.update(difference_class(text, s, e, k, True) for s, e, k in ours - theirs)
        differences.update(difference_class(text, s, e, k, False) for s, e, k in theirs - ours)
    assert agreed >= 300
    assert "unexplained" not in differences, differences
    assert differences["ipv6 (datatrove finds IPv4 only)"] >= 3 and differences["ip: a version or section number"] >= 3
