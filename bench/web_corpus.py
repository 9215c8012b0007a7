"""A benchmark corpus that looks like a web crawl, made of real documents: curate_vs_datatrove.py's default.

    python bench/web_corpus.py [--docs 2000] [--seed 1234] [--funnel]

Sources (no network once the packages are here: a .deb is taken from /var/cache/apt/archives or /tmp/debs at
its pinned version, else fetched with `apt-get download NAME=VERSION`):
  - debian-handbook 11.20220922 (GPL-2.0+ or CC-BY-SA-3.0): the Debian Administrator's Handbook as HTML, one
    file per chapter or section, in all 26 languages it ships (3,302 files; several translations are partial and
    keep English sections);
  - python3.11-doc 3.11.2-6+deb12u9 (PSF-2.0): the Python documentation as HTML (530 files: prose, API
    references with code samples, index pages);
  - debian-faq 11.1 (GPL-2+), debian-policy 4.6.2.0 (GPL-2+), developers-reference 12.18 (GPL-2), maint-guide
    1.2.53 (GPL-2+ or MIT): Debian's English manuals as HTML (84 files);
  - postgresql-doc-15 15.20-0+deb12u1 (PostgreSQL licence): the PostgreSQL 15 manual as HTML (1,169 files), the
    largest English prose source (1.0M words after extraction; the English handbook has 106k);
  - the bundled corpora (examples/corpora, read as curation reads them): docs, reference, code and fortunes.
The HTML goes through Loom's own extraction (curation.steps.extract.ExtractHtml: datatrove's Trafilatura, as an
html-dir or WARC source gets it), once: the texts are cached in $LOOM_BENCH_CACHE (default ~/.cache/loom-bench),
by package and version (about 4 minutes on 2 cores the first time; the text depends on trafilatura's version).

A unique page is one of (SHARES):
  - an English article, 64%: a window of consecutive lines of a document of the handbook in en-US (13%), of the
    Debian manuals (17%), of the PostgreSQL manual (26%), of the Python docs pages that are mostly prose (6%), or
    of the bundled docs and reference (2%; reStructuredText and ASCII tables, which the filters mostly reject);
  - a foreign page, 26%: the same from the handbook in one of its 25 other languages, from the 1,516 of its
    3,175 documents that lid.176 does not call English (the rest are untranslated copies of the English);
  - code, 4%: a window of a bundled Python source file or of a Python docs page that is mostly code samples;
  - short, 6%: a title and one line (a document's first line and another), or one fortune.
A window starts at a random word of a random line of a document drawn in proportion to its length, and is cut
mid-line at a log-normally drawn number of words (median 600, 40-3,000). The sources are small next to a crawl
(4.2M words of English and foreign text), so windows overlap; what keeps larger corpora from becoming mostly
duplicates is that windows rarely coincide even after C4 has dropped the lines that do not end a sentence
(sharing the English between several sources matters most: with the handbook as a third of the pages, 30,000
pages lost 9% to exact dedup, most of it windows made equal by C4).
75% of pages carry the boilerplate of one of 60 made-up sites: a navigation line and 1-3 footer lines
(copyright, privacy and cookie notices, share and newsletter lines) from the site's own set, so that the same
lines repeat over many pages as on a real site. Then 3% more are near duplicates (an earlier page's body a line
or two shorter at one end, or under another site's boilerplate) and 4% exact copies of earlier pages; shuffled.
30,000 pages (seed 1234): 103 MB, median 410 words; lid.176 calls 22.9% of them not English (28 other languages
named); 0.09% of the 27,900 unique pages are accidental exact copies.

What the filters remove, 30,000 pages, seed 1234 (the manifest funnel of curate_vs_datatrove.py's Loom job, 8
shards, 2 workers): language ID 12.1%, Gopher repetition 6.1%, Gopher quality 33.1%, C4 9.0%, FineWeb 1.7%,
exact duplicates 4.5%; 33.5% kept (10,042 documents, 4.27M tokens). Top reasons: Gopher's share of words with
a letter 8,139, low language score 3,620, C4's too few sentences 2,659. (10,000 pages: 34.4% kept, exact
duplicates 3.3%; 3,000 pages with --funnel: 35.3%.)
C4 also drops lines (the boilerplate's unpunctuated ones), which turns some near duplicates into exact ones.
By kind of page (250 pages of one kind through the same steps), kept: handbook-en 50%, Debian manuals 60%,
PostgreSQL manual 40%, Python docs 15%, bundled docs 2%, foreign 35%, code 1%, short 4%. Gopher quality's 80% share of words with a letter (spaCy
counts punctuation and symbols as words) is the main reason, as on a crawl's technical pages.
"""

