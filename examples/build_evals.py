#!/usr/bin/env python3
"""Build the bundled evaluation set ``examples/evals/bofh-excuses.jsonl`` (the `sample` mixture's [eval]).

Its text is in none of the bundled corpora: the Debian 12 package ``fortunes-bofh-excuses`` (public domain),
downloaded with ``apt-get download`` into a temporary directory (or taken from ``--debs DIR``), unpacked with
``dpkg-deb -x``; each excuse between ``%`` lines is one document ``{"id": N, "text": ...}``, in file order.
The output is byte-identical for the same package version (checked by examples/evals/SHA256SUMS).

Usage::

    python3 examples/build_evals.py             # download + build
    python3 examples/build_evals.py --debs DIR  # reuse a downloaded .deb
"""

from __future__ import annotations

import hashlib
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_text import checked_deb, deb_builder_main, jsonl_bytes, read_utf8, run, write_checked  # noqa: E402

PACKAGE, VERSION = "fortunes-bofh-excuses", "1.2-3"
OUT = Path(__file__).resolve().parent / "evals"


def build(debs: Path) -> None:
    deb = checked_deb(debs, PACKAGE, VERSION)
    with tempfile.TemporaryDirectory() as tmp:
        run(["dpkg-deb", "-x", str(deb), tmp])
        text = read_utf8(Path(tmp) / "usr/share/games/fortunes/bofh-excuses")
    excuses = [e.strip("\n") for e in re.split(r"^%\n", text, flags=re.M) if e.strip()]
    data = jsonl_bytes({"id": i, "text": e} for i, e in enumerate(excuses))
    write_checked(OUT, {"bofh-excuses.jsonl": data})
    print(f"{len(excuses)} documents, {len(data):,} bytes -> {OUT / 'bofh-excuses.jsonl'}; {deb.name} sha256 "
          f"{hashlib.sha256(deb.read_bytes()).hexdigest()} (record it in examples/evals/README.md)", file=sys.stderr)


if __name__ == "__main__":
    deb_builder_main(__doc__, PACKAGE, VERSION, build)
