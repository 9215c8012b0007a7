"""Benchmark leakage, as pure functions: the n-grams of a text's words, a Bloom filter of an eval set's n-grams, and
how much of a document those cover (`overlap`). The `decontaminate` stage (curation/stages/decontaminate.py)
builds one filter per eval set, so that a removal names the set the document overlaps, and runs `overlap` on every
document still in.

Words are runs of letters and digits (`\\w+`), lowercased: punctuation, spacing and case differences between a
benchmark's copy and a web page's do not hide a match. An n-gram is n consecutive words joined by a space, hashed
to 128 bits with xxh3 (deterministic in every process, unlike Python's salted `hash`), the hash then being what
the filter stores: each n-gram is hashed once however many filters are asked about it.

A document is judged by its paragraphs of at least `min_words` words (or as a whole, `scope = "document"`): its
overlap with a set is the fraction of its most covered paragraph's n-grams that are in the set. A paragraph is a
block of text between blank lines, and also each single line of at least `min_words` words. Blocks, because the
bundled docs, the Debian reference and many plain-text benchmarks are hard-wrapped at ~76 columns, and a line of
~12 words has only 5 8-grams, most of which one edited word removes; long lines too, because HTML extraction
writes a paragraph per line with no blank line between, and a leaked paragraph must not be measured against the
whole page. A hard-wrapped line is shorter than `min_words`, so it is judged only within its block."""

import re
from dataclasses import dataclass

import numpy as np
import xxhash
from rbloom import Bloom

from base.errors import UserError
from base.small_files import read_records
from curation.decontamination_config import DecontaminationConfig, EvalSetConfig
from curation.readers.inputs import eval_set_files
from curation.steps.normalize import normalize_text

WORD = re.compile(r"\w+")
PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")  # a blank line, possibly holding spaces
LINE_BREAK = re.compile(r"\n")
SPAN_CHARS = 200
SIGNED = 1 << 127


@dataclass(frozen=True)
class Overlap:
    """How much of a text one eval set covers: in its most covered paragraph (or the whole document)."""

    fraction: float  # matched / ngrams; 0.0 for a text without a judged n-gram
    matched: int  # n-grams found in the set's filter
    ngrams: int  # n-grams judged
    span: str  # at most SPAN_CHARS of the text where the matched n-grams are densest; "" when none matched


NO_OVERLAP = Overlap(0.0, 0, 0, "")


def words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """The lowercased words of a text and where each is in it (start, end)."""
    found = list(WORD.finditer(text))
    return [m.group().lower() for m in found], [m.span() for m in found]


def ngram_hash(ngram: str) -> int:
    """xxh3-128 of an n-gram as a signed int in [-2**127, 2**127): what rbloom's `hash_func` must return."""
    value = xxhash.xxh3_128_intdigest(ngram.encode("utf-8"))
    return value - (SIGNED << 1) if value >= SIGNED else value


def ngram_hashes(tokens: list[str], n: int) -> list[int]:
    """The hash of every n consecutive words, in order (none for fewer than n words)."""
    return [ngram_hash(" ".join(tokens[i:i + n])) for i in range(len(tokens) - n + 1)]


def prehashed(value: int) -> int:
    """The filters' hash_func: they are handed hashes (ngram_hash), not n-grams."""
    return value


def eval_texts(e: EvalSetConfig) -> list[str]:
    """The texts of an eval set's records, normalized as curation stores documents."""
    texts = []
    for file in eval_set_files(e):
        records = read_records(file, e.text)
        missing = next((i for i, r in enumerate(records) if not isinstance(r.get(e.text), str)), None)
        if missing is not None:
            raise UserError(f"eval set '{e.name}': record {missing + 1} of {file} has no text field '{e.text}'; fix "
                            "`text` in [[decontaminate.eval]] (the field that holds each record's text)")
        texts += [normalize_text(r[e.text]) for r in records]
    if not any(text.strip() for text in texts):
        raise UserError(f"eval set '{e.name}' has no text in {', '.join(e.paths)}; give it records with text in "
                        f"field '{e.text}'")
    return texts


def new_filter(capacity: int, false_positive_rate: float) -> Bloom:
    return Bloom(max(1, capacity), false_positive_rate, hash_func=prehashed)


