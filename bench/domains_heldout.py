"""Held-out check of topic domains: eight Debian documentation families merged into one html-dir source,
curated with `[domains] k = 8`, scored against the families.

    python bench/domains_heldout.py [--debs DIR] [--cap 150] [--k 8] [--workers 2] [--workdir DIR] [--keep]
    python bench/domains_heldout.py --estimator [--seeds 0,1,2]   # the estimator alone, several settings

1. The corpus. Eight documentation packages of Debian 12 (bookworm), each on its own topic, fetched with
   `apt-get download` into the work folder (or taken from --debs, a folder of the .deb files) and unpacked
   with `dpkg-deb -x`. Of each family, the HTML pages of one manual (FAMILIES: the glob inside the package),
   sorted by path and thinned evenly to at most --cap pages, so that no family outweighs the others by more
   than ~2.5x; copied to corpus/FAMILY/ (a page in a subfolder flattened to `sub__page.html`). Used when
   written (versions as `apt-get download` fetched them; each run prints the ones it used):

   maths       maxima-doc 5.46.0-11 (GPL-2): the Maxima reference manual, 383 pages
   graphics    imagemagick-6-doc 8:6.9.11.60+dfsg-1.6+deb12u16 (ImageMagick licence, Apache-2.0 style): its
               web pages on the tools, options and formats, 66
   networking  wireshark-doc 4.0.17-0+deb12u3 (GPL-2+): the Wireshark user's guide, 189
   language    ghc-doc 9.0.2-4 (BSD-3-clause): the GHC user's guide (Haskell), 157
   database    db5.3-doc 5.3.28+dfsg2-1 (Sleepycat and BSD-3-clause): the Berkeley DB programmer's reference, 203
   build       scons-doc 4.4.0+dfsg-1 (Expat): the SCons user's guide, 148 (ISO-8859-1: copied as UTF-8)
   editor      ne-doc 3.3.2-1 (GPL-3.0+): the ne editor's manual, 194
   science     grass-doc 8.2.1-1 (GPL-2+): the GRASS GIS module manual, 717

2. Loom: one html-dir source over corpus/ (`filters = []`: manuals are not web pages; language ID and dedup
   as default; `shard_bytes` small enough for several shards, so that the stage's per-shard samples merge),
   `[domains] k = --k`, a byte-level BPE tokenizer trained on the pages; the real `loom curate` in a
   subprocess. A curated document's `meta` holds its path (corpus/FAMILY/page.html): its family.
3. Prints purity (each domain counted as its largest family) and normalized mutual information
   (scikit-learn's, arithmetic mean) against the families, each family's spread over the domains, and each
   domain's size, families and top terms (manifest/domains.parquet).
With --estimator, no curation: the pages' texts (extracted and normalized as curation reads them,
curation.samples.source_texts) go to curation.domains.DomainModel directly, for SVD 32, 64 and 128 dimensions,
with and without word bigrams (ESTIMATOR_SETTINGS), over --seeds; purity and NMI of each, and its fit time.
"""

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository first: Loom runs from this checkout

from loom_job import bench_tokenizer, bench_workdir, machine_load  # noqa: E402


@dataclass(frozen=True)
class Family:
    name: str
    package: str
    pages: str  # a glob inside the unpacked package


FAMILIES = (
    Family("maths", "maxima-doc", "usr/share/doc/maxima-doc/html/*.html"),
    Family("graphics", "imagemagick-6-doc", "usr/share/doc/imagemagick-6-common/html/www/*.html"),
    Family("networking", "wireshark-doc", "usr/share/doc/wireshark/wsug_html_chunked/*.html"),
    Family("language", "ghc-doc", "usr/share/doc/ghc-doc/html/users_guide/**/*.html"),
    Family("database", "db5.3-doc", "usr/share/doc/db5.3-doc/programmer_reference/*.html"),
    Family("build", "scons-doc", "usr/share/doc/scons/HTML/*.html"),
    Family("editor", "ne-doc", "usr/share/doc/ne/html/*.html"),
    Family("science", "grass-doc", "usr/share/doc/grass-doc/html/*.html"),
)
MIN_PAGES = 40
CHARSET = re.compile(rb"charset=[\"']?([A-Za-z0-9_-]+)")
SHARD_BYTES = 1_000_000  # ~8 shards of this corpus
ESTIMATOR_SETTINGS = ((64, True), (128, True), (64, False), (128, False), (32, True))  # SVD dimensions, word bigrams


# ---- the corpus ----

