"""Texts of a source or a file, read the way curation reads them (HTML extracted, normalized), for training
the tokenizer and the quality classifier."""

from itertools import islice
from pathlib import Path
from typing import Iterator

from curation.config import SourceConfig
from curation.errors import UserError
from curation.readers import check_readable, read_shard
from curation.steps import Doc, ExtractHtml, Normalize

FILE_SUFFIXES = {".jsonl": "jsonl", ".gz": "jsonl.gz", ".zst": "jsonl.zst", ".parquet": "parquet"}


class _Discard:
    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        pass


def source_texts(source: SourceConfig, limit: int | None = None) -> Iterator[str]:
    """The first `limit` readable documents of a source, in shard order."""
    steps = ([ExtractHtml()] if source.format == "html-dir" else []) + [Normalize()]

    def texts():
        for shard in source.shard_paths():
            check_readable(source, shard)
            docs: Iterator = (Doc(record=r.index, text=r.text) for r in read_shard(source, shard) if r.problem is None)
            for step in steps:
                docs = step.run(docs, _Discard())
            yield from (doc.text for doc in docs)

    return islice(texts(), limit)


def file_source(path: Path) -> SourceConfig:
    """A file given on the command line instead of a source name: JSON lines or Parquet with a `text` field."""
    fmt = FILE_SUFFIXES.get(path.suffix)
    if fmt is None or not path.is_file():
        raise UserError(f"'{path}' is neither a source in sources.toml nor a .jsonl, .jsonl.gz, .jsonl.zst or "
                        ".parquet file with a `text` field")
    return SourceConfig(name="file", format=fmt, paths=(str(path.resolve()),))


def named_sources(names: list[str], sources: list[SourceConfig]) -> list[SourceConfig]:
    """Each name as a declared source, or else as a file path."""
    declared = {s.name: s for s in sources}
    return [declared[name] if name in declared else file_source(Path(name)) for name in names]
