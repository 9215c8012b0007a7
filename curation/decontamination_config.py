"""The `[decontaminate]` table of sources.toml: the eval sets whose text must not be trained on, and how overlap
is judged (curation/decontamination.py); every check, each a line naming the key and the fix."""

from dataclasses import dataclass, fields
from pathlib import Path

from base.errors import UserError, is_whole_number, reject_unknown_keys, string_list
from base.names import check_name


@dataclass(frozen=True)
class EvalSetConfig:
    """One `[[decontaminate.eval]]` entry: an evaluation set whose text must not be trained on."""

    name: str
    paths: tuple[str, ...]  # files or globs (.jsonl, .jsonl.gz, .parquet), relative to base_dir
    text: str = "text"  # the field that holds each record's text
    base_dir: str = "."


SCOPES = ("paragraph", "document")


@dataclass(frozen=True)
class DecontaminationConfig:
    """The `[decontaminate]` table: documents that hold text of an eval set are removed (fate `contaminated`)."""

    evals: tuple[EvalSetConfig, ...]
    ngram: int = 8  # words per n-gram, as Marin's decontamination
    # Of a paragraph's n-grams, the fraction in an eval set that makes the document contaminated. An 8-gram
    # survives ~5% of words edited with p = 0.95^8 = 0.66: measured on 3,000 Jargon File passages of 60-120 words
    # with 5% of words replaced, the fraction's median is 0.66 and its 1st percentile 0.52, so 0.5 flags 99.6% of
    # them (Marin's 0.7 would flag 36%), while no paragraph of >= 20 words in the bundled corpora reaches 0.09.
    threshold: float = 0.5
    scope: str = "paragraph"  # or "document": the fraction of all of a document's n-grams
    # Paragraphs (or documents) of fewer words are not judged: a title or a quoted line a set also holds is not
    # leakage (a 9-word fortune is an album title in a Jargon entry), and in a paragraph of one or two n-grams a
    # single Bloom false positive would be a fraction of 0.5 or more.
    min_words: int = 20
    false_positive_rate: float = 1e-4  # of each set's Bloom filter, sized for the set's count of n-grams


def parse_decontaminate(table, path: Path, base_dir: Path) -> DecontaminationConfig:
    where = f"{path}: [decontaminate]"
    if not isinstance(table, dict):
        raise UserError(f"{where} must be a table")
    reject_unknown_keys(table, {f.name for f in fields(DecontaminationConfig)} - {"evals"} | {"eval"}, where)
    entries = table.get("eval")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise UserError(f"{where}: no [[decontaminate.eval]] entries; give at least one eval set (name, paths)")
    evals = tuple(_parse_eval_set(entry, i, where, base_dir) for i, entry in enumerate(entries))
    names = [e.name for e in evals]
    if len(set(names)) < len(names):
        raise UserError(f"{where}: eval set '{next(n for n in names if names.count(n) > 1)}' is declared twice; "
                        "names must be unique")
    config = DecontaminationConfig(evals=evals, **{k: v for k, v in table.items() if k != "eval"})
    checks = [
        (is_whole_number(config.ngram) and 1 <= config.ngram <= 64,
         "`ngram` must be a whole number of words from 1 to 64 (default 8)"),
        (isinstance(config.threshold, (int, float)) and not isinstance(config.threshold, bool)
         and 0 < config.threshold <= 1, "`threshold` must be a number in (0, 1] (default 0.5)"),
        (config.scope in SCOPES, "`scope` must be \"paragraph\" or \"document\""),
        (is_whole_number(config.min_words) and is_whole_number(config.ngram) and config.min_words >= config.ngram,
         f"`min_words` must be a whole number, at least `ngram` ({config.ngram}) (default 20)"),
        (isinstance(config.false_positive_rate, float) and 0 < config.false_positive_rate < 0.5,
         "`false_positive_rate` must be a number in (0, 0.5) (default 1e-4)"),
    ]
    for ok, message in checks:
        if not ok:
            raise UserError(f"{where}: {message}")
    return config


def _parse_eval_set(entry: dict, index: int, where: str, base_dir: Path) -> EvalSetConfig:
    name = check_name("eval set", entry.get("name"), f"{where} eval #{index + 1}")
    where = f"{where} eval set '{name}'"
    reject_unknown_keys(entry, {"name", "paths", "text"}, where)
    paths = string_list(entry.get("paths", []), f"{where}: `paths`")
    if not paths:
        raise UserError(f"{where}: `paths` is missing or empty; give a list of .jsonl, .jsonl.gz or .parquet files "
                        "or globs")
    text = entry.get("text", "text")
    if not (isinstance(text, str) and text):
        raise UserError(f"{where}: `text` must be the name of the field that holds each record's text")
    return EvalSetConfig(name=name, paths=paths, text=text, base_dir=str(base_dir))