def debian_packages(debs: Path) -> dict[str, tuple[Path, str]]:
    """Each family's package as (.deb, version): those already in `debs`, the others fetched there."""
    debs.mkdir(parents=True, exist_ok=True)
    found = {family.package: sorted(debs.glob(f"{family.package}_*.deb")) for family in FAMILIES}
    missing = [name for name, files in found.items() if not files]
    if missing:
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True, stdout=subprocess.DEVNULL)
        found = {name: sorted(debs.glob(f"{name}_*.deb")) for name in found}
    result = {}
    for name, files in found.items():
        if not files:
            sys.exit(f"apt-get download fetched no {name}_*.deb into {debs}")
        version = subprocess.run(["dpkg-deb", "-f", str(files[-1]), "Version"], check=True, capture_output=True,
                                 text=True).stdout.strip()
        result[name] = (files[-1], version)
    return result


def evenly(items: list, cap: int) -> list:
    """At most `cap` items, spread evenly over the list (all of them when there are no more)."""
    if len(items) <= cap:
        return items
    return [items[i * len(items) // cap] for i in range(cap)]


def copy_as_utf8(page: Path, dest: Path) -> None:
    """The page in UTF-8: html-dir reads UTF-8 only (a Latin-1 page is set aside as invalid_utf8), and SCons's
    guide is ISO-8859-1, as its <meta charset> says; a page of neither is decoded as cp1252."""
    data = page.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        declared = CHARSET.search(data[:2048])
        try:
            text = data.decode(declared.group(1).decode() if declared else "cp1252", errors="replace")
        except LookupError:  # a charset Python does not know
            text = data.decode("cp1252", errors="replace")
        data = text.encode("utf-8")
    dest.write_bytes(data)


def build_corpus(workdir: Path, debs: Path, cap: int) -> tuple[Path, dict[str, int], dict[str, str]]:
    """corpus/FAMILY/*.html under workdir; the pages per family and each package's version."""
    packages = debian_packages(debs)
    corpus = workdir / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    counts = {}
    for family in FAMILIES:
        deb, _ = packages[family.package]
        unpacked = workdir / "unpacked" / family.package
        if not unpacked.exists():  # unpacked beside, then renamed: a stopped run leaves no half package
            partial = unpacked.with_name(unpacked.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(partial)], check=True)
            partial.rename(unpacked)
        pages = sorted(p for p in unpacked.glob(family.pages) if p.is_file())
        if len(pages) < MIN_PAGES:
            sys.exit(f"{family.package} has {len(pages)} pages matching {family.pages}; the check needs {MIN_PAGES}")
        base = Path(family.pages.split("*")[0])
        (corpus / family.name).mkdir(parents=True)
        for page in evenly(pages, cap):
            flat = "__".join(page.relative_to(unpacked / base).parts)
            copy_as_utf8(page, corpus / family.name / flat)
        counts[family.name] = min(len(pages), cap)
    return corpus, counts, {name: version for name, (_, version) in packages.items()}


def family_texts(corpus: Path) -> tuple[list[str], list[str]]:
    """Every page's text as curation reads it (extracted, normalized), and its family."""
    from curation.config import SourceConfig
    from curation.samples import source_texts

    texts, families = [], []
    for family in FAMILIES:
        source = SourceConfig(name=family.name, format="html-dir", paths=(str(corpus / family.name),), filters=())
        for text in source_texts(source):
            texts.append(text)
            families.append(family.name)
    return texts, families


# ---- scoring ----

def purity(families: list[str], domains: list[int]) -> float:
    """The share of documents in their domain's largest family."""
    by_domain = collections.defaultdict(collections.Counter)
    for family, domain in zip(families, domains):
        by_domain[domain][family] += 1
    return sum(c.most_common(1)[0][1] for c in by_domain.values()) / max(len(families), 1)


def nmi(families: list[str], domains: list[int]) -> float:
    from sklearn.metrics import normalized_mutual_info_score

    return float(normalized_mutual_info_score(families, domains))


def print_spread(families: list[str], domains: list[int], k: int) -> None:
    """Per family: its documents over the domains, and the share in its largest domain."""
    print(f"\nper family, documents in each domain (0..{k - 1}) and the share in its largest:")
    print(f"{'family':<11} {'docs':>5}  " + " ".join(f"{d:>4}" for d in range(k)) + "  largest")
    for family in FAMILIES:
        counts = collections.Counter(d for f, d in zip(families, domains) if f == family.name)
        n = sum(counts.values())
        if n:
            top, top_n = counts.most_common(1)[0]
            print(f"{family.name:<11} {n:>5}  " + " ".join(f"{counts.get(d, 0):>4}" for d in range(k))
                  + f"  {top_n / n:.0%} in {top}")


# ---- the estimator alone ----

def estimator_model(k: int, seed: int, dims: int, bigrams: bool):
    from curation.domains import DomainModel

    class Unigrams(DomainModel):
        def _vectorizer(self):
            return super()._vectorizer().set_params(ngram_range=(1, 1))

    return (DomainModel if bigrams else Unigrams)(k, seed=seed, dims=dims)


def compare_estimators(corpus: Path, k: int, seeds: list[int]) -> None:
    texts, families = family_texts(corpus)
    print(f"{len(texts):,} pages read; TF-IDF (hashed) + truncated SVD + spherical k-means, k={k}, seeds {seeds}")
    print(f"{'SVD dims':>8} {'bigrams':>8} {'purity':>16} {'NMI':>16} {'fit+predict s':>14}")
    for dims, bigrams in ESTIMATOR_SETTINGS:
        scores = []
        for seed in seeds:
            start = time.perf_counter()
            model = estimator_model(k, seed, dims, bigrams).fit(texts)
            domains = model.predict(texts)[0].tolist()
            scores.append((purity(families, domains), nmi(families, domains), time.perf_counter() - start))
        p, m, s = zip(*scores)
        print(f"{dims:>8} {'yes' if bigrams else 'no':>8} {sum(p) / len(p):>7.3f} [{min(p):.2f}-{max(p):.2f}] "
              f"{sum(m) / len(m):>7.3f} [{min(m):.2f}-{max(m):.2f}] {sum(s) / len(s):>14.1f}")


# ---- Loom's curate job ----

def curate(workdir: Path, corpus: Path, k: int, workers: int) -> tuple[Path, float]:
    """A workspace over the corpus with `[domains] k`, curated by `loom curate` in a subprocess; its seconds."""
    ws = workdir / "loom"
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    (ws / "sources.toml").write_text(f"""
[[source]]
name = "docs"
format = "html-dir"
paths = ["{corpus}"]
filters = []
shard_bytes = {SHARD_BYTES}

[domains]
k = {k}
""", encoding="utf-8")
    from base.workspace import Workspace

    tokenizer = Workspace(ws).tokenizer
    tokenizer.parent.mkdir(parents=True, exist_ok=True)
    bench_tokenizer(family_texts(corpus)[0], tokenizer)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), "curate", "--workers", str(workers)],
                   check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return ws, time.perf_counter() - start


