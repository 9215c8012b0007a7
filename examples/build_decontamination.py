#!/usr/bin/env python3
"""Build ``examples/decontamination/jargon.jsonl``: an evaluation set for the `decontaminate` stage's checks and
worked example, whose text is in none of the bundled corpora (examples/corpora/README.md).

Its text is the glossary of the Jargon File 4.4.7 (public domain), from the Debian 12 package ``jargon-text``,
downloaded with ``apt-get download`` into a temporary directory (or taken from ``--debs DIR``) and unpacked with
``dpkg-deb -x``. Each glossary entry (a ``:term: ...`` line, then its text up to the next entry) whose text has
60 to 120 words is a candidate; its paragraphs are unwrapped to one line each (the file wraps at 76 columns) and
joined by a blank line. Every ``STEP``-th candidate in file order is one document ``{"id": N, "term": ..., "text":
...}``. The output is byte-identical for the same package version (checked by examples/decontamination/SHA256SUMS).

Usage::

    python3 examples/build_decontamination.py             # download + build
    python3 examples/build_decontamination.py --debs DIR  # reuse a downloaded .deb
"""

from __future__ import annotations

import gzip
import hashlib
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_text import checked_deb, deb_builder_main, jsonl_bytes, run, write_checked  # noqa: E402

PACKAGE, VERSION = "jargon-text", "4.4.7-4.1"
OUT = Path(__file__).resolve().parent / "decontamination"
ENTRY = re.compile(r"^   :(?P<term>[^ :][^:]*):")  # a glossary entry's first line, `   :term: pronunciation, n.`
APPENDICES = re.compile(r"^\s+Part\W+III\W+Appendices")  # the glossary ends where Part III begins
MIN_WORDS, MAX_WORDS, STEP = 60, 120, 5


def glossary_entries(text: str) -> list[tuple[str, str]]:
    """(term, text) of every glossary entry, paragraphs unwrapped and joined by a blank line."""
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if ENTRY.match(line))
    end = next(i for i in range(first, len(lines)) if APPENDICES.match(lines[i]))
    starts = [i for i in range(first, end) if ENTRY.match(lines[i])]
    entries = []
    for start, stop in zip(starts, [*starts[1:], end]):
        body = "\n".join(lines[start + 1:stop])
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body) if p.strip()]
        entries.append((ENTRY.match(lines[start])["term"], "\n\n".join(paragraphs)))
    return entries


def build(debs: Path) -> None:
    deb = checked_deb(debs, PACKAGE, VERSION)
    with tempfile.TemporaryDirectory() as tmp:
        run(["dpkg-deb", "-x", str(deb), tmp])
        text = gzip.decompress((Path(tmp) / "usr/share/doc/jargon-text/jargon.txt.gz").read_bytes()).decode("utf-8")
    entries = glossary_entries(text)
    candidates = [(term, body) for term, body in entries if MIN_WORDS <= len(body.split()) <= MAX_WORDS]
    chosen = candidates[::STEP]
    data = jsonl_bytes({"id": i, "term": term, "text": body} for i, (term, body) in enumerate(chosen))
    write_checked(OUT, {"jargon.jsonl": data})
    print(f"{len(entries)} entries, {len(candidates)} of {MIN_WORDS}-{MAX_WORDS} words, {len(chosen)} documents, "
          f"{len(data):,} bytes -> {OUT / 'jargon.jsonl'}; {deb.name} sha256 "
          f"{hashlib.sha256(deb.read_bytes()).hexdigest()} (record it in examples/decontamination/README.md)",
          file=sys.stderr)


if __name__ == "__main__":
    deb_builder_main(__doc__, PACKAGE, VERSION, build)
