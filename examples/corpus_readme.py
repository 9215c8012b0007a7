"""examples/corpora/README.md and SHA256SUMS, written by build_corpora.py from what it built."""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pyarrow as pa

from corpus_rules import (CODE_MAX_BYTES, DOCS_DIRS, DOCS_LIBRARY_STRIDE, DOCS_MAX_BYTES, DOCS_MIN_BYTES, DOCS_TOP_FILES,
                          FORTUNE_STRIDE, PARQUET_ZSTD_LEVEL, REFERENCE_CHAPTERS, WEB_MAX_BYTES, WEB_MIN_BYTES, WEB_PAGES,
                          ZSTD_LEVEL)
from corpus_text import human, read_copyright


def write_sums(out: Path) -> None:
    lines = []
    for p in sorted(out.rglob("*")):
        if p.is_file() and p.name != "SHA256SUMS":
            rel = p.relative_to(out).as_posix()
            lines.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {rel}")
    (out / "SHA256SUMS").write_text("\n".join(lines) + "\n", encoding="utf-8")


LICENCE_LINES = {
    # package -> lines of its /usr/share/doc/<pkg>/copyright quoted in the README
    "debian-handbook": [r"^License: GPL-2\.0\+ or CC-BY-SA-3\.0$",
                        r"^Copyright: 2003-2015 Rapha"],
    "python3.11-doc": [r"^PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2$"],
    "libpython3.11-stdlib": [r"^PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2$",
                             r"^Files with other licenses than the Python License$"],
    "fortunes": [r"^This program falls under the BSD copyright:$",
                 r"^Copyright \(c\) 1991 The Regents of the University of California\.$"],
    "debian-reference-en": [r"^License: GPL-2\+$",
                            r"^ This document may used under the terms the GNU General Public License$",
                            r"^ version 2 or higher\.$"],
}


def licence_quote(roots: dict, pkg: str) -> str:
    text = read_copyright(roots[pkg], pkg).split("\n")
    got = []
    for pat in LICENCE_LINES[pkg]:
        hit = next((l for l in text if re.match(pat, l)), None)
        if hit is None:
            sys.exit(f"{pkg}: copyright file no longer says /{pat}/; "
                     "review the licence before rebuilding")
        got.append(hit.strip())
    return "\n>\n".join(f"> {l}" for l in got)


