"""Texts of a source or a file, read the way curation reads them (HTML extracted, normalized), for training
the tokenizer and the quality classifier."""

from itertools import islice
from pathlib import Path
from typing import Iterator

from base.errors import UserError, did_you_mean
from base.store import as_path
from curation.config import CurationConfig, SourceConfig
from curation.document import Doc
from curation.readers import READERS, format_of_file, read_shard, source_shards
from curation.steps import reading_steps

class _Discard:
    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        pass


def source_texts(source: SourceConfig, limit: int | None = None) -> Iterator[str]:
    """The first `limit` readable documents of a source, in shard order."""
    steps = reading_steps(source)

    def texts():
        for shard, span in source_shards(source):
            docs: Iterator = (Doc(record=r.index, text=r.text, meta=r.meta) for r in read_shard(source, as_path(shard), span) if r.problem is None)
            for step in steps:
                docs = step.run(docs, _Discard())
            yield from (doc.text for doc in docs)

    return islice(texts(), limit)


def file_source(path: Path, text_field: str = "text", source_names=()) -> SourceConfig:
    """A file given on the command line instead of a source name, read as the format its name says
    (curation.readers.format_of_file): JSON lines or Parquet whose records hold their text in `text_field`, or a
    WARC/WET file (.warc, .warc.gz, .warc.wet.gz). A name that is neither is told the source it may mean."""
    fmt = format_of_file(path)
    if fmt is None or not path.is_file():
        endings = ", ".join(f.file_suffixes[0] for f in READERS.values() if f.file_suffixes)
        raise UserError(f"'{path}'{did_you_mean(str(path), source_names)} is neither a source in sources.toml nor a "
                        f"file of a format Loom reads ({endings}) whose records have a `{text_field}` field")
    return SourceConfig(name="file", format=fmt, paths=(str(path.resolve()),), text_field=text_field)


def named_sources(names: list[str], sources: list[SourceConfig], text_field: str = "text") -> list[SourceConfig]:
    """Each name as a declared source, or else as a file path (whose records hold their text in `text_field`)."""
    declared = {s.name: s for s in sources}
    return [declared[name] if name in declared else file_source(Path(name), text_field, declared) for name in names]


def first_without_text_field(source: SourceConfig):
    """The first record of a source that lacks its text field (its `meta["fields"]` names those it has), or None."""
    for shard, span in source_shards(source):
        for record in read_shard(source, as_path(shard), span):
            if record.problem == "missing_text_field":
                return record
    return None


def check_text_field(name: str, source: SourceConfig) -> None:
    """For a source or file that gave no text: a UserError when its records lack the text field, naming the field,
    the fields the first such record has, and the setting that picks the field."""
    record = first_without_text_field(source)
    if record is None:
        return
    fields = ", ".join(record.meta.get("fields", [])) or "none"
    if source.name == name:
        what, fix = f"source '{name}'", f"set text_field for source '{name}' in sources.toml"
    else:
        what, fix = name, "name the field that holds the text with --text-field FIELD"
    raise UserError(f"{what}: no record has text in field '{source.text_field}' (the first record's fields: "
                    f"{fields}); {fix}")


def quality_examples(config: CurationConfig, positive: list[str] | None, negative: list[str] | None,
                     max_per_class: int, text_field: str = "text", progress=None
                     ) -> tuple[dict[str, list[str]], dict[str, dict[str, int]]]:
    """The texts of each class for the quality classifier ({"positive": [...], "negative": [...]}), from the
    named sources or files (default: the [quality] table; a file's text in `text_field`), and how many came from
    each name. `progress(side, total)` gives a callable advanced once per text read (the total is unknown)."""
    positive = positive or list(config.quality.positive)
    negative = negative or list(config.quality.negative)
    if not positive or not negative:
        raise UserError("name the training sources: --positive SRC[,SRC] and --negative SRC[,SRC], "
                        "or `positive`/`negative` in the [quality] table of sources.toml")
    if set(positive) & set(negative):
        raise UserError(f"'{sorted(set(positive) & set(negative))[0]}' is both positive and negative; "
                        "a training set needs two distinct classes")
    texts: dict[str, list[str]] = {}
    counts: dict[str, dict[str, int]] = {}
    for side, names in (("positive", positive), ("negative", negative)):
        texts[side], counts[side] = [], {}
        advance = progress(side, None) if progress else (lambda n=1: None)
        for name, source in zip(names, named_sources(names, config.sources, text_field)):
            sample = []
            for text in source_texts(source, max_per_class):
                sample.append(text)
                advance(1)
            if not sample:
                check_text_field(name, source)
            counts[side][name] = len(sample)
            texts[side] += sample
    return texts, counts
