"""Loom's whole curate job as the end-to-end benchmarks (curate_vs_datatrove.py, scale.py) run it: a web-like
corpus (or prose_corpus, which mostly passes the filters) written as jsonl.gz shards, a workspace with its own
sources.toml and tokenizer, the job on a LocalCluster, each stage timed through `curate`'s progress callback."""

import argparse
import functools
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the repository first: Loom runs from this checkout

EXACT_FRACTION = 0.1  # of the documents are exact copies of others, for the exact-dedup stage to find


def quickstart_workspace(given: str | Path | None, workdir: Path) -> Path:
    """A curated workspace with the `sample` mixture built and one short run: `given`, or a fresh `loom quickstart`
    in workdir/quickstart (a few minutes, untimed)."""
    if given:
        return Path(given).resolve()
    ws = workdir / "quickstart"
    subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), "quickstart"], check=True, cwd=REPO,
                   stdout=subprocess.DEVNULL)
    return ws


def web_like_corpus(n_docs: int, seed: int, real_first: bool = True) -> list[str]:
    """dedup.py's corpus (every bundled document unless not `real_first`, then mosaics of real passages; 40%
    of the documents planted near duplicates), with EXACT_FRACTION of them exact copies of others, shuffled."""
    from dedup_corpus import build_corpus

    n_copies = int(n_docs * EXACT_FRACTION)
    texts, _ = build_corpus(n_docs - n_copies, seed, real_first)
    rng = random.Random(seed)
    texts = texts + [texts[rng.randrange(len(texts))] for _ in range(n_copies)]
    rng.shuffle(texts)
    return texts


# ---- prose_corpus: documents that mostly pass the default filters (scale.py's default) ---------------------
# web_like_corpus keeps ~5% through the default filters: its windows are cut from every bundled corpus in
# proportion to length, so most of a mosaic is Python source, reStructuredText or ASCII tables, and spaCy
# counts each bracket, backtick and `=` as a word: 76% of 2,000 of its documents fail Gopher quality's 80%
# alphabetic-word ratio, and windows cut mid-sentence fail C4's line punctuation. prose_corpus is made of clean
# English sentences of the bundled texts: a sentence counts when its text is English (lid.176), it has 6-40
# words, starts with a capital, ends with . ! or ?, and every word is letters (an apostrophe or hyphen
# allowed) or digits, with at most a bracket or quote and one punctuation mark around it: 9,442 sentences,
# 146k words. An original is 2-4 paragraphs of 3-6 sentences drawn from the whole pool (none twice in a
# document), so two originals share a few sentences at most (no accidental near duplicates at any size, and
# the same make-up at every size). As in dedup.py, 40% of the unique documents are planted near duplicates
# (word edits at a rate from dedup_corpus.RATES; a word's trailing punctuation stays, so a paragraph still ends a
# sentence), then EXACT_FRACTION of all documents are exact copies; shuffled. 99.5% pass the filters.

CLEAN_WORD = re.compile(r"""^[("']?(?:[A-Za-z][A-Za-z'-]*|\d+)[)"']?[.,;:!?]?[)"']?$""")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
PARAGRAPH = re.compile(r"\n\s*\n")
WORD_CORE = re.compile(r"^(.*?)([^\w]*\s*)$", re.S)  # a token's word, and the punctuation and space after it


@functools.cache
def sentence_pool() -> tuple[list[str], list[str]]:
    """Clean English sentences of the bundled texts, and the lowercase words they use (the edit vocabulary)."""
    from curation.fasttext_model import load_fasttext
    from curation.steps.langid import lid_model_path
    from dedup_corpus import real_texts

    lid = load_fasttext(str(lid_model_path()))
    sentences = []
    for text in real_texts():
        labels, _ = lid.predict(text[:10_000].replace("\n", " "), k=1)
        if labels[0] != "__label__en":
            continue
        for paragraph in PARAGRAPH.split(text):
            for sentence in SENTENCE_END.split(" ".join(paragraph.split())):
                words = sentence.split()
                if (6 <= len(words) <= 40 and sentence[0].isupper() and sentence[-1] in ".!?"
                        and all(CLEAN_WORD.match(w) for w in words)):
                    sentences.append(sentence)
    sentences = sorted(set(sentences))
    vocab = sorted({w.strip("()\"'.,;:!?").lower() for s in sentences for w in s.split()} - {""})
    return sentences, vocab