import argparse
import gzip
import itertools
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEB_FOLDERS = (Path("/var/cache/apt/archives"), Path("/tmp/debs"))
SHARES = {"handbook-en": 0.13, "debian-docs": 0.17, "postgresql-docs": 0.26, "python-docs": 0.06,  # English
          "bundled-docs": 0.02, "foreign": 0.26, "code": 0.04, "short": 0.06}
NEAR_DUPLICATES = 0.03
EXACT_COPIES = 0.04
BOILERPLATE = 0.75
N_SITES = 60
WORDS_MEDIAN, WORDS_RANGE = 600, (40, 3000)


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    licence: str
    html_glob: str  # inside the unpacked package
    group: str  # the kind of page cut from it (the handbook's are split by language)


PACKAGES = (
    Package("debian-handbook", "11.20220922", "GPL-2.0+ or CC-BY-SA-3.0", "usr/share/doc/debian-handbook/html/*/*.html",
            "handbook"),
    Package("python3.11-doc", "3.11.2-6+deb12u9", "PSF-2.0", "usr/share/doc/python3.11/html/**/*.html", "python-docs"),
    Package("debian-faq", "11.1", "GPL-2+", "usr/share/doc/debian/FAQ/*.html", "debian-docs"),
    Package("debian-policy", "4.6.2.0", "GPL-2+", "usr/share/doc/debian-policy/**/*.html", "debian-docs"),
    Package("developers-reference", "12.18", "GPL-2", "usr/share/developers-reference/**/*.html", "debian-docs"),
    Package("maint-guide", "1.2.53", "GPL-2+ or MIT", "usr/share/doc/maint-guide/html/*.html", "debian-docs"),
    Package("postgresql-doc-15", "15.20-0+deb12u1", "PostgreSQL", "usr/share/doc/postgresql-doc-15/html/*.html",
            "postgresql-docs"),
)


def cache_dir() -> Path:
    folder = Path(os.environ.get("LOOM_BENCH_CACHE", Path.home() / ".cache" / "loom-bench"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def deb_version(deb: Path) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], check=True, capture_output=True,
                          text=True).stdout.strip()


def package_deb(package: Package, download_to: Path) -> Path:
    """The package's .deb at its pinned version, from apt's cache or /tmp/debs, else downloaded."""
    for folder in DEB_FOLDERS + (download_to,):
        for deb in sorted(folder.glob(f"{package.name}_*.deb")):
            if deb_version(deb) == package.version:
                return deb
    subprocess.run(["apt-get", "download", f"{package.name}={package.version}"], check=True, cwd=download_to,
                   stdout=subprocess.DEVNULL)
    return next(download_to.glob(f"{package.name}_*.deb"))


_extractor = None


def _extract(item: tuple[str, str]) -> tuple[str, str]:
    global _extractor
    if _extractor is None:
        from curation.steps.extract import ExtractHtml

        _extractor = ExtractHtml().extractor
    name, html = item
    try:
        return name, _extractor.extract(html) or ""
    except Exception:  # trafilatura raises many kinds on broken markup; such a page is left out
        return name, ""


