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

import argparse
import hashlib
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_text import deb_field, find_deb, jsonl_bytes, read_utf8, run  # noqa: E402

PACKAGE, VERSION = "fortunes-bofh-excuses", "1.2-3"
OUT = Path(__file__).resolve().parent / "evals"


def build(debs: Path) -> None:
    deb = find_deb(debs, PACKAGE)
    version = deb_field(deb, "Version")
    if version != VERSION:
        print(f"note: {PACKAGE} is {version}, not {VERSION}: the set will differ from the bundled one", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        run(["dpkg-deb", "-x", str(deb), tmp])
        text = read_utf8(Path(tmp) / "usr/share/games/fortunes/bofh-excuses")
    excuses = [e.strip("\n") for e in re.split(r"^%\n", text, flags=re.M) if e.strip()]
    data = jsonl_bytes({"id": i, "text": e} for i, e in enumerate(excuses))
    OUT.mkdir(exist_ok=True)
    (OUT / "bofh-excuses.jsonl").write_bytes(data)
    (OUT / "SHA256SUMS").write_text(f"{hashlib.sha256(data).hexdigest()}  bofh-excuses.jsonl\n", encoding="utf-8")
    print(f"{len(excuses)} documents, {len(data):,} bytes -> {OUT / 'bofh-excuses.jsonl'}; {deb.name} sha256 "
          f"{hashlib.sha256(deb.read_bytes()).hexdigest()} (record it in examples/evals/README.md)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debs", type=Path, help="a folder holding the downloaded .deb")
    args = parser.parse_args()
    if args.debs:
        build(args.debs)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(["apt-get", "download", f"{PACKAGE}={VERSION}"], cwd=tmp)
        build(Path(tmp))


if __name__ == "__main__":
    main()
