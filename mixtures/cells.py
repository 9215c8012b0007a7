"""Cells of a source as mixture keys: slices of several conditions (`web:domain=3,quality_bucket=2`, ANDed), domains
by name (curation.json's `domains.names`), and wildcard keys (`web:domain=*`, `web:domain=*,quality_bucket=*`)
expanded into one component per non-empty cell, the key's weight split by the cells' natural token shares.

A cell's key is canonical: the source, then the conditions in the order the wildcard key gives them, `*` replaced
by the cell's value, domains by number (a rename never changes a mixture; names are shown beside the numbers).
Documents with a null in a wildcard's column (a source the domains were not fitted on, a document without a
quality bucket) are in none of its cells, nor is a cell of fewer tokens than one sequence: the expansion records
the tokens so left out (`Wildcard.left_out_tokens`), and `loom mix build` prints them."""

import re
from dataclasses import dataclass, field, replace

import duckdb

from base.errors import UserError, did_you_mean
from base.sql import literal
from curation.config import SOURCE_NAME
from mixtures.spec import MixtureSpec, Phase

SLICE = re.compile(rf"^(?P<source>{SOURCE_NAME}):(?P<conditions>.+)$")
CONDITION = re.compile(r"^(?P<column>[a-z_][a-z0-9_]*)\s*(?P<op>>=|<=|!=|=|>|<)\s*(?P<value>.+)$")
SLICE_COLUMNS = {"lang", "lang_score", "quality", "quality_bucket", "n_tokens", "n_chars", "domain", "dup_count"}
WILDCARD = "*"
WILDCARD_COLUMNS = ("domain", "lang", "quality_bucket")  # columns of few values: a cell per value makes sense
BUCKET_SUFFIX = "_bucket"  # an annotator's buckets (`edu_bucket`), also a column of few values
NUMBER = re.compile(r"-?\d+(\.\d+)?")
TAG_PREFIX = "tag:"  # `tag:NAME` weighs a tag where a bare NAME could be read as a source (mixtures.plan)
NO_DOMAINS = "add a [domains] table to sources.toml and re-run `loom curate`"


@dataclass(frozen=True)
class Condition:
    column: str
    op: str
    value: str  # as written (a domain's name resolved to its number); WILDCARD for a cell per value

    @property
    def wildcard(self) -> bool:
        return self.value == WILDCARD

    def text(self) -> str:
        return f"{self.column}{self.op}{self.value}"

    def sql(self) -> str:
        # a number stays as written (NUMBER lets nothing else through); anything else is a string, quotes optional
        operand = self.value if NUMBER.fullmatch(self.value) else literal(self.value.strip("'\""))
        return f"{self.column} {self.op} {operand}"


@dataclass(frozen=True)
class Wildcard:
    """A wildcard key's cells: (cell key, training tokens) in order, and the tokens it selects that no cell holds."""
    key: str
    cells: tuple[tuple[str, int], ...]
    left_out_tokens: int


@dataclass(frozen=True)
class Expansion:
    spec: MixtureSpec  # every wildcard key replaced by its cells
    wildcards: dict[str, Wildcard] = field(default_factory=dict)
    names: dict[str, str] | None = None  # the domains' names, by number

    def record(self) -> dict:
        """What schedule.json keeps of the expansion (nothing for a spec without wildcards or named domains, so
        its schedule is as before): each wildcard key's cells and the tokens left out, the domains' names."""
        record = {}
        if self.wildcards:
            record["cells"] = {w.key: {"cells": [k for k, _ in w.cells], "left_out_tokens": w.left_out_tokens}
                               for w in self.wildcards.values()}
        if self.names:
            record["domain_names"] = self.names
        return record


def parse_conditions(key: str) -> tuple[str, tuple[Condition, ...]] | None:
    """A slice key's source and conditions (`source:column op value[,column op value...]`), as written; None for a
    key not shaped as a slice."""
    match = SLICE.match(key)
    if not match:
        return None
    conditions = []
    for part in match["conditions"].split(","):
        condition = CONDITION.match(part.strip())
        if not condition:
            return None
        conditions.append(Condition(condition["column"], condition["op"], condition["value"].strip()))
    return match["source"], tuple(conditions)


def is_tag_key(key: str) -> bool:
    """Whether a weight key names a tag explicitly: `tag:NAME` (a slice of a source called `tag` has conditions)."""
    return key.startswith(TAG_PREFIX) and parse_conditions(key) is None


def domain_names(curation: dict) -> dict[str, str] | None:
    """The domains' names by number ({"3": "math"}) from curation.json; None where the data has no domains."""
    domains = curation.get("domains")
    return None if domains is None else dict(domains.get("names") or {})


def source_tags(sources: dict | None) -> set[str]:
    """Every tag the sources have."""
    return {tag for info in (sources or {}).values() for tag in info.get("tags", ())}


def key_names(sources: dict | None) -> set[str]:
    """What a bare weight key may name: the sources and their tags."""
    return set(sources or ()) | source_tags(sources)


