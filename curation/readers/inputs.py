"""What a source's `paths` (and an eval set's) match, in a stable order, looked up from the folder sources.toml
names (`root`, or its own folder); and a source's `storage_options` handed to base.store for the URLs under its
paths."""

import os
from pathlib import Path

from base.errors import UserError
from base.inputs import expand_glob
from base.small_files import RECORD_SUFFIXES
from base.store import is_url, register_storage_options


def source_inputs(source, reader) -> list[tuple[str, list[str] | None]]:
    """What a source's `paths` match, in a stable order: (file, None) for each file; for a *-dir format (`reader`:
    the source's, curation.readers.reader_for), (folder, None) for each folder and (pattern, its files of the
    format) for a glob of files. Raises UserError when a path matches nothing."""
    want_dirs = reader.shard_kind == "folder"
    found: list[tuple[str, list[str] | None]] = []
    register_source_storage(source)
    globbed: set[str] = set()  # files of the globs before: a file two globs match is read once
    for pattern in source.paths:
        full = full_pattern(pattern, source.base_dir)
        matches = [(str(p), None) for p in expand_glob(full, folders=want_dirs)]
        if want_dirs and (files := reader.documents(expand_glob(full))):
            if new_files := [f for f in files if f not in globbed]:
                matches.append((full, new_files))
                globbed.update(new_files)
            elif not matches:
                continue
        if not matches and not want_dirs and (folders := expand_glob(full, folders=True)):
            raise UserError(folder_for_a_file_format(source, pattern, folders))
        if not matches:
            kind = f"folder or {'/'.join(reader.suffixes)} file" if want_dirs else "file"
            raise UserError(
                f"source '{source.name}': path '{pattern}' matches no {kind}{looked_in(pattern, source.base_dir)}; "
                "fix `paths` in sources.toml"
            )
        found.extend(m for m in matches if m not in found)
    return found


def folder_for_a_file_format(source, pattern: str, folders: list) -> str:
    """The line for a path of a file format (jsonl, parquet, warc) that names folders: the formats that read
    folders, or a glob of the folder's files."""
    folder, what = (pattern.rstrip("/"), "is a folder") if len(folders) == 1 else (folders[0], "matches only folders")
    return (f"source '{source.name}': path '{pattern}' {what}, and format \"{source.format}\" reads files; "
            f"set format = \"text-dir\" (its .txt files) or \"html-dir\" (its .html pages), or give its files "
            f"as a glob such as '{folder}/*.{source.format}' in `paths` of sources.toml")


def eval_set_files(eval_set) -> list[str]:
    """Every file an eval set's `paths` match, in a stable order; a UserError for a pattern that matches none, or
    a file of another kind."""
    found = []
    for pattern in eval_set.paths:
        matches = [str(f) for f in expand_glob(full_pattern(pattern, eval_set.base_dir))]
        if not matches:
            raise UserError(f"eval set '{eval_set.name}': path '{pattern}' matches no file"
                            f"{looked_in(pattern, eval_set.base_dir)}; fix `paths` in [[decontaminate.eval]] of "
                            "sources.toml")
        for file in matches:
            if not file.endswith(RECORD_SUFFIXES):
                raise UserError(f"eval set '{eval_set.name}': {file} is not {', '.join(RECORD_SUFFIXES)}; convert "
                                "it or fix `paths`")
            if file not in found:
                found.append(file)
    return found


def register_source_storage(source) -> None:
    """Hands a source's `storage_options` to base.store for the URLs under its paths, in this process."""
    for pattern in source.paths:
        if source.storage_options and is_url(pattern):
            register_storage_options(url_prefix(pattern), source.storage_options)


def is_relative(pattern: str) -> bool:
    return not (is_url(pattern) or Path(pattern).is_absolute())


def full_pattern(pattern: str, base_dir: str) -> str:
    """A path or glob of sources.toml as it is looked up: a relative one from `base_dir` (`root`, or the file's
    folder); a local one normalized (`ws/../corpus/*.html` is `corpus/*.html`), so each shard's `input`, the
    funnel's and every table's, is the clean path."""
    if is_url(pattern):
        return pattern
    return os.path.normpath(Path(base_dir) / pattern if is_relative(pattern) else pattern)


def looked_in(pattern: str, base_dir: str) -> str:
    """The clause a 'matches no file' line ends with: where a relative pattern was looked up; nothing for another."""
    return f" (looked in {base_dir})" if is_relative(pattern) else ""


def url_prefix(pattern: str) -> str:
    """The part of a URL glob before its first wildcard, up to a `/`: what every match starts with."""
    fixed = pattern[:min((pattern.index(c) for c in "*?[" if c in pattern), default=len(pattern))]
    return fixed if fixed == pattern else fixed[:fixed.rindex("/") + 1]