def extracted_texts(package: Package) -> list[dict]:
    """{"path", "text"} of every HTML file of the package, text extracted as Loom extracts it; cached."""
    cached = cache_dir() / f"extracted-{package.name}_{package.version}.jsonl.gz"
    if cached.exists():
        with gzip.open(cached, "rt", encoding="utf-8") as f:
            return [json.loads(line) for line in f]
    from multiprocessing import Pool

    print(f"extracting the HTML of {package.name} {package.version} (once; cached in {cached})", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        deb = package_deb(package, cache_dir())
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        files = sorted(p for p in Path(tmp).glob(package.html_glob) if p.is_file() and not p.is_symlink())
        items = [(str(p.relative_to(tmp)), p.read_text(encoding="utf-8", errors="replace")) for p in files]
    with Pool() as pool:
        records = [{"path": name, "text": text} for name, text in pool.map(_extract, items, chunksize=8) if text.strip()]
    partial = cached.with_suffix(".partial")
    with gzip.open(partial, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    partial.rename(cached)
    return records


def handbook_language(path: str) -> str:
    """usr/share/doc/debian-handbook/html/fr-FR/apt.html -> fr-FR"""
    return Path(path).parent.name


def code_share(text: str) -> float:
    """The share of lines that look like Python: prompts, indentation, brackets at the end, assignments."""
    lines = [line for line in text.splitlines() if line.strip()]
    looks_like_code = re.compile(r"^(>>>|\.\.\.|\s{4}|.*[(\[{:,]$|\w+ = )")
    return sum(bool(looks_like_code.match(line)) for line in lines) / max(len(lines), 1)


def bundled_texts() -> dict[str, list[str]]:
    """The bundled corpora's texts by source name, read as curation reads them."""
    from curation.config import load_sources
    from curation.samples import source_texts

    return {s.name: list(source_texts(s)) for s in load_sources(REPO / "examples" / "sources.toml")}


def nonempty_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def english_detector():
    """Whether lid.176 (as Loom's language ID reads a text) calls a text English."""
    from curation.fasttext_model import load_fasttext
    from curation.steps.langid import LID_SCAN_CHARS, lid_model_path

    model = load_fasttext(str(lid_model_path()))
    return lambda text: model.predict(text[:LID_SCAN_CHARS].replace("\n", " "), k=1)[0][0] == "__label__en"


@cache
def pools() -> dict[str, list]:
    """The documents (as their non-empty lines) that each kind of page is cut from; "fortunes" are whole texts."""
    bundled = bundled_texts()
    english = english_detector()
    groups: dict[str, list] = {"handbook-en": [], "foreign": [], "python-docs": [], "code": []}
    for package in PACKAGES:
        for r in extracted_texts(package):
            if package.group == "handbook":
                if handbook_language(r["path"]) == "en-US":
                    groups["handbook-en"].append(r["text"])
                elif not english(r["text"]):  # half of the other folders' text is untranslated English
                    groups["foreign"].append(r["text"])
            elif package.group == "python-docs" and code_share(r["text"]) > 0.3:
                groups["code"].append(r["text"])
            else:
                groups.setdefault(package.group, []).append(r["text"])
    groups["code"] += bundled["code"]
    groups["bundled-docs"] = bundled["docs"] + bundled["reference"]
    groups = {name: [lines for t in texts if (lines := nonempty_lines(t))] for name, texts in groups.items()}
    groups["fortunes"] = [t for t in bundled["fortunes"] if t.strip()]
    return groups


# ---- boilerplate: real-looking lines that a site repeats on every page -------------------------------------
SITE_WORDS = ("Linux", "Debian", "Admin", "Server", "Code", "Open", "Tech", "Byte", "Stack", "Shell", "Kernel",
              "Cloud", "Daily", "Notes", "Hub", "Lab", "Guide", "Pro", "Forge", "Net")
NAV_ITEMS = ("Home", "About", "Blog", "News", "Docs", "Tutorials", "Forum", "Downloads", "Contact", "Support",
             "Community", "Archives", "Categories", "Login", "Register", "Search", "FAQ", "Shop")
FOOTERS = (
    "© {year} {site}. All rights reserved.",
    "Copyright © {year} {site} | Powered by WordPress",
    "Privacy Policy | Terms of Use | Cookie Policy",
    "This website uses cookies to ensure you get the best experience on our website. Learn more",
    "We use cookies to personalise content and ads. By continuing to browse, you agree to our use of cookies.",
    "Accept all cookies",
    "Share this: Twitter Facebook LinkedIn Reddit Email",
    "Subscribe to our newsletter to get the latest articles delivered to your inbox.",
    "Posted in {category} | Leave a comment",
    "« Previous post Next post »",
    "Related posts",
    "Leave a Reply Cancel reply",
    "Your email address will not be published. Required fields are marked *",
    "Back to top ↑",
    "Skip to content",
    "Follow us on social media!",
    "{site} is not affiliated with the Debian project.",
    "Last updated: {month} {day}, {year}",
)
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


@dataclass(frozen=True)
class Site:
    header: str
    footers: tuple[str, ...]


def make_sites(rng: random.Random) -> list[Site]:
    sites = []
    for _ in range(N_SITES):
        name = "".join(rng.sample(SITE_WORDS, 2))
        header = " | ".join([name] + rng.sample(NAV_ITEMS, rng.randint(3, 7)))
        fill = {"site": name, "year": rng.randint(2008, 2024), "category": rng.choice(("Linux", "Howto", "News",
                "Uncategorized", "Programming")), "month": rng.choice(MONTHS), "day": rng.randint(1, 28)}
        footers = tuple(line.format(**fill) for line in rng.sample(FOOTERS, rng.randint(3, 6)))
        sites.append(Site(header, footers))
    return sites


def dress(body: str, site: Site, rng: random.Random) -> str:
    """The page as a crawler's extractor would leave it: the site's navigation line, the body, 1-3 footer lines."""
    footers = rng.sample(site.footers, min(len(site.footers), rng.randint(1, 3)))
    return "\n".join([site.header, body, *footers])


# ---- pages -------------------------------------------------------------------------------------------------
def window(lines: list[str], rng: random.Random) -> str:
    """Consecutive lines from a random word of a random line, cut at a log-normally drawn number of words
    (mid-line, as an excerpt is). Both cuts are at a word, not a line: C4's filter drops the lines that do not
    end a sentence (headings, commands, the cut last line), so windows cut at lines would often become equal
    once filtered, and larger corpora mostly exact duplicates."""
    target = min(max(int(rng.lognormvariate(math.log(WORDS_MEDIAN), 0.7)), WORDS_RANGE[0]), WORDS_RANGE[1])
    start = rng.randrange(max(1, len(lines) - 3))
    first = lines[start].split()
    taken, words = [" ".join(first[rng.randrange(len(first)):])], 0
    for line in lines[start + 1:]:
        line_words = line.split()
        if words + len(line_words) >= target:
            taken.append(" ".join(line_words[:target - words]))
            break
        taken.append(line)
        words += len(line_words)
    return "\n".join(taken)


def short_page(groups: dict[str, list], rng: random.Random) -> str:
    """One fortune, or a document's first line (its title) and another of its lines."""
    if rng.random() < 0.5:
        return rng.choice(groups["fortunes"])
    lines = rng.choice(groups[rng.choice(("handbook-en", "debian-docs", "python-docs", "foreign"))])
    return "\n".join([lines[0], rng.choice(lines)])


def cumulative_words(groups: dict[str, list]) -> dict[str, list[int]]:
    """Each window kind's documents' word counts, accumulated: the weights a document is drawn with."""
    return {kind: list(itertools.accumulate(sum(len(line.split()) for line in lines) for lines in groups[kind]))
            for kind in SHARES if kind != "short"}


def unique_page(kind: str, groups: dict[str, list], weights: dict[str, list[int]], rng: random.Random) -> str:
    """A short page, or a window of a document of the kind drawn in proportion to its length (as a random
    offset into all of them would be), so that short documents do not yield the same window again and again."""
    if kind == "short":
        return short_page(groups, rng)
    return window(rng.choices(groups[kind], cum_weights=weights[kind])[0], rng)


def near_duplicate(body: str, sites: list[Site], rng: random.Random) -> str:
    """The same body with a few lines more or fewer at an end, or under another site's boilerplate."""
    lines = body.split("\n")
    if len(lines) > 4 and rng.random() < 0.5:
        cut = rng.randint(1, 2)
        lines = lines[cut:] if rng.random() < 0.5 else lines[:-cut]
    return dress("\n".join(lines), rng.choice(sites), rng)


@dataclass(frozen=True)
class Page:
    kind: str  # one of SHARES, or "near-duplicate" or "exact-copy"
    text: str
    dressed: bool  # carries a site's boilerplate


def web_pages(n_docs: int, seed: int, groups: dict[str, list] | None = None) -> list[Page]:
    """n_docs pages (see the module docstring) cut from `groups` (default: pools()), deterministic for a seed."""
    rng = random.Random(seed)
    groups, sites = groups or pools(), make_sites(rng)
    weights = cumulative_words(groups)
    n_exact, n_near = int(n_docs * EXACT_COPIES), int(n_docs * NEAR_DUPLICATES)
    kinds, shares = list(SHARES), list(SHARES.values())
    bodies, pages = [], []
    for _ in range(n_docs - n_exact - n_near):
        kind = rng.choices(kinds, shares)[0]
        body = unique_page(kind, groups, weights, rng)
        bodies.append(body)
        dressed = rng.random() < BOILERPLATE
        pages.append(Page(kind, dress(body, rng.choice(sites), rng) if dressed else body, dressed))
    pages += [Page("near-duplicate", near_duplicate(rng.choice(bodies), sites, rng), True) for _ in range(n_near)]
    pages += [Page("exact-copy", rng.choice(pages).text, False) for _ in range(n_exact)]
    rng.shuffle(pages)
    return pages


def web_corpus(n_docs: int, seed: int) -> list[str]:
    """The texts of web_pages(n_docs, seed): curate_vs_datatrove.py's corpus."""
    return [page.text for page in web_pages(n_docs, seed)]


class CountingFunnel:
    def __init__(self):
        self.removed: dict[str, int] = {}

    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        self.removed[stage] = self.removed.get(stage, 0) + 1


def funnel(texts: list[str], filters: tuple[str, ...]) -> dict[str, int]:
    """What Loom's curate steps remove, counted in process as curate_vs_datatrove.py configures them: normalize,
    lid.176 at 0.65, the heuristic filters on every language, then exact duplicates; and how many are kept."""
    from curation.config import SourceConfig
    from curation.document import Doc
    from curation.steps.filters import HeuristicFilters
    from curation.steps.langid import LanguageId
    from curation.steps.normalize import Normalize

    source = SourceConfig(name="bench", format="jsonl", paths=("-",), min_lang_score=0.65, filters=filters,
                          filter_languages=("*",))
    counts = CountingFunnel()
    docs = (Doc(record=i, text=t) for i, t in enumerate(texts))
    for step in (Normalize(), LanguageId(source), HeuristicFilters(source)):
        docs = step.run(docs, counts)
    seen: set[str] = set()
    for doc in docs:
        if doc.id in seen:
            counts.remove(doc, "exact_dedup", "duplicate")
        seen.add(doc.id)
    return {**counts.removed, "kept": len(seen)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--funnel", action="store_true", help="count what Loom's steps remove, in process")
    args = parser.parse_args()
    texts = web_corpus(args.docs, args.seed)
    words = sorted(len(t.split()) for t in texts)
    print(f"{len(texts):,} pages, {sum(len(t.encode()) for t in texts) / 1e6:.1f} MB, median {words[len(words) // 2]} "
          f"words, {len(set(texts)):,} distinct")
    if args.funnel:
        counts = funnel(texts, ("gopher_repetition", "gopher_quality", "c4", "fineweb"))
        print(", ".join(f"{stage} {n:,} ({n / len(texts):.1%})" for stage, n in counts.items()))


if __name__ == "__main__":
    main()
