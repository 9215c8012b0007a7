"""A curation job as planned before any compute: the input shards, and the context every stage reads."""

from dataclasses import dataclass
from pathlib import Path

from base.errors import UserError
from base.store import as_path, is_remote, path_text
from base.workspace import MODELS_DIR, TOKENIZER_FILE, Workspace, part_name
from curation.config import CurationConfig, SourceConfig
from curation.decontamination import eval_texts
from curation.quality import check_quality_model
from curation.readers import source_shards
from curation.readers.spans import ByteRange, FileGroup
from curation.steps import document_steps
from curation.steps.filters import options_only_words
from curation.tokenizer import load_tokenizer


@dataclass(frozen=True)
class Shard:
    source: SourceConfig
    index: int
    input: str
    rank: int  # the source's place in sources.toml; earlier sources keep the copy of an exact duplicate
    span: object = None  # the part of `input` it reads (curation.readers.spans); None: all of it
    limit: int | None = None  # read at most this many records (`loom curate --limit`); None: every record

    @property
    def key(self) -> str:
        return f"{self.source.name}/{part_name(self.index, None)}"


def input_bytes(shard: Shard) -> int | None:
    """About how much input the shard reads, from the plan and local stats: a byte range's length, a whole local
    file's size, a local folder's files' sizes; None where it would take requests to a store, or the plan does not
    say (row groups, the last range of a cut file)."""
    span = shard.span
    if isinstance(span, ByteRange):
        return None if span.end is None else span.end - span.start
    files = span.files if isinstance(span, FileGroup) else [shard.input] if span is None else []
    if not files or any(is_remote(f) or not Path(f).is_file() for f in files):
        return None
    return sum(Path(f).stat().st_size for f in files)


@dataclass(frozen=True)
class JobContext:
    workspace: Workspace
    config: CurationConfig
    tokenizer: str
    quality_model: str | None = None  # no model: no scores, no buckets
    removals: tuple[str, ...] = ()  # the removals tables of the global stages run so far (set by the runner)
    limit: int | None = None  # at most this many records per source (a sample), recorded in curation.json
    prepared_bytes: int | None = None  # the prepared parts' size, measured once by the runner after prepare
    worker_threads: int = 1  # the cluster's worker threads, counted by the runner: partitions enough to use them


def plan_shards(sources: list[SourceConfig], limit: int | None = None) -> list[Shard]:
    """Every input shard, checked to be readable before any compute is spent on it; a large input is cut into
    several, numbered in the order of their place in it, so that (rank, shard, record) orders records as one
    uncut shard would. With `limit`, a source's shards share its N records: each reads only its first ones."""
    shards = []
    for rank, source in enumerate(sources):
        inputs = source_shards(source)
        for index, (path, span) in enumerate(inputs):
            shards.append(Shard(source=source, index=index, input=path, rank=rank, span=span,
                                limit=None if limit is None else shard_limit(limit, index, len(inputs))))
    return shards


def check_limit(value) -> int | None:
    """A sample's size as given (`loom curate --limit N`'s text, or `limit=` from Python): a whole number of
    records per source, 1 or more; None curates every record."""
    if value is None:
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not text.isdigit() or int(text) < 1:
        raise UserError(f"limit {value!r}: give a whole number of records per source, 1 or more "
                        "(`loom curate --limit 1000`), or leave it out to curate every record")
    return int(text)


def shard_limit(limit: int, index: int, n_shards: int) -> int:
    """Shard `index`'s part of a source's `limit` records: an even split, the first shards taking the remainder
    (shards past the limit read nothing), so that the sample is the same on every run."""
    return limit // n_shards + (1 if index < limit % n_shards else 0)


def curation_tokenizer(option: Path | None, config: CurationConfig, sources_file: Path, ws: Workspace) -> Path:
    """The tokenizer a curation uses: --tokenizer, else sources.toml's `tokenizer`, else WORKSPACE/models/
    tokenizer.json. A `tokenizer` key naming no file is refused here, naming the key (plan_job checks the file)."""
    if option is not None:
        return option
    if config.tokenizer is None:
        return ws.tokenizer
    path = as_path(config.tokenizer)
    if not path.is_file():
        raise UserError(f"{sources_file}: `tokenizer` names no file ({path}); fix it, train one there with "
                        f"`loom tokenizer train`, or remove the key to use WORKSPACE/{MODELS_DIR}/{TOKENIZER_FILE}")
    return path


def plan_job(config: CurationConfig, ws: Workspace, tokenizer: Path, quality_model: Path | None = None,
             limit: int | None = None) -> tuple[list[Shard], JobContext]:
    """Everything that can be checked before a cluster starts: inputs readable, tokenizer and quality model
    usable, filters valid. Without a quality model no document is scored; with one, only its header is read here
    (the workers load it, once per process). `limit`: at most that many records per source."""
    limit = check_limit(limit)
    shards = plan_shards(config.sources, limit)
    load_tokenizer(path_text(tokenizer))
    selecting = [s.name for s in config.sources if s.quality_threshold is not None or s.keep_fraction is not None]
    if quality_model is None and selecting:
        raise UserError(f"source '{selecting[0]}' selects by quality but there is no quality model; "
                        "train one with `loom quality train` or pass --quality-model FILE")
    model = path_text(quality_model) if quality_model else None
    if model:
        check_quality_model(model)
    for eval_set in config.decontaminate.evals if config.decontaminate else ():
        eval_texts(eval_set)  # a missing file, a record without the text field: here, before any compute
    for source in config.sources:  # a bad filter option or plugin step fails here, before any task is sent
        document_steps(source, words=options_only_words())  # no quality step, no spaCy in the client
    return shards, JobContext(workspace=ws, config=config, tokenizer=path_text(tokenizer), quality_model=model,
                              limit=limit)
