#!/usr/bin/env python3
"""Build the bundled sample corpora under ``examples/corpora/``.

Every corpus is cut from a real Debian package: the script runs
``apt-get download`` into a temporary directory, unpacks each ``.deb`` with
``dpkg-deb -x`` and writes the corpora deterministically (sorted file lists,
fixed selection rules, no randomness, gzip ``mtime=0``, single-threaded
zstd, fixed Parquet writer options).  Re-running it with the same package
versions and the same pyarrow version gives byte-identical output; the
versions used are recorded in ``examples/corpora/README.md`` and a checksum
list in ``examples/corpora/SHA256SUMS``.

Usage::

    python3 examples/build_corpora.py            # download + build
    python3 examples/build_corpora.py --debs DIR  # reuse .deb files in DIR
    python3 examples/build_corpora.py --exact     # download the versions in PINNED

Requirements: a Debian/Ubuntu host with ``apt-get`` and ``dpkg-deb`` whose
apt sources reach the Debian archive, Python >= 3.9, ``pyarrow`` and
``zstandard``.  Only the standard library plus those two packages is used.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard
except ImportError as exc:  # pragma: no cover - environment problem
    sys.exit(f"build_corpora.py needs pyarrow and zstandard ({exc}); "
             "e.g. `pip install pyarrow zstandard`")

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "corpora"

# Packages downloaded, with the versions the committed corpora were built from
# (Debian 12 "bookworm").  Without --exact the archive's candidate version is
# downloaded; a different version is reported and changes the output.
PINNED = {
    "debian-handbook": "11.20220922",
    "python3.11-doc": "3.11.2-6+deb12u9",
    "libpython3.11-minimal": "3.11.2-6+deb12u9",
    "libpython3.11-stdlib": "3.11.2-6+deb12u9",
    "fortunes-min": "1:1.99.1-7.3",
    "fortunes": "1:1.99.1-7.3",
    "debian-reference-en": "2.100",
}

# ---------------------------------------------------------------- selection --
WEB_LANGS = ["en-US", "de-DE", "fr-FR", "es-ES", "ja-JP", "pt-BR"]
WEB_PAGES = 32              # pages per language (the same pages in every language)
WEB_MIN_BYTES = 2048        # skip tiny index/redirect pages
WEB_MAX_BYTES = 20000       # size cap, measured on the en-US page

DOCS_SHARDS = 4
DOCS_MAX_BYTES = 20000      # a document is at most this many UTF-8 bytes
DOCS_MIN_BYTES = 512        # smaller sections are merged into the next one
# which _sources/ files go in: whole directories, plus every Nth library page
DOCS_DIRS = ["tutorial/", "howto/", "faq/", "reference/", "using/",
             "extending/", "installing/", "distributing/"]
DOCS_TOP_FILES = ["glossary.rst.txt", "bugs.rst.txt", "license.rst.txt",
                  "copyright.rst.txt", "about.rst.txt"]
DOCS_LIBRARY_STRIDE = 6     # library/*.rst.txt, sorted, every 6th file

CODE_SHARDS = 3
CODE_MAX_BYTES = 40000
CODE_LICENSE = "PSF-2.0"
# Files that Debian's copyright file lists under a licence other than the
# Python licence are left out, so that the constant licence column is true.
CODE_EXCLUDE_RE = re.compile(
    r"^(test/|.*/tests?/|idlelib/|lib2to3/|logging/|multiprocessing/|"
    r"sqlite3/|asyncore\.py$|asynchat\.py$|tarfile\.py$|turtle\.py$|"
    r"_sysconfigdata_)")
CODE_STRIDE = 1             # keep every file that passes the filters

FORTUNE_SHARDS = 2
FORTUNE_STRIDE = 4          # every 4th quote, counted over all files in order

REFERENCE_CHAPTERS = {3, 4, 5, 6, 7, 8, 11, 12}   # plus the preface and appendix

ZSTD_LEVEL = 19
PARQUET_ZSTD_LEVEL = 9


# ------------------------------------------------------------------ helpers --
def run(cmd, **kw):
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kw)


def deb_field(deb: Path, field: str) -> str:
    out = subprocess.run(["dpkg-deb", "-f", str(deb), field], check=True,
                         capture_output=True, text=True).stdout
    return out.strip()


def find_deb(debdir: Path, pkg: str) -> Path:
    hits = sorted(p for p in debdir.glob("*.deb")
                  if deb_field(p, "Package") == pkg)
    if not hits:
        sys.exit(f"no .deb for package {pkg} in {debdir}")
    if len(hits) > 1:
        sys.exit(f"several .deb files for {pkg} in {debdir}: {hits}")
    return hits[0]


def read_utf8(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        sys.exit(f"{path}: not valid UTF-8 ({exc})")


def jsonl_bytes(records) -> bytes:
    lines = [json.dumps(r, ensure_ascii=False, sort_keys=False) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_gzip(path: Path, data: bytes) -> None:
    buf = io.BytesIO()
    # filename="" and mtime=0 keep the gzip header free of names and clocks
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9,
                       mtime=0) as gz:
        gz.write(data)
    path.write_bytes(buf.getvalue())


def write_zstd(path: Path, data: bytes) -> None:
    cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL, threads=0,
                                    write_checksum=True, write_content_size=True)
    path.write_bytes(cctx.compress(data))


def split_even(items, n):
    """Split a list into n contiguous, nearly equal parts (in order)."""
    k, r = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + k + (1 if i < r else 0)
        out.append(items[start:end])
        start = end
    return out


def utf8_len(s: str) -> int:
    return len(s.encode("utf-8"))


# --------------------------------------------------------------------- web --
def build_web(root: Path, out: Path) -> dict:
    html = root / "usr/share/doc/debian-handbook/html"
    available = sorted(p.name for p in html.iterdir() if p.is_dir())
    missing = [lang for lang in WEB_LANGS if lang not in available]
    if missing:
        sys.exit(f"debian-handbook lacks languages {missing}; has {available}")

    def pages(lang):
        return {p.name for p in (html / lang).glob("*.html") if p.is_file()}

    common = sorted(set.intersection(*(pages(lang) for lang in WEB_LANGS)))
    candidates = [
        name for name in common
        if all((html / lang / name).stat().st_size >= WEB_MIN_BYTES
               for lang in WEB_LANGS)
        and (html / "en-US" / name).stat().st_size <= WEB_MAX_BYTES
    ]
    if len(candidates) < WEB_PAGES:
        sys.exit(f"only {len(candidates)} handbook pages qualify")
    chosen = [candidates[(i * len(candidates)) // WEB_PAGES]
              for i in range(WEB_PAGES)]
    for lang in WEB_LANGS:
        d = out / "web" / lang
        d.mkdir(parents=True)
        for i, name in enumerate(chosen):
            src = html / lang / name
            read_utf8(src)                       # check only; copy unchanged
            shutil.copyfile(src, d / f"{i:03d}-{name}")
    return {
        "languages_available": available,
        "languages": WEB_LANGS,
        "pages": chosen,
        "pages_in_package": len(common),
        "documents": len(chosen) * len(WEB_LANGS),
    }


# -------------------------------------------------------------------- docs --
_LABEL = re.compile(r"^\.\. _[^:]+:\s*$")
_ADORN = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")


def rst_headings(lines):
    """Return [(start_line, style)] for the section titles of an RST file.

    start_line is the overline for over+underlined titles, else the title
    line.  style is (char, has_overline) as docutils distinguishes them.
    """
    heads = []
    i, n = 0, len(lines)
    while i < n - 1:
        line = lines[i]
        prev_blank = i == 0 or not lines[i - 1].strip()
        m_over = _ADORN.match(line)
        if (m_over and prev_blank and i + 2 < n and lines[i + 1].strip()
                and _ADORN.match(lines[i + 2])
                and lines[i + 2].rstrip() == line.rstrip()):
            heads.append((i, (m_over.group(1), True)))
            i += 3
            continue
        nxt = lines[i + 1]
        m_under = _ADORN.match(nxt)
        if (m_under and prev_blank and line.strip() and not line[0].isspace()
                and not _ADORN.match(line)
                and len(nxt.rstrip()) >= len(line.rstrip())
                and (i + 2 >= n or not lines[i + 2].strip()
                     or not _ADORN.match(lines[i + 2]))):
            heads.append((i, (m_under.group(1), False)))
            i += 2
            continue
        i += 1
    return heads


def _cut(lines, starts):
    starts = sorted(set([0] + [s for s in starts if s > 0]))
    return [lines[a:b] for a, b in zip(starts, starts[1:] + [len(lines)])]


def _split_paragraphs(lines, limit):
    """Split lines into pieces of at most `limit` bytes, at blank lines
    where possible (at any line break otherwise)."""
    pieces, cur, size = [], [], 0
    for line in lines:
        ln = utf8_len(line) + 1
        if cur and size + ln > limit:
            cut = max((j for j in range(1, len(cur)) if not cur[j].strip()),
                      default=len(cur))
            pieces.append(cur[:cut])
            cur = cur[cut:]
            size = sum(utf8_len(x) + 1 for x in cur)
        cur.append(line)
        size += ln
    if cur:
        pieces.append(cur)
    return pieces


def split_rst(text: str, limit: int = DOCS_MAX_BYTES,
              min_bytes: int = DOCS_MIN_BYTES):
    """Split an RST file at its top-level section titles (the second
    heading style in the file; the first is the page title).  Sections over
    `limit` bytes are split at the next heading level, then at blank lines.
    A section under `min_bytes` is merged into the one that follows it."""
    lines = text.split("\n")
    heads = rst_headings(lines)
    levels = []
    for _, style in heads:
        if style not in levels:
            levels.append(style)

    def cuts(level, off, length):
        if len(levels) <= level:
            return []
        out = []
        for s, st in heads:
            if st == levels[level] and off < s < off + length:
                # a ".. _label:" target belongs to the title that follows it
                while (s - 2 > off and not lines[s - 1].strip()
                       and _LABEL.match(lines[s - 2])):
                    s -= 2
                out.append(s - off)
        return out

    docs, off = [], 0
    for part in _cut(lines, cuts(1, 0, len(lines))):
        if utf8_len("\n".join(part)) <= limit:
            docs.append(part)
        else:
            for sub in _cut(part, cuts(2, off, len(part))):
                if utf8_len("\n".join(sub)) <= limit:
                    docs.append(sub)
                else:
                    docs.extend(_split_paragraphs(sub, limit))
        off += len(part)
    merged, carry = [], []
    for d in docs:
        if carry and utf8_len("\n".join(carry + d)) > limit:
            merged.append(carry)
            carry = []
        d = carry + d
        if utf8_len("\n".join(d)) < min_bytes:
            carry = d
            continue
        merged.append(d)
        carry = []
    if carry:
        if merged and utf8_len("\n".join(merged[-1] + carry)) <= limit:
            merged[-1] = merged[-1] + carry
        else:
            merged.append(carry)
    out = []
    for d in merged:
        t = "\n".join(d).strip("\n")
        if t.strip():
            out.append(t + "\n")
    return out


def build_docs(root: Path, out: Path) -> dict:
    src = root / "usr/share/doc/python3.11/html/_sources"
    allfiles = sorted(p.relative_to(src).as_posix()
                      for p in src.rglob("*.rst.txt") if p.is_file())
    library = [f for f in allfiles if f.startswith("library/")]
    chosen = set(library[::DOCS_LIBRARY_STRIDE])
    chosen.update(f for f in allfiles if any(f.startswith(d) for d in DOCS_DIRS))
    chosen.update(f for f in allfiles if f in DOCS_TOP_FILES)
    records = []
    for rel in sorted(chosen):
        text = read_utf8(src / rel)
        url = rel[: -len(".rst.txt")] + ".html"
        for k, part in enumerate(split_rst(text)):
            records.append({"id": f"{rel}#{k}", "text": part, "url": url})
    d = out / "docs"
    d.mkdir(parents=True)
    for i, shard in enumerate(split_even(records, DOCS_SHARDS)):
        write_gzip(d / f"docs-{i:05d}.jsonl.gz", jsonl_bytes(shard))
    return {"files": len(chosen), "files_in_package": len(allfiles),
            "documents": len(records),
            "max_doc_bytes": max(utf8_len(r["text"]) for r in records),
            "text_bytes": sum(utf8_len(r["text"]) for r in records)}


# -------------------------------------------------------------------- code --
def build_code(root: Path, out: Path) -> dict:
    lib = root / "usr/lib/python3.11"
    files = sorted(p.relative_to(lib).as_posix() for p in lib.rglob("*.py")
                   if p.is_file() and not p.is_symlink())
    kept = [f for f in files if not CODE_EXCLUDE_RE.match(f)
            and 0 < (lib / f).stat().st_size <= CODE_MAX_BYTES]
    kept = kept[::CODE_STRIDE]
    rows = [{"path": f"Lib/{f}", "content": read_utf8(lib / f),
             "license": CODE_LICENSE} for f in kept]
    schema = pa.schema([("path", pa.string()), ("content", pa.string()),
                        ("license", pa.string())])
    d = out / "code"
    d.mkdir(parents=True)
    for i, shard in enumerate(split_even(rows, CODE_SHARDS)):
        table = pa.Table.from_pylist(shard, schema=schema)
        pq.write_table(table, d / f"code-{i:05d}.parquet",
                       compression="zstd", compression_level=PARQUET_ZSTD_LEVEL,
                       use_dictionary=["license"], row_group_size=256,
                       write_statistics=False)
    return {"files": len(rows), "py_files_in_packages": len(files),
            "text_bytes": sum(utf8_len(r["content"]) for r in rows)}


# ---------------------------------------------------------------- fortunes --
def build_fortunes(root: Path, out: Path) -> dict:
    fdir = root / "usr/share/games/fortunes"
    names = sorted(p.name for p in fdir.iterdir()
                   if p.is_file() and not p.is_symlink()
                   and not p.name.endswith((".dat", ".u8")))
    allq = []
    for name in names:
        text = read_utf8(fdir / name)
        for q in re.split(r"^%\n", text, flags=re.M):
            q = q.rstrip("\n")
            if q.strip():
                allq.append({"text": q, "file": name})
    chosen = allq[::FORTUNE_STRIDE]
    d = out / "fortunes"
    d.mkdir(parents=True)
    for i, shard in enumerate(split_even(chosen, FORTUNE_SHARDS)):
        write_zstd(d / f"fortunes-{i:05d}.jsonl.zst", jsonl_bytes(shard))
    return {"files": names, "quotes_in_package": len(allq),
            "documents": len(chosen),
            "text_bytes": sum(utf8_len(r["text"]) for r in chosen)}


# --------------------------------------------------------------- reference --
_REF_HEAD = re.compile(r"^(Chapter\s(\d+)\.\s|Appendix\s[A-Z]\.\s|(\d+)\.\d+\.\s\S)")


def _slug(s: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")
    return s[:60].rstrip("-")


def build_reference(root: Path, out: Path) -> dict:
    src = root / "usr/share/debian-reference/debian-reference.en.txt.gz"
    raw = gzip.decompress(src.read_bytes())
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        sys.exit(f"{src}: not valid UTF-8 ({exc})")
    lines = text.split("\n")
    # The text starts with a title page and a table of contents; the body
    # starts at the second line that reads exactly "Preface".
    prefaces = [i for i, l in enumerate(lines) if l == "Preface"]
    if len(prefaces) < 2:
        sys.exit("unexpected layout of debian-reference.en.txt")
    body = prefaces[1]
    heads = []      # (line, kind, chapter)
    for i in range(body, len(lines)):
        if lines[i - 1] != "":
            continue
        m = _REF_HEAD.match(lines[i])
        if not m:
            continue
        if m.group(2):
            heads.append((i, "chapter", int(m.group(2))))
        elif m.group(3):
            if not any(k == "chapter" for _, k, _ in heads):
                continue        # numbered sub-sections of the preface
            heads.append((i, "section", int(m.group(3))))
        else:
            heads.append((i, "appendix", None))
    bounds = [body] + [h[0] for h in heads] + [len(lines)]
    pieces = [("preface", None, lines[bounds[0]:bounds[1]])]
    for (start, kind, chap), end in zip(heads, bounds[2:]):
        pieces.append((kind, chap, lines[start:end]))
    # A chapter's short introduction is kept with its first section.
    docs, pending = [], []
    for kind, chap, seg in pieces:
        if kind == "chapter":
            pending = seg
            continue
        docs.append((kind, chap, seg[0], pending + seg))
        pending = []
    d = out / "reference" / "en"
    d.mkdir(parents=True)
    written = []
    for kind, chap, title_line, seg in docs:
        if kind == "section" and chap not in REFERENCE_CHAPTERS:
            continue
        body_text = "\n".join(seg).strip("\n") + "\n"
        if kind == "section":
            num = title_line.split(".", 2)
            number = f"{int(num[0]):02d}.{int(num[1]):02d}"
            name = f"{number}-{_slug(title_line.split(None, 1)[1])}"
        else:
            name = _slug(title_line)
        fname = f"{len(written):03d}-{name}.txt"
        (d / fname).write_text(body_text, encoding="utf-8", newline="\n")
        written.append((fname, utf8_len(body_text)))
    return {"documents": len(written), "files": [w[0] for w in written],
            "sections_in_package": len(docs),
            "text_bytes": sum(w[1] for w in written)}


# ------------------------------------------------------------------ driver --
def download(debdir: Path, exact: bool) -> None:
    specs = [f"{p}={v}" if exact else p for p, v in PINNED.items()]
    run(["apt-get", "download", *specs], cwd=debdir)


def read_copyright(root: Path, pkg: str) -> str:
    p = root / "usr/share/doc" / pkg / "copyright"
    return p.read_text(encoding="utf-8", errors="replace") if p.exists() else ""


def dir_stats(path: Path):
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return len(files), sum(p.stat().st_size for p in files)


def human(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / 1048576:.2f} MiB"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="output directory (default: examples/corpora)")
    ap.add_argument("--debs", type=Path,
                    help="directory that already holds the .deb files")
    ap.add_argument("--exact", action="store_true",
                    help="download exactly the versions in PINNED")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = ap.parse_args(argv)
    for tool in ("dpkg-deb",) + (() if args.debs else ("apt-get",)):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: this script needs a Debian-based host")

    tmp = Path(tempfile.mkdtemp(prefix="loom-corpora-"))
    try:
        os.chmod(tmp, 0o755)
        if args.debs:
            debdir = args.debs.resolve()
        else:
            debdir = tmp / "debs"
            debdir.mkdir()
            os.chmod(debdir, 0o777)   # lets apt's _apt user write there
            download(debdir, args.exact)
        meta = {}
        roots = {}
        for pkg in PINNED:
            deb = find_deb(debdir, pkg)
            version = deb_field(deb, "Version")
            meta[pkg] = {"version": version, "deb": deb.name,
                         "sha256": hashlib.sha256(deb.read_bytes()).hexdigest(),
                         "source": (deb_field(deb, "Source") or pkg).split()[0]}
            if version != PINNED[pkg]:
                print(f"warning: {pkg} is {version}, the committed corpora "
                      f"were built from {PINNED[pkg]}; output will differ",
                      file=sys.stderr)
            root = tmp / "x" / pkg
            root.mkdir(parents=True)
            run(["dpkg-deb", "-x", str(deb), str(root)])
            roots[pkg] = root
        # python3.11 stdlib is split over -minimal and -stdlib; merge them
        pyroot = tmp / "x" / "python-lib"
        for pkg in ("libpython3.11-minimal", "libpython3.11-stdlib"):
            shutil.copytree(roots[pkg], pyroot, symlinks=True, dirs_exist_ok=True)
        fortroot = tmp / "x" / "fortunes-all"
        for pkg in ("fortunes-min", "fortunes"):
            shutil.copytree(roots[pkg], fortroot, symlinks=True, dirs_exist_ok=True)

        out = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        for sub in ("web", "docs", "code", "fortunes", "reference"):
            shutil.rmtree(out / sub, ignore_errors=True)
        stats = {
            "web": build_web(roots["debian-handbook"], out),
            "docs": build_docs(roots["python3.11-doc"], out),
            "code": build_code(pyroot, out),
            "fortunes": build_fortunes(fortroot, out),
            "reference": build_reference(roots["debian-reference-en"], out),
        }
        for sub in stats:
            stats[sub]["shard_files"], stats[sub]["disk_bytes"] = dir_stats(out / sub)
        # /usr/share/doc/libpython3.11-stdlib is a symlink into -minimal
        write_readme(out, meta, stats,
                     {**roots, "libpython3.11-stdlib": pyroot})
        write_sums(out)
        for sub, s in stats.items():
            docs = s["documents"] if "documents" in s else s["files"]
            print(f"{sub:10s} {docs:5d} documents  {s['shard_files']:4d} files  "
                  f"{human(s['disk_bytes'])}")
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


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


if __name__ == "__main__":
    sys.exit(main())
