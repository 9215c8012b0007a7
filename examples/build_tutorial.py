#!/usr/bin/env python3
"""Build the tutorial's corpus ``examples/tutorial/`` (docs/tutorial.md) from the Debian 12 package ``opencv-doc``.

The package is in none of the bundled corpora. It is downloaded with ``apt-get download`` into a temporary
directory (or taken from ``--debs DIR``) and unpacked with ``dpkg-deb -x``; three sources in three formats come
out of it, each chosen by a fixed rule (sorted names, no randomness):

* ``pages/``: the first 24 Python tutorial pages (``tutorial_py_*.html``, by file name), as shipped (html-dir);
* ``samples.jsonl.gz``: every Python sample (``examples/python/*.py``) as ``{"path": ..., "code": ...}``, the text
  in the field ``code`` (gzip, mtime 0);
* ``cpp/``: the first 20 C++ samples (``examples/cpp/*.cpp``, by name) as ``NAME.txt`` (text-dir).

The output is byte-identical for the same package version (checked by examples/tutorial/SHA256SUMS).

Usage::

    python3 examples/build_tutorial.py             # download + build
    python3 examples/build_tutorial.py --debs DIR  # reuse a downloaded .deb
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_text import (checked_deb, deb_builder_main, gzip_bytes, jsonl_bytes, read_utf8, run,  # noqa: E402
                         write_checked)

PACKAGE, VERSION = "opencv-doc", "4.6.0+dfsg-12"
OUT = Path(__file__).resolve().parent / "tutorial"
DOC = "usr/share/doc/opencv-doc"
N_PAGES, N_CPP = 24, 20


def corpus_files(root: Path) -> dict[str, bytes]:
    """Every file of the tutorial corpus, by its path under examples/tutorial/."""
    doc = root / DOC
    pages = sorted(doc.glob("opencv4/html/**/tutorial_py_*.html"), key=lambda p: p.name)[:N_PAGES]
    samples = sorted((doc / "examples/python").glob("*.py"))
    cpp = sorted((doc / "examples/cpp").glob("*.cpp"))[:N_CPP]
    files = {f"pages/{p.name}": read_utf8(p).encode("utf-8") for p in pages}
    records = ({"path": f"python/{p.name}", "code": read_utf8(p)} for p in samples)
    files["samples.jsonl.gz"] = gzip_bytes(jsonl_bytes(records))
    files.update({f"cpp/{p.stem}.txt": read_utf8(p).encode("utf-8") for p in cpp})
    return files


def write_corpus(files: dict[str, bytes]) -> None:
    for sub in ("pages", "cpp"):
        shutil.rmtree(OUT / sub, ignore_errors=True)
    write_checked(OUT, files)


def build(debs: Path) -> None:
    deb = checked_deb(debs, PACKAGE, VERSION)
    with tempfile.TemporaryDirectory() as tmp:
        run(["dpkg-deb", "-x", str(deb), tmp])
        files = corpus_files(Path(tmp))
    write_corpus(files)
    size = sum(len(d) for d in files.values())
    print(f"{len(files)} files, {size:,} bytes -> {OUT}; {deb.name} sha256 "
          f"{hashlib.sha256(deb.read_bytes()).hexdigest()} (record it in examples/tutorial/README.md)",
          file=sys.stderr)


if __name__ == "__main__":
    deb_builder_main(__doc__, PACKAGE, VERSION, build)