def original(rng: random.Random, sentences: list[str]) -> str:
    """2-4 paragraphs of 3-6 sentences drawn from the pool, no sentence twice."""
    sizes = [rng.randint(3, 6) for _ in range(rng.randint(2, 4))]
    drawn = rng.sample(range(len(sentences)), sum(sizes))
    paragraphs, start = [], 0
    for size in sizes:
        paragraphs.append(" ".join(sentences[i] for i in drawn[start:start + size]))
        start += size
    return "\n\n".join(paragraphs)


def edit(text: str, rate: float, rng: random.Random, nrng, vocab: list[str]) -> str:
    """Deletes, substitutes or inserts a word at Binomial(n, rate) places (at least one), one third each; a
    deleted or substituted word leaves its punctuation behind, so a paragraph still ends a sentence."""
    from dedup_corpus import TOKEN

    tokens = TOKEN.findall(text)
    k = min(len(tokens), max(1, int(nrng.binomial(len(tokens), rate))))
    for pos in sorted(rng.sample(range(len(tokens)), k), reverse=True):
        op, word = rng.randrange(3), vocab[rng.randrange(len(vocab))]
        tail = WORD_CORE.match(tokens[pos]).group(2)
        if op == 0:
            del tokens[pos]
            if tail.strip() and pos > 0:
                tokens[pos - 1] = tokens[pos - 1].rstrip() + tail
        elif op == 1:
            tokens[pos] = word + tail
        else:
            tokens.insert(pos, word + " ")
    return "".join(tokens)


def prose_corpus(n_docs: int, seed: int, exact_fraction: float = EXACT_FRACTION) -> list[str]:
    """n_docs texts: originals, DUP_FRACTION of them planted near duplicates, then `exact_fraction` of the
    total exact copies of others; shuffled. Normalized texts are unique before the exact copies."""
    import numpy as np

    from curation.steps.normalize import normalize_text
    from dedup_corpus import DUP_FRACTION, RATES

    sentences, vocab = sentence_pool()
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    n_copies = int(n_docs * exact_fraction)
    n_unique = n_docs - n_copies
    n_originals = n_unique - int(n_unique * DUP_FRACTION)
    texts: list[str] = []
    seen: set[str] = set()

    def add(text: str) -> None:
        text = normalize_text(text)
        if text and text not in seen:
            seen.add(text)
            texts.append(text)

    while len(texts) < n_originals:
        add(original(rng, sentences))
    while len(texts) < n_unique:
        add(edit(texts[rng.randrange(n_originals)], RATES[rng.randrange(len(RATES))], rng, nrng, vocab))
    texts += [texts[rng.randrange(len(texts))] for _ in range(n_copies)]
    rng.shuffle(texts)
    return texts


