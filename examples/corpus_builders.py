"""The five bundled corpora, each cut from its Debian package by fixed rules (see build_corpora.py)."""

from __future__ import annotations

import gzip
import re
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from corpus_rules import (CODE_EXCLUDE_RE, CODE_LICENSE, CODE_MAX_BYTES, CODE_SHARDS, CODE_STRIDE, DOCS_DIRS,
                          DOCS_LIBRARY_STRIDE, DOCS_SHARDS, DOCS_TOP_FILES, FORTUNE_SHARDS, FORTUNE_STRIDE,
                          PARQUET_ZSTD_LEVEL, REFERENCE_CHAPTERS, WEB_LANGS, WEB_MAX_BYTES, WEB_MIN_BYTES, WEB_PAGES)
from corpus_text import jsonl_bytes, read_utf8, split_even, split_rst, utf8_len, write_gzip, write_zstd


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


