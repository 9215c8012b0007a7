"""Gopher's repetition and quality rules (datatrove's GopherRepetitionFilter and GopherQualityFilter) computed from
words the caller shares, with exactly datatrove's verdict and reason for every text, and with a removal the detail of what it measured
(curation.steps.filter_details).

Each takes its thresholds from a datatrove filter instance, so every option a user may set means what it means to
datatrove. Where datatrove joins every n-gram of a text into a string, these hash every n-gram at once (numpy,
a polynomial hash of its characters) and join only the n-grams whose hash occurs twice: equal strings have equal
hashes, so no repeat is missed, and every count and length comes from the joined strings themselves."""

import re
from collections import Counter

import numpy as np
from datatrove.pipeline.filters.gopher_repetition_filter import find_all_duplicate, find_top_duplicate, get_n_grams
from datatrove.utils.text import PUNCTUATION_SET

from curation.steps.measures import EMPTY, measured

SMALL = 64  # below this many words datatrove's own loops are as quick as numpy's set-up
_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile("\n+")
_BASE = 0x9E3779B97F4A7C15  # odd, so it has an inverse modulo 2**64
_INVERSE = pow(_BASE, -1, 2**64)


def duplicates(parts: list[str]) -> tuple[int, int]:
    """datatrove's find_duplicates: how many parts repeat an earlier one, and their characters."""
    distinct = set(parts)
    return len(parts) - len(distinct), sum(map(len, parts)) - sum(map(len, distinct))


class GopherRepetition:
    """datatrove's GopherRepetitionFilter.filter(doc) as `judge(text, words)`; `words` are the text's words."""

    def __init__(self, reference):
        self.reference = reference

    @staticmethod
    def covers(reference) -> bool:
        return all(n >= 1 for n, _ in (*reference.top_n_grams, *reference.dup_n_grams))

    def judge(self, text: str, words: list[str]) -> bool | tuple[bool, str, str]:
        ref = self.reference
        if not text:
            return False, "empty", EMPTY
        paragraphs = _PARAGRAPHS.split(text.strip())
        repeats, chars = duplicates(paragraphs)
        for rule, value in (("dup_para_frac", repeats / len(paragraphs)), ("dup_para_char_frac", chars / len(text))):
            if getattr(ref, rule) and value > getattr(ref, rule):
                return False, rule, measured(rule, value, ">", getattr(ref, rule))
        lines = _LINES.split(text)
        repeats, chars = duplicates(lines)
        for rule, value in (("dup_line_frac", repeats / len(lines)), ("dup_line_char_frac", chars / len(text))):
            if getattr(ref, rule) and value > getattr(ref, rule):
                return False, rule, measured(rule, value, ">", getattr(ref, rule))
        grams = NGrams(words)
        for n, n_frac in ref.top_n_grams:
            if len(words) >= n and (value := grams.top_chars(n) / len(text)) > n_frac:
                return False, f"top_{n}_gram", measured(f"top_{n}_gram", value, ">", n_frac)
        for n, n_frac in ref.dup_n_grams:
            if (value := grams.repeated_chars(n) / len(text)) > n_frac:
                return False, f"duplicated_{n}_n_grams", measured(f"duplicated_{n}_n_grams", value, ">", n_frac)
        return True


class NGrams:
    """datatrove's n-gram statistics of one text's words: `top_chars(n)` is find_top_duplicate of the n-grams
    joined by spaces, `repeated_chars(n)` is find_all_duplicate of them joined by nothing.

    Both count equal n-grams. Each n-gram gets the number of its sequence of words (numpy); two n-grams joined
    by spaces are equal strings exactly when their words are equal, words having no space. Joined by nothing,
    different words can make the same string ("ab c", "a bc"): the word numbers serve only where the n-grams'
    hashes (of their characters) part them as the numbers do; equal strings have equal hashes, so then equal
    strings have equal numbers. Otherwise, and for a few words, datatrove's own functions count."""

    def __init__(self, words: list[str]):
        self.words = words
        self.small = len(words) < SMALL
        if self.small:
            return
        self.packed = "".join(words)
        self.spaceless = " " not in self.packed
        numbers = dict.fromkeys(words)
        for number, word in enumerate(numbers):
            numbers[word] = number
        self.sequences = {1: np.fromiter(map(numbers.__getitem__, words), dtype=np.int64, count=len(words))}
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        self.offsets = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.hashes = _SubstringHashes(self.packed)

    def _numbers(self, n: int) -> np.ndarray:
        """For each n-gram (by its first word), the number of its sequence of words; equal only for equal words."""
        if n not in self.sequences:
            shorter, last_words = self._numbers(n - 1)[:-1], self.sequences[1][n - 1:]
            pairs = shorter * (len(self.words) + 1) + last_words
            self.sequences[n] = np.unique(pairs, return_inverse=True)[1].reshape(-1)
        return self.sequences[n]

    def top_chars(self, n: int) -> int:
        if self.small or not self.spaceless:
            return find_top_duplicate(get_n_grams(self.words, n))
        numbers = self._numbers(n)
        counts = np.bincount(numbers)[numbers]
        top = int(counts.max())
        first = int(np.argmax(counts == top))  # the first seen among the most frequent, as Counter.most_common
        return (int(self.offsets[first + n] - self.offsets[first]) + n - 1) * top

    def repeated_chars(self, n: int) -> int:
        if self.small or len(self.words) < n:
            return find_all_duplicate(self.words, n)
        numbers = self._numbers(n)
        begins = self.offsets[: len(numbers)]
        hashes = self.hashes.of(begins, self.offsets[n:])
        if len(np.unique(hashes)) != int(numbers.max()) + 1:
            return find_all_duplicate(self.words, n)
        repeated_at = np.flatnonzero(np.bincount(numbers)[numbers] > 1).tolist()
        numbers, offsets = numbers.tolist(), self.offsets
        seen, skip_until, repeated = set(), 0, 0
        for p in repeated_at:
            if p < skip_until:  # inside the n-gram last found repeated: datatrove's walk jumps over it
                continue
            if numbers[p] in seen:
                repeated += int(offsets[p + n] - offsets[p])
                skip_until = p + n
            else:
                seen.add(numbers[p])
        return repeated


