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

The rules live in corpus_rules.py, the five builders in corpus_builders.py, their
helpers in corpus_text.py, and the README and checksums it writes in corpus_readme.py.

Requirements: a Debian/Ubuntu host with ``apt-get`` and ``dpkg-deb`` whose
apt sources reach the Debian archive, Python >= 3.9, ``pyarrow`` and
``zstandard``.  Only the standard library plus those two packages is used.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

try:
    from corpus_builders import build_code, build_docs, build_fortunes, build_reference, build_web
    from corpus_readme import write_readme, write_sums
    from corpus_text import deb_field, dir_stats, find_deb, human, run
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

# ------------------------------------------------------------------ driver --
def download(debdir: Path, exact: bool) -> None:
    specs = [f"{p}={v}" if exact else p for p, v in PINNED.items()]
    run(["apt-get", "download", *specs], cwd=debdir)


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


if __name__ == "__main__":
    sys.exit(main())
