"""The corpus bench/dedup.py (and the scale and curate benches) dedup: every bundled real document, mosaics of
windows cut from them, and planted near duplicates at known word edit rates (see bench/dedup.py's docstring)."""

import bisect
import gzip
import itertools
import json
import random
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RATES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.3, 0.6)  # word edit rates of planted near-duplicates
DUP_FRACTION = 0.4  # of the documents are planted near-duplicates of the others
MIN_PLANT_WORDS = 50  # near-duplicates are planted on originals at least this long
WINDOW_WORDS = (20, 120)  # length range of each window of a mosaic
TOKEN = re.compile(r"\S+\s*")  # a word with the whitespace after it, so that edits keep the layout


def real_texts() -> list[str]:
    from curation.config import load_sources
    from curation.samples import source_texts

    texts = []
    for source in load_sources(REPO / "examples" / "sources.toml"):
        texts.extend(t for t in source_texts(source) if t.strip())
    return texts


def edit(tokens: list[str], rate: float, rng: random.Random, nrng: np.random.Generator, vocab: list[str]) -> str:
    """Deletes, substitutes or inserts a word at Binomial(n, rate) places (at least one)."""
    tokens = list(tokens)
    n = len(tokens)
    k = min(n, max(1, int(nrng.binomial(n, rate))))
    for pos in sorted(rng.sample(range(n), k), reverse=True):
        op = rng.randrange(3)
        word = vocab[rng.randrange(len(vocab))]
        if op == 0:
            del tokens[pos]
        elif op == 1:
            tokens[pos] = word + tokens[pos][len(tokens[pos].rstrip()):]
        else:
            tokens.insert(pos, word + " ")
    return "".join(tokens)


def build_corpus(n_docs: int, seed: int, real_first: bool = True):
    """Returns (texts, planted): unique normalized texts, and (original index, copy index, rate) triples.
    Without `real_first` every original is a mosaic, so that corpora of any size have the same make-up."""
    from curation.steps.normalize import document_id, normalize_text

    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    bases = [TOKEN.findall(t) for t in real_texts()]
    vocab = sorted({w.strip() for b in bases for w in b})
    cumulative = list(itertools.accumulate(len(b) for b in bases))
    texts: list[str] = []
    seen: set[str] = set()

    def add(text: str) -> int | None:
        text = normalize_text(text)
        key = document_id(text)
        if not text or key in seen:
            return None
        seen.add(key)
        texts.append(text)
        return len(texts) - 1

    n_originals = n_docs - int(n_docs * DUP_FRACTION)
    for tokens in bases[:n_originals] if real_first else []:
        add("".join(tokens))
    while len(texts) < n_originals:
        windows = []
        for _ in range(rng.choice((1, 2, 2, 3, 3))):
            base = bases[bisect.bisect_right(cumulative, rng.randrange(cumulative[-1]))]  # by length
            length = rng.randint(*WINDOW_WORDS)
            start = rng.randrange(max(1, len(base) - length + 1))
            windows.append("".join(base[start:start + length]).strip())
        add("\n\n".join(windows))
    plantable = [i for i, t in enumerate(texts) if len(TOKEN.findall(t)) >= MIN_PLANT_WORDS]
    planted = []
    while len(texts) < n_docs:
        original, rate = plantable[rng.randrange(len(plantable))], RATES[rng.randrange(len(RATES))]
        copy = add(edit(TOKEN.findall(texts[original]), rate, rng, nrng, vocab))
        if copy is not None:
            planted.append((original, copy, rate))
    return texts, planted


def write_shards(texts: list[str], n_shards: int, seed: int, out: Path):
    """Shuffled into `n_shards` jsonl.gz files. Returns ids (doc index -> jsonl id) and, per shard, the doc
    index of each line."""
    order = list(range(len(texts)))
    random.Random(seed + 1).shuffle(order)
    ids = [f"doc-{i:07d}" for i in range(len(texts))]
    lines = [order[s::n_shards] for s in range(n_shards)]
    out.mkdir(parents=True, exist_ok=True)
    for s, members in enumerate(lines):
        with gzip.open(out / f"part-{s:05d}.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as f:
            for i in members:
                f.write(json_line(ids[i], texts[i]))
    return ids, lines


def json_line(doc_id: str, text: str) -> str:
    return json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n"


def record_offsets(ids: list[str], texts: list[str], lines: list[list[int]]) -> list[dict[int, int]]:
    """Per shard, each line's `record` in Loom's funnel (its byte offset in the uncompressed file) -> doc index."""
    shards = []
    for members in lines:
        offset, by_record = 0, {}
        for i in members:
            by_record[offset] = i
            offset += len(json_line(ids[i], texts[i]).encode("utf-8"))
        shards.append(by_record)
    return shards
