"""The `[[annotate]]` tables of sources.toml read into AnnotatorConfigs, with every check before any compute: each
problem is one line naming `annotator 'NAME'` and the fix (curation.config.load_config calls `parse_annotators`)."""

import re
from pathlib import Path

from base.errors import UserError, did_you_mean, is_whole_number, reject_unknown_keys
from base.store import is_url
from curation.schema import CURATED
from curation.steps.annotate import ANNOTATORS
from curation.steps.annotate.kinds import AnnotatorConfig

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
BUCKET_SUFFIX = "_bucket"
# the columns curated rows and the manifest's documents already have (documents adds shard and row)
TAKEN = frozenset(CURATED.names) | {"shard", "row", "record"}
COMMON_KEYS = ("name", "kind", "sources", "min", "max", "buckets")
MAX_BUCKETS = 100


def parse_annotators(entries, path: Path, source_names: list[str], base_dir: Path) -> tuple[AnnotatorConfig, ...]:
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise UserError(f"{path}: `annotate` must be [[annotate]] tables (name, kind and the kind's keys)")
    annotators = tuple(_parse_annotator(entry, i, path, source_names, base_dir) for i, entry in enumerate(entries))
    names = [a.name for a in annotators]
    if repeated := [name for name in names if names.count(name) > 1]:
        raise UserError(f"{path}: annotator '{repeated[0]}' is declared twice; give each [[annotate]] its own name")
    return annotators


def _parse_annotator(entry: dict, index: int, path: Path, source_names: list[str], base_dir: Path) -> AnnotatorConfig:
    name = _name(entry.get("name"), f"{path}: [[annotate]] #{index + 1}")
    where = f"{path}: annotator '{name}'"
    kind_name = entry.get("kind")
    if kind_name not in ANNOTATORS:
        raise UserError(f"{where}: `kind` = {kind_name!r} is unknown; use one of {', '.join(ANNOTATORS)}")
    kind = ANNOTATORS[kind_name]
    reject_unknown_keys(entry, {*COMMON_KEYS, *kind.keys}, where)
    if missing := [key for key in kind.required if key not in entry]:
        raise UserError(f"{where}: kind {kind_name} needs `{missing[0]}`; set it in the [[annotate]] table")
    values = {key: entry[key] for key in ("label", "function") if key in entry}
    for key, value in values.items():
        if not (isinstance(value, str) and value):
            raise UserError(f"{where}: `{key}` must be a non-empty string")
    if "model" in entry:
        values["model"] = _model_path(entry["model"], where, base_dir)
    sources = entry.get("sources", [])
    if isinstance(sources, str):
        sources = [sources]
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise UserError(f"{where}: `sources` must be a list of source names (empty or left out: every source)")
    if unknown := [s for s in sources if s not in source_names]:
        raise UserError(f"{where}: `sources` names '{unknown[0]}'{did_you_mean(unknown[0], source_names)}, which is "
                        f"no [[source]]; use any of {', '.join(source_names)}")
    bounds = {key: _number(entry.get(key), key, where) for key in ("min", "max")}
    if None not in bounds.values() and bounds["min"] > bounds["max"]:
        raise UserError(f"{where}: `min` ({bounds['min']}) is above `max` ({bounds['max']}); swap them or drop one")
    buckets = entry.get("buckets", 0)
    if not is_whole_number(buckets) or not (buckets == 0 or 2 <= buckets <= MAX_BUCKETS):
        raise UserError(f"{where}: `buckets` must be 0 (none) or a whole number from 2 to {MAX_BUCKETS}")
    for key in ("batch_size", "max_length"):
        if key in entry and not (is_whole_number(entry[key]) and entry[key] >= 1):
            raise UserError(f"{where}: `{key}` must be a whole number, at least 1")
        if key in entry:
            values[key] = entry[key]
    config = AnnotatorConfig(name=name, kind=kind_name, sources=tuple(sources), buckets=buckets, **bounds, **values)
    if problem := kind.check(config):  # a kind's line may name the annotator itself
        named = problem if problem.startswith(f"annotator '{name}'") else f"annotator '{name}': {problem}"
        raise UserError(f"{path}: {named}")
    return config


def _name(value, where: str) -> str:
    if not (isinstance(value, str) and NAME_PATTERN.match(value)):
        raise UserError(f"{where}: `name` = {value!r} is not a column name; use lowercase letters, digits and '_', "
                        "starting with a letter (e.g. name = \"edu\")")
    if value in TAKEN or value.endswith(BUCKET_SUFFIX):
        why = f"curated rows already have a column '{value}'" if value in TAKEN else \
            f"names ending in '{BUCKET_SUFFIX}' are the buckets' columns"
        raise UserError(f"{where}: annotator '{value}': {why}; choose another name")
    return value


def _model_path(value, where: str, base_dir: Path) -> str:
    """A model file or folder, relative to the file's `root` (or its folder) as a source's paths are."""
    if not (isinstance(value, str) and value):
        raise UserError(f"{where}: `model` must be the path of a model file or folder")
    return value if is_url(value) else str((base_dir / value).resolve())


def _number(value, key: str, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise UserError(f"{where}: `{key}` must be a number (a document scoring {'below' if key == 'min' else 'above'} "
                        "it is removed)")
    return float(value)