def checked_slice(key: str, sources: dict | None, names: dict[str, str] | None) -> tuple[str, tuple[Condition, ...]]:
    """A slice key's source and conditions, every check made (the source's: against `sources` unless None) and
    domain names resolved to numbers."""
    parsed = parse_conditions(key)
    if parsed is None:
        raise UserError(f"weight key '{key}' is not a source, a tag or a slice like 'web:quality_bucket>=3'"
                        f"{did_you_mean(key, key_names(sources))}; sources: {', '.join(sorted(sources or ()))}")
    source, conditions = parsed
    if sources is not None and source not in sources:
        raise UserError(f"weight key '{key}': no source '{source}'{did_you_mean(source, sources)}; sources: "
                        f"{', '.join(sorted(sources))}")
    columns = None if sources is None else SLICE_COLUMNS | set(sources[source].get("columns", ()))
    return source, tuple(_checked_condition(key, c, names, columns) for c in conditions)


def _checked_condition(key: str, condition: Condition, names: dict[str, str] | None,
                       columns: set[str] | None) -> Condition:
    """`columns`: what the key's source may be sliced on (the manifest's columns and its annotators'); None: any
    column the documents have (a key Loom wrote itself)."""
    column = condition.column
    if columns is not None and column not in columns:
        raise UserError(f"weight key '{key}': cannot slice on '{column}'{did_you_mean(column, columns)}; use one of "
                        f"{', '.join(sorted(columns))} (an annotator's column and its NAME_bucket where an "
                        "[[annotate]] table covers the source)")
    if condition.wildcard:
        if column not in WILDCARD_COLUMNS and not column.endswith(BUCKET_SUFFIX):
            raise UserError(f"weight key '{key}': '{column}=*' would make a cell per value; a wildcard takes a column "
                            f"of few values: {', '.join(WILDCARD_COLUMNS)} or an annotator's NAME_bucket")
        if condition.op != "=":
            raise UserError(f"weight key '{key}': a wildcard is written '{column}=*', not '{condition.text()}'")
    if column == "domain":
        if names is None:
            raise UserError(f"weight key '{key}': the curated data has no domains; {NO_DOMAINS}")
        if not condition.wildcard and not NUMBER.fullmatch(condition.value):
            return replace(condition, value=_domain_number(key, condition.value.strip("'\""), names))
    return condition


def _domain_number(key: str, name: str, names: dict[str, str]) -> str:
    numbers = [number for number, named in names.items() if named == name]
    if not numbers:
        named = ", ".join(f"{n} = {v}" for n, v in sorted(names.items(), key=lambda item: int(item[0]))) or "none"
        raise UserError(f"weight key '{key}': no domain named '{name}'{did_you_mean(name, names.values())} "
                        f"(named: {named}); use a domain's number or name it in sources.toml's [domains] names")
    return numbers[0]


def is_wildcard(key: str) -> bool:
    parsed = parse_conditions(key)
    return parsed is not None and any(c.wildcard for c in parsed[1])


def slice_where(source: str, conditions: tuple[Condition, ...]) -> str:
    """SQL over the manifest's documents selecting a slice (a wildcard's column: every non-null value)."""
    tests = [f"{c.column} IS NOT NULL" if c.wildcard else c.sql() for c in conditions]
    return " AND ".join([f"source = {literal(source)}", *tests])


def cell_keys(source: str, columns, con: duckdb.DuckDBPyConnection, names: dict[str, str] | None
              ) -> list[tuple[str, int]]:
    """The non-empty cells of `source` over `columns` (each a column name, a cell per value, or a condition such as
    `quality_bucket>=3` that every cell keeps), as (cell key, training tokens) in numeric order."""
    key = f"{source}:" + ",".join(c if CONDITION.match(c) else f"{c}={WILDCARD}" for c in columns)
    return list(wildcard_cells(key, None, con, names).cells)


def wildcard_cells(key: str, sources: dict | None, con: duckdb.DuckDBPyConnection, names: dict[str, str] | None,
                   min_tokens: int = 1) -> Wildcard:
    """A wildcard key's cells with their training tokens (those of `training_documents` when `con` has that view,
    mixtures.heldout's, else of all `documents`); a cell of fewer than `min_tokens` is left out with the nulls."""
    source, conditions = checked_slice(key, sources, names)
    grouped = [c.column for c in conditions if c.wildcard]
    fixed = [c.sql() for c in conditions if not c.wildcard]
    where = " AND ".join([f"source = {literal(source)}", *fixed])
    present = " AND ".join(f"{column} IS NOT NULL" for column in grouped)
    order = ", ".join(grouped)
    rows = con.execute(f"""
        SELECT {order}, coalesce(sum(n_tokens), 0)::BIGINT FROM {_documents_view(con)}
        WHERE {where} AND {present} GROUP BY ALL ORDER BY {order}""").fetchall()
    nulls = con.execute(f"SELECT coalesce(sum(n_tokens), 0)::BIGINT FROM {_documents_view(con)} "
                        f"WHERE {where} AND NOT ({present})").fetchall()[0][0]
    cells = [(_cell_key(source, conditions, values), tokens) for *values, tokens in rows]
    kept = tuple((k, t) for k, t in cells if t >= min_tokens)
    return Wildcard(key, kept, int(nulls) + sum(t for k, t in cells if t < min_tokens))