def write_jsonl_shards(texts: list[str], n_shards: int, out: Path) -> list[Path]:
    """Document i goes to shard i % n_shards as {"id": "doc-<i>", "text": ...}, in a fresh folder `out`."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    paths = [out / f"part-{s:05d}.jsonl.gz" for s in range(n_shards)]
    for s, path in enumerate(paths):
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as f:
            for i in range(s, len(texts), n_shards):
                f.write(json.dumps({"id": f"doc-{i:08d}", "text": texts[i]}, ensure_ascii=False) + "\n")
    return paths


def loom_workspace(ws: Path, shards_dir: Path, source_options: str, dedup: str, tokenizer: Path,
                   tables: str = "") -> Path:
    """A fresh workspace whose sources.toml has one jsonl.gz source over `shards_dir` (and `tables`, more
    top-level tables such as domains_table's)."""
    shutil.rmtree(ws, ignore_errors=True)
    ws.mkdir(parents=True)
    (ws / "sources.toml").write_text(f"""
[[source]]
name = "bench"
format = "jsonl.gz"
paths = ["{shards_dir}/*.jsonl.gz"]
id_field = "id"
{source_options}

[dedup]
{dedup}
{tables}""", encoding="utf-8")
    from base.workspace import Workspace

    target = Workspace(ws).tokenizer
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(tokenizer.read_bytes())
    return ws


def domains_table(k: int | None, sample: int | None = None) -> str:
    """sources.toml's [domains] table for --domains K (and its `sample`), or nothing without it."""
    if not k:
        return ""
    return f"[domains]\nk = {k}\n" + (f"sample = {sample}\n" if sample else "")


def domains_share(stages: dict[str, float], total: float) -> str:
    """The domains stage's seconds and share of the job's (its gap to the next stage's start: StageClock)."""
    seconds = stages.get("domains")
    if seconds is None:
        return "no domains stage ran"
    return f"domains stage {seconds:.1f}s of {total:.1f}s = {seconds / total:.1%} of the curate time"


def bench_tokenizer(texts: list[str], out: Path) -> Path:
    """Byte-level BPE, vocab 8,192, trained on the first 3,000 documents: the same file for every tool."""
    from curation.tokenizer import train_tokenizer

    train_tokenizer(texts[:3000], out)
    return out


class StageClock:
    """`curate`'s progress callback, which the job calls as each stage starts: a stage's time is the gap to
    the next stage's start. When the last stage has finished every shard, `publish` starts (the manifest and
    the generation, which `curate` builds after the stages). `on_stage(name)` runs first, so that it can read
    what the stage before left."""

    def __init__(self, on_stage=None):
        from curation.stages import STAGES

        self.on_stage = on_stage
        self.last = STAGES[-1].name
        self.starts: dict[str, float] = {}

    def _start(self, stage: str) -> None:
        if self.on_stage:
            self.on_stage(stage)
        self.starts[stage] = time.perf_counter()

    def __call__(self, stage: str, total: int):
        self._start(stage)
        done = 0

        def advance(n: int = 1) -> None:
            nonlocal done
            done += n
            if stage == self.last and done >= total and "publish" not in self.starts:
                self._start("publish")
        return advance

    def stages(self, end: float) -> dict[str, float]:
        names = list(self.starts)
        stamps = [self.starts[n] for n in names] + [end]
        return {name: stamps[i + 1] - stamps[i] for i, name in enumerate(names)}


def run_loom(ws: Path, workers: int, on_stage=None, on_start=None) -> dict:
    """The job as `loom curate` runs it, cluster start included: total seconds, cluster start-up, stages,
    and the source's funnel summary (docs_in, filtered, duplicate, kept, tokens ...; of several sources, their
    counts summed)."""
    from base.workspace import Workspace
    from curation.config import load_config
    from curation.job import plan_job
    from curation.run import curate, dask_client

    layout = Workspace(ws)
    begin = time.perf_counter()
    shards, ctx = plan_job(load_config(ws / "sources.toml"), layout, layout.tokenizer)
    with dask_client(workers=workers, on_start=on_start) as client:
        started = time.perf_counter()
        clock = StageClock(on_stage and (lambda stage: on_stage(client, stage)))
        summaries = curate(shards, ctx, client, clock)
        summary = summaries[0] if len(summaries) == 1 else summed(summaries)
        end = time.perf_counter()
        if on_stage:
            on_stage(client, "end")
    return {"total": end - begin, "cluster_start": started - begin, "stages": clock.stages(end), "summary": summary}


def summed(summaries: list[dict]) -> dict:
    """The counts of several sources' summaries added up."""
    return {k: sum(s[k] for s in summaries) for k, v in summaries[0].items() if isinstance(v, int)}


def machine_load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def add_run_arguments(parser: argparse.ArgumentParser, docs: int, shards: int, per: str = "") -> None:
    """The options every end-to-end benchmark takes; `per` says what --docs and --shards count ("at 1x")."""
    parser.add_argument("--docs", type=int, default=docs, help=f"documents{per}")
    parser.add_argument("--shards", type=int, default=shards, help=f"shards{per}")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder, removed after")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")


def add_domains_argument(parser: argparse.ArgumentParser, sample: int | None = None, why: str = "") -> None:
    """--domains K: the curated sources get `[domains] k = K` (and --domains-sample, default `sample`)."""
    parser.add_argument("--domains", type=int, metavar="K", help="curate with topic domains: [domains] k = K")
    parser.add_argument("--domains-sample", type=int, default=sample, metavar="N",
                        help=f"with --domains: [domains] sample = N (default: {sample or 'the stage default'}{why})")


@contextmanager
def bench_workdir(args: argparse.Namespace, name: str):
    """--workdir, or a temporary folder removed afterwards unless --keep."""
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"loom-bench-{name}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"workdir {workdir}; load average before: {machine_load()}", flush=True)
    try:
        yield workdir
    finally:
        if args.workdir is None and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