class _SubstringHashes:
    """A polynomial hash (modulo 2**64) of any substring of a text, from prefix sums over its characters."""

    def __init__(self, text: str):
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        self.powers = np.empty(len(codes) + 1, dtype=np.uint64)
        self.powers[0] = 1
        np.cumprod(np.full(len(codes), _BASE, dtype=np.uint64), out=self.powers[1:])
        inverse_powers = np.empty(len(codes), dtype=np.uint64)
        inverse_powers[:1] = 1
        np.cumprod(np.full(max(len(codes) - 1, 0), _INVERSE, dtype=np.uint64), out=inverse_powers[1:])
        self.prefix = np.zeros(len(codes) + 1, dtype=np.uint64)
        np.cumsum(codes * inverse_powers, out=self.prefix[1:])

    def of(self, begins: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The hash of each text[begin:end], its length added: the same for the same characters anywhere."""
        return (self.prefix[ends] - self.prefix[begins]) * self.powers[begins] + (ends - begins).astype(np.uint64)


class GopherQuality:
    """datatrove's GopherQualityFilter.filter(doc) as `judge(text, words)`; `words` are the text's words."""

    def __init__(self, reference):
        self.reference = reference

    @staticmethod
    def covers(reference) -> bool:
        return True

    def judge(self, text: str, words: list[str]) -> bool | tuple[bool, str, str]:
        ref = self.reference
        counts = Counter(words)
        n_words = len(words)
        kinds = {word: word_kind(word) for word in counts}
        n_non_symbol = sum(counts[w] for w, (non_symbol, _) in kinds.items() if non_symbol)
        if ref.min_doc_words and n_non_symbol < ref.min_doc_words:
            return False, "gopher_short_doc", measured("words", n_non_symbol, "<", ref.min_doc_words)
        if ref.max_doc_words and n_non_symbol > ref.max_doc_words:
            return False, "gopher_long_doc", measured("words", n_non_symbol, ">", ref.max_doc_words)
        # np.mean of word lengths: the float sum of small integers is exact, so this is the same quotient
        average = (sum(len(w) * counts[w] for w, (non_symbol, _) in kinds.items() if non_symbol) / n_non_symbol
                   if n_non_symbol else float(np.mean([])))
        if ref.min_avg_word_length and average < ref.min_avg_word_length:
            return False, "gopher_below_avg_threshold", measured("avg_word_length", average, "<", ref.min_avg_word_length)
        if ref.max_avg_word_length and average > ref.max_avg_word_length:
            return False, "gopher_above_avg_threshold", measured("avg_word_length", average, ">", ref.max_avg_word_length)
        if ref.max_symbol_word_ratio and (value := text.count("#") / n_words) > ref.max_symbol_word_ratio:
            return False, "gopher_too_many_hashes", measured("hashes_per_word", value, ">", ref.max_symbol_word_ratio)
        if ref.max_symbol_word_ratio and (
            (value := (text.count("...") + text.count("…")) / n_words) > ref.max_symbol_word_ratio
        ):
            return False, "gopher_too_many_ellipsis", measured("ellipses_per_word", value, ">", ref.max_symbol_word_ratio)
        lines = text.splitlines()
        if ref.max_bullet_lines_ratio and (
            (value := sum(1 for line in lines if line.lstrip().startswith(("•", "-"))) / len(lines))
            > ref.max_bullet_lines_ratio
        ):
            return False, "gopher_too_many_bullets", measured("bullet_lines", value, ">", ref.max_bullet_lines_ratio)
        if ref.max_ellipsis_lines_ratio and (
            (value := sum(1 for line in lines if line.rstrip().endswith(("...", "…"))) / len(lines))
            > ref.max_ellipsis_lines_ratio
        ):
            return False, "gopher_too_many_end_ellipsis", measured("ellipsis_lines", value, ">",
                                                                   ref.max_ellipsis_lines_ratio)
        n_alpha = sum(counts[w] for w, (_, alpha) in kinds.items() if alpha)
        if ref.max_non_alpha_words_ratio and n_alpha / n_words < ref.max_non_alpha_words_ratio:
            return False, "gopher_below_alpha_threshold", measured("alpha_words", n_alpha / n_words, "<",
                                                                   ref.max_non_alpha_words_ratio)
        if ref.min_stop_words and (stop := len(ref.stop_words.intersection(counts))) < ref.min_stop_words:
            return False, "gopher_enough_stop_words", measured("stop_words", stop, "<", ref.min_stop_words)
        return True


_KINDS: dict[str, tuple[bool, bool]] = {}


def word_kind(word: str) -> tuple[bool, bool]:
    """Whether a word has a character that is not punctuation, and one that is a letter (memoized)."""
    kind = _KINDS.get(word)
    if kind is None:
        if len(_KINDS) > 500_000:
            _KINDS.clear()
        kind = _KINDS[word] = (any(ch not in PUNCTUATION_SET for ch in word), any(ch.isalpha() for ch in word))
    return kind
