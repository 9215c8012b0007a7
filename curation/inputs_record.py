"""What a curation read, recorded in its generation's manifest (inputs.json): the sources.toml (its path, digest and
text, unless it holds a source's storage_options), every input file with its size and SHA-256, the tokenizer and
the quality model with theirs, the eval files of [decontaminate], and the sample limit. A run copies it into its own folder (trainer.recorded_inputs), and `loom
reproduce` checks each file against it before it curates again. The files are digested on the cluster, once per
generation built."""

import json

from base.atomic_files import write_text
from base.digests import file_digest, text_digest
from base.inputs import file_size, files_under
from base.store import as_path, path_text
from base.workspace import Generation

SOURCES_FILE_KEY, SOURCES_TEXT, SOURCES_SHA256, FILES, TOKENIZER, QUALITY_MODEL, LIMIT = (
    "sources_file", "sources_toml", "sources_sha256", "files", "tokenizer", "quality_model", "limit")
PATH, SIZE, SHA256 = "path", "size", "sha256"
FILES_PER_TASK = 64  # many small files (a folder source's) digested a batch per task, not a task each


def file_record(path) -> dict:
    """A file as the record holds it: its path, size and whole SHA-256."""
    return {PATH: path_text(as_path(path)), SIZE: file_size(path), SHA256: file_digest(path, length=64)}


def sources_digest(text: str) -> str:
    return text_digest(text, length=64)


def holds_keys(config) -> bool:
    """Whether a source's `storage_options` (keys, secrets) are in the sources.toml's text, which is then not
    written out: the record keeps its digest alone."""
    return any(source.storage_options for source in config.sources)


def file_records(paths: list[str]) -> list[dict]:
    return [file_record(path) for path in paths]


def shard_files(shard) -> list[str]:
    """The files a shard reads, as its fingerprint lists them (curation.run.input_fingerprint): a folder's files, a
    glob's, or the one file."""
    if (files := getattr(shard.span, "files", None)) is not None:
        return [str(f) for f in files]
    path = as_path(shard.input)
    return [str(f) for f in files_under(path)] if path.is_dir() else [str(shard.input)]


def input_files(ctx, shards: list) -> list[str]:
    """Every file the job reads, each once: the sources' inputs and [decontaminate]'s eval files."""
    from curation.readers.inputs import eval_set_files

    files = [f for shard in shards for f in shard_files(shard)]
    if ctx.config.decontaminate is not None:
        files += [f for e in ctx.config.decontaminate.evals for f in eval_set_files(e)]
    return sorted(set(files))


def write_inputs_record(ctx, gen: Generation, shards: list, client) -> None:
    """The generation's inputs.json: the files digested by the cluster's workers, the models here."""
    paths = input_files(ctx, shards)
    batches = [paths[i:i + FILES_PER_TASK] for i in range(0, len(paths), FILES_PER_TASK)]
    keys = [f"digest-{gen.id}-{i}" for i in range(len(batches))]
    files = [f for batch in client.gather(client.map(file_records, batches, key=keys)) for f in batch]
    record = {SOURCES_FILE_KEY: ctx.config.file, SOURCES_SHA256: sources_digest(ctx.config.text),
              SOURCES_TEXT: None if holds_keys(ctx.config) else ctx.config.text, LIMIT: ctx.limit, FILES: files,
              TOKENIZER: file_record(ctx.tokenizer),
              QUALITY_MODEL: file_record(ctx.quality_model) if ctx.quality_model else None}
    write_text(json.dumps(record, indent=2), gen.inputs_record)