def curated_domains(ws: Path) -> tuple[list[str], list[int]]:
    """Each curated document's family (from its meta path corpus/FAMILY/page) and domain."""
    import duckdb

    from base.workspace import Workspace

    curated = Workspace(ws).published().curated
    rows = duckdb.sql(f"SELECT meta, domain FROM read_parquet('{curated}/**/*.parquet') ORDER BY id").fetchall()
    return [json.loads(meta)["path"].split("/")[-2] for meta, _ in rows], [domain for _, domain in rows]


def print_domains(ws: Path, families: list[str], domains: list[int]) -> None:
    """Each domain: its documents, its largest families and its top terms (manifest/domains.parquet)."""
    import duckdb

    from base.workspace import Workspace

    table = Workspace(ws).published().manifest_table("domains")
    rows = duckdb.sql(f"SELECT domain, any_value(top_terms), sum(documents), any_value(model_digest) "
                      f"FROM read_parquet('{table}') GROUP BY domain ORDER BY domain").fetchall()
    print(f"\nper domain (model {rows[0][3][:12] if rows else '?'}): documents, families, top terms")
    for domain, terms, documents, _ in rows:
        counts = collections.Counter(f for f, d in zip(families, domains) if d == domain)
        mix = ", ".join(f"{f} {n}" for f, n in counts.most_common(3))
        print(f"  {domain:>2} {documents:>5}  {mix:<40} {' '.join(terms[:10])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debs", type=Path, help="a folder of the packages' .deb files (fetched there if missing)")
    parser.add_argument("--cap", type=int, default=150, help="pages per family at most")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--estimator", action="store_true", help="compare estimator settings; no curation")
    parser.add_argument("--seeds", default="0,1,2", help="with --estimator: k-means seeds")
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder, removed after")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()

    with bench_workdir(args, "domains") as workdir:
        start = time.perf_counter()
        corpus, counts, versions = build_corpus(workdir, args.debs or workdir / "debs", args.cap)
        print("packages: " + ", ".join(f"{name} {version}" for name, version in versions.items()))
        print("pages per family: " + ", ".join(f"{f} {n}" for f, n in counts.items())
              + f" ({sum(counts.values()):,}); built in {time.perf_counter() - start:.1f}s", flush=True)
        if args.estimator:
            compare_estimators(corpus, args.k, [int(s) for s in args.seeds.split(",")])
            return
        ws, seconds = curate(workdir, corpus, args.k, args.workers)
        families, domains = curated_domains(ws)
        print(f"loom curate: {seconds:.1f}s, {len(families):,} documents kept; load average {machine_load()}")
        print_spread(families, domains, args.k)
        print_domains(ws, families, domains)
        print(f"\npurity {purity(families, domains):.3f}, NMI {nmi(families, domains):.3f} "
              f"({len(families):,} documents, {len(counts)} families, k={args.k})")


if __name__ == "__main__":
    main()
