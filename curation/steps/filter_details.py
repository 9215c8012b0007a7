"""A filter removal's `detail`: the value the filter measured against the threshold it crossed (`words 31 < 50`,
`alpha_words 0.61 < 0.8`, `top_2_gram 0.31 > 0.2`), or for a rule that drops a whole document on one line, that
line's start. Loom's own Gopher and C4 rules return it with their verdict (curation.steps.measures); where a
datatrove class judges (FineWeb always; Gopher and C4 with an option Loom's rules do not cover) `removal_detail`
computes it from the text that class judged, for the reason it gave, as datatrove computes it: it never judges
again."""

import re

from datatrove.pipeline.filters.gopher_repetition_filter import (find_all_duplicate, find_duplicates,
                                                                 find_top_duplicate, get_n_grams)
from datatrove.utils.text import PUNCTUATION_SET, split_into_sentences, split_into_words

from curation.steps.c4 import c4_lines
from curation.steps.measures import EMPTY, measured


def gopher_repetition_detail(ref, text: str, reason: str) -> str:
    """datatrove's GopherRepetitionFilter's measure for `reason`."""
    if reason == "empty":
        return EMPTY
    if reason.startswith("dup_para"):
        paragraphs = re.compile(r"\n{2,}").split(text.strip())
        repeats, chars = find_duplicates(paragraphs)
        value = repeats / len(paragraphs) if reason == "dup_para_frac" else chars / len(text)
        return measured(reason, value, ">", getattr(ref, reason))
    if reason.startswith("dup_line"):
        lines = re.compile("\n+").split(text)
        repeats, chars = find_duplicates(lines)
        value = repeats / len(lines) if reason == "dup_line_frac" else chars / len(text)
        return measured(reason, value, ">", getattr(ref, reason))
    words = split_into_words(text, ref.language)
    n = int(reason.split("_")[1])
    if reason.startswith("top_"):
        chars, threshold = find_top_duplicate(get_n_grams(words, n)), dict(ref.top_n_grams)[n]
    else:
        chars, threshold = find_all_duplicate(words, n), dict(ref.dup_n_grams)[n]
    return measured(reason, chars / len(text), ">", threshold)


def gopher_quality_detail(ref, text: str, reason: str) -> str:
    """datatrove's GopherQualityFilter's measure for `reason`."""
    words = split_into_words(text, ref.language)
    non_symbol = [w for w in words if any(ch not in PUNCTUATION_SET for ch in w)]
    lines = text.splitlines()
    rule = reason.removeprefix("gopher_")
    if rule == "short_doc":
        return measured("words", len(non_symbol), "<", ref.min_doc_words)
    if rule == "long_doc":
        return measured("words", len(non_symbol), ">", ref.max_doc_words)
    average = sum(map(len, non_symbol)) / len(non_symbol) if non_symbol else float("nan")
    if rule == "below_avg_threshold":
        return measured("avg_word_length", average, "<", ref.min_avg_word_length)
    if rule == "above_avg_threshold":
        return measured("avg_word_length", average, ">", ref.max_avg_word_length)
    if rule == "too_many_hashes":
        return measured("hashes_per_word", text.count("#") / len(words), ">", ref.max_symbol_word_ratio)
    if rule == "too_many_ellipsis":
        return measured("ellipses_per_word", (text.count("...") + text.count("…")) / len(words), ">",
                        ref.max_symbol_word_ratio)
    if rule == "too_many_bullets":
        bullets = sum(line.lstrip().startswith(("•", "-")) for line in lines)
        return measured("bullet_lines", bullets / len(lines), ">", ref.max_bullet_lines_ratio)
    if rule == "too_many_end_ellipsis":
        ending = sum(line.rstrip().endswith(("...", "…")) for line in lines)
        return measured("ellipsis_lines", ending / len(lines), ">", ref.max_ellipsis_lines_ratio)
    if rule == "below_alpha_threshold":
        alpha = sum(any(ch.isalpha() for ch in w) for w in words)
        return measured("alpha_words", alpha / len(words), "<", ref.max_non_alpha_words_ratio)
    return measured("stop_words", len(ref.stop_words.intersection(words)), "<", ref.min_stop_words)


def c4_detail(ref, text: str, reason: str) -> str:
    """datatrove's C4QualityFilter's measure for `reason`: Loom's C4 rules walk the lines (or, without
    split_paragraph, the sentences) as datatrove's do, counting sentences as datatrove does."""
    units = text.splitlines() if ref.split_paragraph else split_into_sentences(text, ref.language)
    count = (lambda line: len(split_into_sentences(line, ref.language))) if ref.split_paragraph else (lambda line: 1)
    verdict = c4_lines(ref, units, count)
    return verdict[2] if isinstance(verdict, tuple) else ""


def fineweb_detail(ref, text: str, reason: str) -> str:
    """datatrove's FineWebQualityFilter's measure for `reason`."""
    lines = [line for line in text.split("\n") if line.strip() != ""]
    if reason == "empty" or not lines:
        return EMPTY
    if reason == "line_punct_ratio":
        ending = sum(1 for line in lines if line.endswith(ref.stop_chars))
        return measured("punct_lines", ending / len(lines), "<", ref.line_punct_thr)
    if reason == "short_line_ratio":
        short = sum(1 for line in lines if len(line) <= ref.short_line_length)
        return measured("short_lines", short / len(lines), ">", ref.short_line_threshold)
    if reason == "char_dup_ratio":
        return measured("dup_line_chars", find_duplicates(lines)[1] / len(text.replace("\n", "")), ">",
                        ref.char_duplicates_ratio)
    words = split_into_words(text, ref.language)
    return measured("newlines_per_word", text.count("\n") / len(words), ">", ref.new_line_ratio)


DETAILS = {  # datatrove's class name -> the detail of one of its removals
    "GopherRepetitionFilter": gopher_repetition_detail,
    "GopherQualityFilter": gopher_quality_detail,
    "C4QualityFilter": c4_detail,
    "FineWebQualityFilter": fineweb_detail,
}


def removal_detail(datatrove_filter, text: str, reason: str) -> str:
    """The detail of a removal by one of datatrove's filter classes (an instance of it), from the text it judged."""
    detail = DETAILS.get(type(datatrove_filter).__name__)
    return detail(datatrove_filter, text, reason) if detail else ""
