"""Mixture specs: a named TOML file saying how many tokens, of what, in which phase."""

import math
import re
from dataclasses import dataclass, fields
from pathlib import Path, PurePath

from base.errors import UserError, reject_unknown_keys
from base.names import check_name
from base.small_files import read_toml
from base.store import as_path
from base.workspace import MIXTURES_DIR, MODELS_DIR, SPEC_GLOB, TOKENIZER_FILE
from curation.licenses import spdx_license

DEFAULT_PHASES = (("pretrain", 0.8, "weights"), ("midtrain", 0.2, "midtrain"))
SPEC_KEYS = {"name", "tokenizer", "seq_len", "total_tokens", "steps", "global_batch", "seed", "max_epochs",
             "validation_sequences", "validation_tokens", "target_tokens", "weights", "midtrain", "phase", "eval",
             "rehydrate", "allow_licenses"}
EVAL_KEYS = {"path", "text", "source"}
PHASE_NAME = re.compile(r"[A-Za-z0-9_.-]+")  # a phase's name is a label, never a path
EVAL_NAME = re.compile(r"[A-Za-z0-9_-]+")  # names evals/NAME.parquet and a metrics key


@dataclass(frozen=True)
class Phase:
    name: str
    fraction: float
    weights: tuple[tuple[str, float], ...]  # (key, weight): a source, a tag, or a slice such as web:lang=de


@dataclass(frozen=True)
class EvalSet:
    """A user evaluation set: documents of a jsonl / jsonl.gz / parquet file or glob (relative to the workspace,
    the text in field `text`), or a curated source's held-out documents."""
    name: str
    path: str | None = None
    text: str = "text"
    source: str | None = None