def eval_filter(texts: list[str], n: int, false_positive_rate: float) -> tuple[Bloom, int]:
    """A Bloom filter of every n-gram of an eval set's texts, sized for their count; and that count (its
    capacity: n-grams repeated within the set are counted twice, so the filter is if anything larger)."""
    hashes = [ngram_hashes(words(text)[0], n) for text in texts]
    capacity = sum(map(len, hashes))
    bloom = new_filter(capacity, false_positive_rate)
    for text_hashes in hashes:
        bloom.update(text_hashes)
    return bloom, capacity


def load_filter(data: bytes) -> Bloom:
    return Bloom.load_bytes(data, prehashed)


def ranges_between(spans: list[tuple[int, int]], text: str, separator: re.Pattern) -> list[tuple[int, int]]:
    """[first word, end word) of each piece of `text` between matches of `separator`, by its words' positions
    `spans`."""
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    breaks = [m.start() for m in separator.finditer(text)]
    cuts = np.searchsorted(starts, breaks).tolist() if breaks else []
    bounds = [0, *cuts, len(spans)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


@dataclass(frozen=True)
class Prepared:
    """A text made ready for every filter: its n-gram hashes and the ranges of n-grams each unit judged."""

    text: str
    spans: list[tuple[int, int]]
    hashes: list[int]
    units: list[tuple[int, int]]  # [first n-gram, end n-gram) of each paragraph (or of the whole document)


def prepare(text: str, config: DecontaminationConfig) -> Prepared:
    """A text's n-gram hashes and its units: each paragraph (block or long line) of at least `min_words` words
    (its n-grams wholly inside it), or the whole document when the scope is "document" and it has that many words."""
    tokens, spans = words(text)
    n = config.ngram
    hashes = ngram_hashes(tokens, n)
    if config.scope == "document":
        ranges = [(0, len(tokens))]
    else:
        blocks = ranges_between(spans, text, PARAGRAPH_BREAK)
        lines = [r for r in ranges_between(spans, text, LINE_BREAK) if r not in blocks]
        ranges = blocks + lines
    units = [(a, b - n + 1) for a, b in ranges if b - a >= config.min_words]
    return Prepared(text, spans, hashes, units)


def overlap(text: str, bloom: Bloom, config: DecontaminationConfig) -> Overlap:
    """How much of `text` the set whose filter is `bloom` covers (see the module's note on units)."""
    return prepared_overlap(prepare(text, config), bloom, config.ngram)


def prepared_overlap(prepared: Prepared, bloom: Bloom, n: int) -> Overlap:
    """The most covered unit's fraction of n-grams in `bloom` (ties: the first unit), with a span of it."""
    if not prepared.units:
        return NO_OVERLAP
    hits = np.fromiter((h in bloom for h in prepared.hashes), dtype=np.int64, count=len(prepared.hashes))
    counts = np.concatenate([[0], np.cumsum(hits)])
    best, best_fraction = None, -1.0
    for a, b in prepared.units:
        fraction = (counts[b] - counts[a]) / (b - a)
        if fraction > best_fraction:
            best, best_fraction = (a, b), fraction
    a, b = best
    matched = int(counts[b] - counts[a])
    span = densest_span(prepared, counts, a, b, n) if matched else ""
    return Overlap(float(best_fraction), matched, b - a, span)


def densest_span(prepared: Prepared, counts: np.ndarray, a: int, b: int, n: int) -> str:
    """At most SPAN_CHARS of the text, from the start of the window of n-grams in [a, b) that holds the most
    matches; the window is as many n-grams as fit in SPAN_CHARS at the unit's mean word length."""
    spans = prepared.spans
    mean_chars = (spans[b + n - 2][1] - spans[a][0]) / (b + n - 1 - a)
    window = max(1, min(b - a, int(SPAN_CHARS / max(mean_chars, 1.0)) - n + 1))
    starts = np.arange(a, b - window + 1)
    in_window = counts[starts + window] - counts[starts]
    first = int(starts[int(np.argmax(in_window))])
    while first < b and counts[first + 1] == counts[first]:  # begin at the window's first matched n-gram
        first += 1
    start = spans[first][0]
    end = spans[min(first + window + n - 2, len(spans) - 1)][1]
    return shorten(prepared.text[start:end], SPAN_CHARS)


def shorten(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a space when there is one in its second half."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit + 1)
    return text[:cut if cut > 0 else limit]