def write_readme(out: Path, meta: dict, stats: dict, roots: dict) -> None:
    def v(pkg):
        return f"`{pkg}` {meta[pkg]['version']}"

    w, dd, c, f, r = (stats[k] for k in ("web", "docs", "code", "fortunes",
                                          "reference"))
    rows = [
        ("web", "html-dir", v("debian-handbook"),
         f"{len(w['languages'])} dirs, {w['shard_files']} `.html`",
         w["documents"], w["disk_bytes"]),
        ("docs", "jsonl.gz", v("python3.11-doc"),
         f"{dd['shard_files']} shards", dd["documents"], dd["disk_bytes"]),
        ("code", "parquet", f"{v('libpython3.11-minimal')} + "
         f"{v('libpython3.11-stdlib')}",
         f"{c['shard_files']} shards", c["files"], c["disk_bytes"]),
        ("fortunes", "jsonl.zst", f"{v('fortunes-min')} + {v('fortunes')}",
         f"{f['shard_files']} shards", f["documents"], f["disk_bytes"]),
        ("reference", "text-dir", v("debian-reference-en"),
         f"1 dir, {r['shard_files']} `.txt`", r["documents"], r["disk_bytes"]),
    ]
    total = sum(row[5] for row in rows)
    table = "\n".join(
        f"| `{n}` | `{fmt}` | {pk} | {files} | {docs} | {human(size)} |"
        for n, fmt, pk, files, docs, size in rows)
    debs = "\n".join(
        f"| `{pkg}` | `{m['version']}` | `{m['source']}` | `{m['deb']}` | "
        f"`{m['sha256'][:16]}…` |" for pkg, m in meta.items())
    page_list = ", ".join(f"`{p}`" for p in w["pages"])
    text = f"""\
# Bundled sample corpora

Small, real corpora that `loom quickstart` curates (see `../sources.toml`).
Every byte comes from a Debian 12 ("bookworm") package; nothing is synthetic.
This file, the corpora and `SHA256SUMS` are all written by

    python3 examples/build_corpora.py

which runs `apt-get download` into a temporary directory, unpacks each
`.deb` with `dpkg-deb -x` and writes the corpora deterministically (sorted
file lists, fixed selection rules, no randomness, gzip with `mtime=0`,
single-threaded zstd level {ZSTD_LEVEL}, Parquet with fixed writer options).
With the same package versions (below; `--exact` asks apt for exactly them)
and the same pyarrow version the output is byte-identical; check with
`sha256sum -c SHA256SUMS` from this directory.  The script needs `apt-get`,
`dpkg-deb`, `pyarrow` and `zstandard`; `--debs DIR` reuses downloaded `.deb`s.

| source | format | Debian package | files | documents | size |
|---|---|---|---|---|---|
{table}
| **total** | | | | | **{human(total)}** |

Sizes are the sum of file sizes (`du` reports a little more because of
block rounding).  All text is valid UTF-8 (checked while building).

## Packages

| package | version | source package | file | sha256 of the `.deb` |
|---|---|---|---|---|
{debs}

The `libpython3.11-*` packages are architecture-specific (`amd64` here); the
`.py` files inside are the same on every architecture.

## `web`: The Debian Administrator's Handbook (HTML, {len(w['languages'])} languages)

* Package `debian-handbook` {meta['debian-handbook']['version']}; upstream
  <https://debian-handbook.info> (Raphaël Hertzog, Roland Mas), a DocBook
  book rendered to one HTML page per chapter/section.
* Licence (`/usr/share/doc/debian-handbook/copyright`):

{licence_quote(roots, 'debian-handbook')}

* Layout: `web/<lang>/NNN-<original name>.html`, one directory per language
  and one shard per directory: {', '.join(f'`{x}`' for x in w['languages'])}.
  The package ships {len(w['languages_available'])} languages
  ({', '.join(w['languages_available'])}) with the same
  {w['pages_in_package']} pages each.
* Selection: the pages present in all six languages, at least
  {WEB_MIN_BYTES} bytes in every language and at most {WEB_MAX_BYTES} bytes in
  `en-US`, sorted by name, then {WEB_PAGES} evenly spaced ones; the same
  {WEB_PAGES} pages in every language, so the six directories are
  translations of each other.  The files are copied unchanged, so they keep
  their navigation bars, headers/footers and links to CSS and images that are
  not bundled.  Pages: {page_list}.

## `docs`: Python 3.11 documentation (reStructuredText sources)

* Package `python3.11-doc` {meta['python3.11-doc']['version']}; upstream
  <https://docs.python.org/3.11/> (CPython `Doc/`), the Sphinx sources as
  shipped under `/usr/share/doc/python3.11/html/_sources/*.rst.txt`.
* Licence (`/usr/share/doc/python3.11-doc/copyright`, the Python licence;
  the docs' own `license.rst.txt` adds that code examples in the
  documentation are also under the Zero-Clause BSD licence):

{licence_quote(roots, 'python3.11-doc')}

* Selection: {dd['files']} of the {dd['files_in_package']} `.rst.txt` files:
  everything under {', '.join(f'`{x}`' for x in DOCS_DIRS)}, the top-level
  {', '.join(f'`{x}`' for x in DOCS_TOP_FILES)}, and every
  {DOCS_LIBRARY_STRIDE}th file of `library/` in sorted order (`c-api/`,
  `distutils/`, `install/` and `whatsnew/` are left out).
* Each file is split at its top-level section titles (the second RST heading
  style in the file, the first being the page title); a section over
  {DOCS_MAX_BYTES} bytes is split at the next heading level and then at blank
  lines, and a section under {DOCS_MIN_BYTES} bytes is merged into the next.
  {dd['documents']} documents, {human(dd['text_bytes'])} of text, largest
  {dd['max_doc_bytes']} bytes.  Joining a file's documents in order gives
  back the file (up to blank lines at the cuts).
* Records, `docs/docs-0000[0-3].jsonl.gz` (contiguous, in sorted order):
  `{{"id": "library/os.rst.txt#3", "text": "<rst>", "url": "library/os.html"}}`;
  `id` is the path under `_sources/` plus `#<section number>`, `url` the
  relative path of the rendered HTML page.

## `code`: Python 3.11 standard library source

* Packages `libpython3.11-minimal` and `libpython3.11-stdlib`
  {meta['libpython3.11-stdlib']['version']} (Debian splits the standard
  library over the two); upstream CPython 3.11 `Lib/`,
  <https://github.com/python/cpython/tree/3.11/Lib>.
* Licence (`/usr/share/doc/libpython3.11-stdlib/copyright`):

{licence_quote(roots, 'libpython3.11-stdlib')}

  The files that the copyright file lists under other licences
  (`logging/`, `multiprocessing/`, `sqlite3/`, `asyncore.py`, `asynchat.py`,
  `tarfile.py`, `turtle.py`) are left out, so every row is `PSF-2.0`.
* Selection: every regular, non-empty `.py` file of the two packages of at
  most {CODE_MAX_BYTES} bytes, sorted by path, except `test/` and any `tests/`
  directory and the files above ({c['files']} of {c['py_files_in_packages']}
  `.py` files; {human(c['text_bytes'])} of source).  About 120 rows are the
  generated codec tables in `encodings/`, which are near-duplicates of each
  other.
* Columns, `code/code-0000[0-2].parquet` (zstd level {PARQUET_ZSTD_LEVEL}, no
  statistics, written by pyarrow {pa.__version__}): `path` (e.g.
  `Lib/json/decoder.py`), `content`, `license` (`"PSF-2.0"`).

## `fortunes`: fortune cookies (the noisy source)

* Packages `fortunes-min` and `fortunes` {meta['fortunes']['version']}
  (source `fortune-mod`; the `fortune-mod` binary package holds only the
  program).  Debian ships no offensive fortunes in these packages (they
  live in `fortunes-off`), so there was nothing to skip.
* Licence (`/usr/share/doc/fortunes/copyright`, the BSD licence of
  fortune-mod; the file also credits some data files to their collectors):

{licence_quote(roots, 'fortunes')}

* Selection: the {len(f['files'])} data files under `usr/share/games/fortunes/`
  (not the `.dat` indexes or `.u8` links), sorted by name, split at lines
  that are a single `%`; {f['quotes_in_package']} quotes, of which every
  {FORTUNE_STRIDE}th (counted across the files in order) is kept:
  {f['documents']} quotes, {human(f['text_bytes'])}.  Quotes are kept as
  written, with tabs, ASCII art and the odd backspace.
* Records, `fortunes/fortunes-0000[0-1].jsonl.zst`:
  `{{"text": "<quote>", "file": "<fortune file name>"}}`.

## `reference`: Debian Reference (plain text)

* Package `debian-reference-en` {meta['debian-reference-en']['version']};
  upstream <https://salsa.debian.org/debian/debian-reference> (Osamu Aoki),
  <https://www.debian.org/doc/manuals/debian-reference/>.  The package ships
  the book as HTML, PDF and one plain-text file,
  `/usr/share/debian-reference/debian-reference.en.txt.gz`, which is used
  as is (no HTML conversion).
* Licence (`/usr/share/doc/debian-reference-en/copyright`):

{licence_quote(roots, 'debian-reference-en')}

* Selection: the text is cut into the preface, the numbered sections
  (`N.M.`; a chapter's short introduction stays with its first section) and
  the appendix ({r['sections_in_package']} pieces); kept are the preface, the
  appendix and all sections of chapters
  {', '.join(str(x) for x in sorted(REFERENCE_CHAPTERS))}: {r['documents']} files,
  {human(r['text_bytes'])}, in `reference/en/NNN-<section>-<title>.txt`.
  The text keeps its ASCII-art tables, indentation and no-break spaces.
"""
    (out / "README.md").write_text(text, encoding="utf-8", newline="\n")