@dataclass(frozen=True)
class MixtureSpec:
    name: str
    phases: tuple[Phase, ...]
    # relative to the workspace; must be the one the data was curated with. None: that one, wherever it is
    tokenizer: str | None = None
    seq_len: int = 512
    total_tokens: int | None = None
    steps: int | None = None
    global_batch: int = 32  # sequences per step; also the block whose composition is exact
    seed: int = 0
    max_epochs: float = 8.0
    validation_sequences: int | None = None  # the old budget, in sequences of seq_len + 1: read as validation_tokens
    validation_tokens: int | None = None  # held out of training per source, in whole documents (see mixtures.heldout)
    evals: tuple[EvalSet, ...] = ()
    # simulated epoching: the mixture stands in for a run of this many tokens, so each component's pool is cut to
    # tokens / target_tokens of its sequences and is repeated as often as in that run (see pool_sequences)
    target_tokens: int | None = None
    # FineWeb-2's rehydration: per weight key, (dup_count threshold, repeats) rules, thresholds ascending; a document
    # is repeated as often as the rule with the largest threshold its dup_count reaches says (once below them all)
    rehydrate: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()
    # the licences (SPDX, as curation.licenses spells them, or "unknown") a build may read; None: any
    allow_licenses: tuple[str, ...] | None = None

    def rehydration(self, key: str) -> tuple[tuple[int, int], ...]:
        """The rehydrate rules of a component: its own key's entry, else the first wildcard entry it was expanded
        from; () when it has none."""
        own = dict(self.rehydrate).get(key)
        if own is not None:
            return own
        return next((rules for entry, rules in self.rehydrate if rehydrate_covers(entry, key)), ())

    def validation_budget(self) -> int:
        """Tokens of whole documents held out per source; 8 sequences' worth unless the spec says otherwise."""
        if self.validation_tokens is not None:
            return self.validation_tokens
        return (8 if self.validation_sequences is None else self.validation_sequences) * (self.seq_len + 1)

    def resolved_steps(self) -> int:
        return self.steps if self.steps is not None else max(1, round(self.total_tokens / (self.global_batch * self.seq_len)))

    def resolved_tokens(self) -> int:
        """The tokens this mixture trains on: whole steps of global_batch sequences of seq_len."""
        return self.resolved_steps() * self.global_batch * self.seq_len

    def simulates_epochs(self) -> bool:
        """Whether the pools are cut: target_tokens is set and more than this mixture's own tokens."""
        return self.target_tokens is not None and self.target_tokens > self.resolved_tokens()

    def pool_sequences(self, available: int) -> int:
        """How many of a component's `available` sequences this mixture reads: all of them, or under simulated
        epoching the fraction tokens / target_tokens of them (at least one)."""
        if not self.simulates_epochs():
            return available
        return max(1, available * self.resolved_tokens() // self.target_tokens)


def parse_spec(raw: dict, where: str) -> MixtureSpec:
    reject_unknown_keys(raw, SPEC_KEYS, where)
    name = check_name("mixture", raw.get("name"), f"{where}: `name`")
    ints = {k: raw[k] for k in ("seq_len", "total_tokens", "steps", "global_batch", "seed", "validation_sequences",
                                "validation_tokens", "target_tokens") if k in raw}
    for key, value in ints.items():
        at_least = 0 if key in ("seed", "validation_sequences", "validation_tokens") else 1
        if not isinstance(value, int) or isinstance(value, bool) or value < at_least:
            raise UserError(f"{where}: `{key}` must be a whole number of at least {at_least}")
    if ("total_tokens" in raw) == ("steps" in raw):
        raise UserError(f"{where}: give exactly one of `total_tokens` or `steps` (with `global_batch`)")
    max_epochs = raw.get("max_epochs", 8.0)
    if not is_finite_number(max_epochs) or max_epochs <= 0:
        raise UserError(f"{where}: `max_epochs` = {max_epochs!r} must be a positive, finite number")
    _check_validation_budget(ints, where)
    tokenizer = _workspace_path("tokenizer", raw["tokenizer"], where, f"a {TOKENIZER_FILE}",
                                f"{MODELS_DIR}/{TOKENIZER_FILE}") if "tokenizer" in raw else None
    phases = _phases(raw, where)
    return MixtureSpec(name=name, phases=phases, tokenizer=tokenizer, max_epochs=float(max_epochs),
                       evals=_evals(raw.get("eval", {}), where),
                       rehydrate=_rehydrate(raw.get("rehydrate", {}), phases, where),
                       allow_licenses=_allow_licenses(raw, where), **ints)


def _allow_licenses(raw: dict, where: str) -> tuple[str, ...] | None:
    """`allow_licenses`: a list of SPDX licences (or "unknown"), each spelt as SPDX does; None when not set."""
    if "allow_licenses" not in raw:
        return None
    value = raw["allow_licenses"]
    if not isinstance(value, list):
        raise UserError(f'{where}: `allow_licenses` must be a list of SPDX licences, e.g. ["MIT", "CC-BY-4.0"]')
    return tuple(dict.fromkeys(spdx_license(entry, where, "allow_licenses") for entry in value))


def rehydrate_covers(entry: str, key: str) -> bool:
    """Whether a [rehydrate] entry applies to a component's key: the same key, or a cell that a wildcard key
    expands to (`web:domain=*` covers `web:domain=3`, `web:domain=*,quality_bucket=*` covers
    `web:domain=3,quality_bucket=2`: the same source and columns, each value equal or `*`)."""
    if entry == key:
        return True
    if "*" not in entry or ":" not in entry or ":" not in key:
        return False
    (source, conditions), (key_source, key_conditions) = entry.split(":", 1), key.split(":", 1)
    wanted, got = [c.partition("=") for c in conditions.split(",")], [c.partition("=") for c in key_conditions.split(",")]
    return (source == key_source and len(wanted) == len(got)
            and all(w[1] == g[1] == "=" and w[0].strip() == g[0].strip() and w[2].strip() in ("*", g[2].strip())
                    for w, g in zip(wanted, got)))


def _rehydrate(table, phases: tuple[Phase, ...], where: str) -> tuple[tuple[str, tuple[tuple[int, int], ...]], ...]:
    """[rehydrate]: weight key = { dup_count threshold = repeats, ... }, thresholds and repeats whole numbers >= 1."""
    example = 'web = { 1 = 1, 2 = 2, 5 = 3 }'
    if not isinstance(table, dict):
        raise UserError(f"{where}: [rehydrate] must be a table of weight key = {{ N = REPEATS }}, such as {example}")
    weighed = {key for phase in phases for key, _ in phase.weights}
    entries = []
    for key, rules in table.items():
        at = f"{where}: [rehydrate] '{key}'"
        if not any(rehydrate_covers(key, w) for w in weighed):
            raise UserError(f"{at} is weighed in no phase; give a key of the weights ({', '.join(sorted(weighed))})")
        if not isinstance(rules, dict) or not rules:
            raise UserError(f"{at} must be a table {{ N = REPEATS }}: a document whose duplicate clusters held at "
                            f"least N documents is repeated REPEATS times, such as {example}")
        parsed = {}
        for threshold, repeats in rules.items():
            if not (threshold.isascii() and threshold.isdigit()) or int(threshold) < 1 or int(threshold) in parsed:
                raise UserError(f"{at}: '{threshold}' is not a distinct whole number >= 1; thresholds are dup_counts "
                                f"(1 for a unique document), such as {example}")
            if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
                raise UserError(f"{at}: {threshold} = {repeats!r}; the repeats are a whole number >= 1")
            parsed[int(threshold)] = repeats
        entries.append((key, tuple(sorted(parsed.items()))))
    return tuple(entries)


def _check_validation_budget(ints: dict, where: str) -> None:
    if "validation_sequences" in ints and "validation_tokens" in ints:
        raise UserError(f"{where}: give `validation_tokens` (per source) or the older `validation_sequences`, not both")
    tokens, width = ints.get("validation_tokens", 0), ints.get("seq_len", 512) + 1
    if 0 < tokens < width:
        raise UserError(f"{where}: `validation_tokens` = {tokens} is less than one sequence of seq_len + 1 = {width} "
                        "tokens; give 0 (no validation) or at least that")


def _evals(table, where: str) -> tuple[EvalSet, ...]:
    if not isinstance(table, dict):
        raise UserError(f"{where}: [eval] must hold tables [eval.NAME] with `path` (and `text`) or `source`")
    sets = []
    for name, entry in table.items():
        at = f"{where}: [eval.{name}]"
        if not EVAL_NAME.fullmatch(name):
            raise UserError(f"{at}: an eval set's name is letters, digits, '_' or '-'")
        if not isinstance(entry, dict) or set(entry) - EVAL_KEYS or ("path" in entry) == ("source" in entry):
            raise UserError(f"{at}: give `path` (a jsonl, jsonl.gz or parquet file or glob in the workspace) and "
                            "optionally `text` (the field, default \"text\"), or `source` (a curated source's "
                            "held-out documents)")
        if "source" in entry:
            if "text" in entry or not isinstance(entry["source"], str):
                raise UserError(f"{at}: `source` is the name of a curated source, without `text`")
            sets.append(EvalSet(name, source=entry["source"]))
            continue
        text = entry.get("text", "text")
        if not isinstance(text, str) or not text:
            raise UserError(f"{at}: `text` must name the field that holds each document's text")
        sets.append(EvalSet(name, path=_workspace_path("path", entry["path"], at, "an eval file or glob",
                                                       "evals/my-set.jsonl"), text=text))
    return tuple(sets)


def is_finite_number(value) -> bool:
    """A TOML int or float, neither a boolean nor nan or +-inf (valid TOML floats)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _workspace_path(key: str, value, where: str, what: str, example: str) -> str:
    """A path relative to the workspace that stays inside it."""
    if not isinstance(value, str) or not value:
        raise UserError(f"{where}: `{key}` must be a path to {what}, relative to the workspace")
    path = PurePath(value)
    if path.is_absolute() or ".." in path.parts:
        raise UserError(f"{where}: `{key}` = {value!r} leaves the workspace; give a path inside it, "
                        f"relative to it, such as {example}")
    return value


def _phases(raw: dict, where: str) -> tuple[Phase, ...]:
    if "phase" in raw:
        if "weights" in raw or "midtrain" in raw:
            raise UserError(f"{where}: give [[phase]] entries or [weights]/[midtrain], not both")
        entries = raw["phase"]
        if not isinstance(entries, list) or not entries:
            raise UserError(f"{where}: [[phase]] must be a list of tables")
        phases = [_phase(e, f"{where}: phase #{i + 1}") for i, e in enumerate(entries)]
    else:
        if "weights" not in raw:
            raise UserError(f"{where}: no [weights]; give the token shares per source, tag or slice")
        phases = [Phase(name, fraction, _weights(raw.get(table, raw["weights"]), f"{where}: [{table}]"))
                  for name, fraction, table in DEFAULT_PHASES]
    names = [p.name for p in phases]
    if len(set(names)) != len(names):
        raise UserError(f"{where}: phase names must be unique")
    total = sum(p.fraction for p in phases)
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        raise UserError(f"{where}: phase fractions sum to {total:g}, not 1; make them add up")
    return tuple(phases)


def _phase(entry, where: str) -> Phase:
    if not isinstance(entry, dict) or set(entry) - {"name", "fraction", "weights"}:
        raise UserError(f"{where}: a phase has `name`, `fraction` and `weights` only")
    name, fraction = entry.get("name"), entry.get("fraction")
    if not isinstance(name, str) or not PHASE_NAME.fullmatch(name):
        raise UserError(f"{where}: `name` must be a name of letters, digits, '.', '_' or '-'")
    if not is_finite_number(fraction) or not 0 < fraction <= 1:
        raise UserError(f"{where} ('{name}'): `fraction` must be in (0, 1]")
    return Phase(name, float(fraction), _weights(entry.get("weights"), f"{where} ('{name}') weights"))


def _weights(table, where: str) -> tuple[tuple[str, float], ...]:
    if not isinstance(table, dict) or not table:
        raise UserError(f"{where}: must be a table of key = weight")
    for key, weight in table.items():
        if not is_finite_number(weight):
            raise UserError(f"{where}: the weight of '{key}' is {weight!r}; a weight is a finite number >= 0")
        if weight < 0:
            raise UserError(f"{where}: the weight of '{key}' is negative ({weight}); weights are shares, >= 0")
    if not any(weight > 0 for weight in table.values()):
        raise UserError(f"{where}: every weight is zero; give at least one key a positive share")
    return tuple((key, float(weight)) for key, weight in table.items())


def load_spec(path: Path) -> MixtureSpec:
    """A spec file, named by its `name`, else by its file name. A spec in a mixtures/ folder (the workspace's, the
    built-in ones) is the one `loom mix build NAME` finds by its file name, so its `name` may not say otherwise."""
    raw = read_toml(path)
    if "name" not in raw:
        return parse_spec({**raw, "name": path.stem}, str(path))
    if path.parent.name == MIXTURES_DIR:
        check_file_name(raw["name"], path)
    return parse_spec(raw, str(path))


def check_file_name(name, path: Path) -> None:
    """Refuses a named spec whose `name` is not its file name: it would be built under another name."""
    check_name("mixture", name, f"{path}: `name`")
    if name != path.stem:
        raise UserError(f"mixture spec {path} is named '{name}', not '{path.stem}' as its file: rename the file to "
                        f"{name}.toml, set name = \"{path.stem}\", or drop `name`")


def find_spec(name_or_path: str, workspace_mixtures: Path, builtin: Path) -> Path:
    """A path to a spec file, or a name: the workspace's mixtures/NAME.toml first, then the built-in one."""
    given = as_path(name_or_path)
    if given.suffix == ".toml":
        if not given.is_file():
            raise UserError(f"no mixture spec at {given}")
        return given
    check_name("mixture", name_or_path)
    for folder in (workspace_mixtures, builtin):
        candidate = folder / f"{name_or_path}.toml"
        if candidate.is_file():
            return candidate
    known = sorted(spec_files(workspace_mixtures, builtin))
    raise UserError(f"no mixture named '{name_or_path}'; known: {', '.join(known) or 'none'} "
                    f"(or give a path to a .toml spec)")


def spec_files(workspace_mixtures: Path, builtin: Path) -> dict[str, Path]:
    """Every named spec, by name, the workspace's first (each folder in name order); a workspace's NAME.toml
    hides a built-in one of the same name."""
    specs = {}
    for folder in (workspace_mixtures, builtin):
        for path in sorted(folder.glob(SPEC_GLOB)):
            specs.setdefault(path.stem, path)
    return specs


def to_toml(spec: MixtureSpec, extra: dict, note: str, by: str = "`loom mix build`") -> str:
    """The spec as resolved, every default filled in, as TOML; the budget as `extra` gives it (steps)."""
    lines = [f"# as resolved by {by}: every default filled in; {note}", ""]
    values = {f.name: getattr(spec, f.name) for f in fields(spec)
              if f.name not in ("phases", "total_tokens", "validation_sequences", "validation_tokens", "evals",
                                "rehydrate")}
    values.update({"validation_tokens": spec.validation_budget(), **extra})
    for key, value in values.items():
        if value is not None:
            lines.append(f"{key} = {_toml_value(value)}")
    for phase in spec.phases:
        lines += ["", "[[phase]]", f"name = {_toml_value(phase.name)}", f"fraction = {phase.fraction!r}",
                  "weights = { " + ", ".join(f"{_toml_value(k)} = {w!r}" for k, w in phase.weights) + " }"]
    if spec.rehydrate:
        lines += ["", "[rehydrate]"] + [f"{_toml_value(key)} = {{ " + ", ".join(f'"{t}" = {r}' for t, r in rules) + " }"
                                         for key, rules in spec.rehydrate]
    for e in spec.evals:
        lines += ["", f"[eval.{e.name}]"] + ([f"source = {_toml_value(e.source)}"] if e.source else
                                               [f"path = {_toml_value(e.path)}", f"text = {_toml_value(e.text)}"])
    return "\n".join(lines) + "\n"


def _toml_value(value) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)
