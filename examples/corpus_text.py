"""Helpers of the example builders (build_corpora.py, build_evals.py, build_decontamination.py): running tools,
reading .deb files and texts, writing shards deterministically, and cutting reStructuredText into documents."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import zstandard

from corpus_rules import DOCS_MAX_BYTES, DOCS_MIN_BYTES, ZSTD_LEVEL


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


def checked_deb(debdir: Path, pkg: str, version: str) -> Path:
    """The package's .deb in `debdir`, with a note when it is not the version the bundled files were built from."""
    deb = find_deb(debdir, pkg)
    found = deb_field(deb, "Version")
    if found != version:
        print(f"note: {pkg} is {found}, not {version}: the set will differ from the bundled one", file=sys.stderr)
    return deb


def deb_builder_main(doc: str, pkg: str, version: str, build) -> None:
    """The command line of a builder from one Debian package: `build(folder)` on the folder given by --debs, or
    on a temporary one that `apt-get download PKG=VERSION` fills."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--debs", type=Path, help="a folder holding the downloaded .deb")
    args = parser.parse_args()
    if args.debs:
        build(args.debs)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(["apt-get", "download", f"{pkg}={version}"], cwd=tmp)
        build(Path(tmp))


def write_checked(folder: Path, files: dict[str, bytes]) -> None:
    """Each file at `folder/name` (a name may hold subfolders), and a SHA256SUMS of them all in `folder` that
    `sha256sum -c` checks."""
    sums = []
    for name, data in sorted(files.items()):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        sums.append(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    (folder / "SHA256SUMS").write_text("".join(sums), encoding="utf-8")


def read_utf8(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        sys.exit(f"{path}: not valid UTF-8 ({exc})")


def jsonl_bytes(records) -> bytes:
    lines = [json.dumps(r, ensure_ascii=False, sort_keys=False) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8")


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    # filename="" and mtime=0 keep the gzip header free of names and clocks
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9,
                       mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def write_gzip(path: Path, data: bytes) -> None:
    path.write_bytes(gzip_bytes(data))


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


def read_copyright(root: Path, pkg: str) -> str:
    p = root / "usr/share/doc" / pkg / "copyright"
    return p.read_text(encoding="utf-8", errors="replace") if p.exists() else ""


def dir_stats(path: Path):
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return len(files), sum(p.stat().st_size for p in files)


def human(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / 1048576:.2f} MiB"



# ---------------------------------------------------------- rst splitting --
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