def _documents_view(con: duckdb.DuckDBPyConnection) -> str:
    held_out = con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'training_documents'").fetchone()[0]
    return "training_documents" if held_out else "documents"


def _cell_key(source: str, conditions: tuple[Condition, ...], values: list) -> str:
    filled, values = [], iter(values)
    for c in conditions:
        filled.append(replace(c, value=str(next(values))) if c.wildcard else c)
    return f"{source}:" + ",".join(c.text() for c in filled)


def canonical_key(key: str, sources: dict | None, names: dict[str, str] | None) -> str:
    """A slice key as a cell writes it (no spaces, domain names as numbers); any other key as it is."""
    if parse_conditions(key) is None:
        return key
    source, conditions = checked_slice(key, sources, names)
    return f"{source}:" + ",".join(c.text() for c in conditions)


def expand(spec: MixtureSpec, con: duckdb.DuckDBPyConnection, names: dict[str, str] | None,
           sources: dict | None = None, whole_batches: bool = True) -> Expansion:
    """Every phase's wildcard keys replaced by their cells (cells under one sequence of seq_len + 1 tokens left
    out, and with `whole_batches` those their natural share gives under one sequence per batch), each cell
    weighted by the key's weight x its share of the cells' tokens; a cell that the phase also weighs explicitly
    gets the sum. `sources` (curation.json's) checks the keys' sources; None: unchecked."""
    keys = dict.fromkeys(k for phase in spec.phases for k, _ in phase.weights if is_wildcard(k))
    wildcards = {k: wildcard_cells(k, sources, con, names, min_tokens=spec.seq_len + 1) for k in keys}
    if whole_batches:
        wildcards = {k: batch_sized(w, _largest_share(spec, k) * spec.global_batch) for k, w in wildcards.items()}
    for w in wildcards.values():
        if not w.cells:
            raise UserError(f"mixture '{spec.name}': weight key '{w.key}' has no cell of at least one sequence "
                            f"({spec.seq_len + 1} tokens) that its share gives a sequence per batch: the "
                            f"{w.left_out_tokens:,} training tokens it selects have a null in its wildcard's columns "
                            "or are in smaller cells; raise global_batch or check them with `loom sql`")
    cell_set = {k for w in wildcards.values() for k, _ in w.cells}
    phases = tuple(replace(p, weights=_expanded_weights(p, wildcards, cell_set, sources, names)) for p in spec.phases)
    return Expansion(replace(spec, phases=phases), wildcards, names)


def _largest_share(spec: MixtureSpec, key: str) -> float:
    """The largest share of a batch that any phase gives `key` (its weight over the phase's total)."""
    return max(dict(p.weights).get(key, 0.0) / sum(w for _, w in p.weights) for p in spec.phases)


def batch_sized(wildcard: Wildcard, sequences: float) -> Wildcard:
    """The wildcard without its cells whose natural share of its `sequences` per batch is under one: a batch
    could not hold them (they would round to none), so they join the tokens left out, and the rest share it."""
    total = sum(t for _, t in wildcard.cells)
    kept = tuple((k, t) for k, t in wildcard.cells if t * sequences >= total)
    return replace(wildcard, cells=kept,
                   left_out_tokens=wildcard.left_out_tokens + total - sum(t for _, t in kept))


def expand_spec(spec: MixtureSpec, con: duckdb.DuckDBPyConnection, names: dict[str, str] | None) -> MixtureSpec:
    return expand(spec, con, names).spec


def _expanded_weights(phase: Phase, wildcards: dict[str, Wildcard], cell_set: set[str], sources: dict | None,
                      names: dict[str, str] | None) -> tuple[tuple[str, float], ...]:
    weights: dict[str, float] = {}
    for key, weight in phase.weights:
        if key in wildcards:
            total = sum(t for _, t in wildcards[key].cells)
            for cell, tokens in wildcards[key].cells:
                weights[cell] = weights.get(cell, 0.0) + weight * tokens / total
        else:
            canonical = canonical_key(key, sources, names)
            named = canonical if canonical in cell_set else key
            weights[named] = weights.get(named, 0.0) + weight
    return tuple(weights.items())


def cell_wildcards(meta: dict) -> dict[str, str]:
    """Each cell's wildcard key, from a schedule's record of its expansion (schedule.json's "cells")."""
    return {cell: key for key, record in meta.get("cells", {}).items() for cell in record["cells"]}


def cell_label(key: str, names: dict[str, str] | None) -> str:
    """A cell key with its domain's name beside the number, where the domain has one: `web:domain=3 (math)`."""
    parsed = parse_conditions(key)
    if parsed is None or not names:
        return key
    named = [names[c.value] for c in parsed[1] if c.column == "domain" and c.op == "=" and c.value in names]
    return f"{key} ({', '.join(named)})" if named else key

