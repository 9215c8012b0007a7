"""Compile a mixture spec against a workspace's manifest: count what each key selects (DuckDB), plan it
(mixtures.plan), and write the schedule a trainer reads, with its plan and sequence indexes."""

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
from tokenizers import Tokenizer

from base.atomic_files import write_text
from base.errors import UserError
from base.inputs import local_file
from base.parquet_files import write_parquet
from base.store import as_path, path_text
from base.workspace import Generation, Workspace
from curation.tokenizer import tokenizer_fingerprint
from mixtures.compiled import LICENSES_FILE, PLAN_FILE, SCHEDULE_FILE, SPEC_FILE, VALIDATION_FILE, sequences_file
from mixtures.cells import Expansion, domain_names, expand
from mixtures.evalsets import compile_evals
from mixtures.heldout import hold_out, validation_counts
from mixtures.licenses import LICENSES, check_allowed, license_rows, provenance, source_license
from mixtures.manifest import documents, manifest_fingerprint, read_curation
from mixtures.plan import PLAN, Component, component_stats, plan_phases, plan_rows, resolve, weight_keys
from mixtures.spec import MixtureSpec, to_toml


@dataclass
class Measured:
    """What a spec selects in the published data, counted before anything is written."""
    spec: MixtureSpec  # the spec with its wildcard keys expanded into cells (mixtures.cells)
    expansion: Expansion
    gen: Generation
    curation: dict
    tokenizer: Path
    keys: list[str]
    components: list[Component]
    con: duckdb.DuckDBPyConnection
    held_out: pa.Table
    validation: dict[str, dict]
    stats: dict[str, dict]  # per weight key: documents, tokens, available and pool sequences, validation tokens
    provenance: dict[str, dict]  # per source: its licence, origin and citation (mixtures.licenses)


def measure(spec: MixtureSpec, ws: Workspace, whole_batches: bool = True) -> Measured:
    """Each weight key's training documents and sequences (its sources' held-out documents left out), the spec's
    wildcard keys first expanded into their cells by the cells' training tokens (`whole_batches`: without the cells
    their natural share gives under one sequence per batch; a search weighs its cells itself)."""
    gen = ws.published()  # read once: a curation publishing meanwhile does not change what this mixture is built on
    curation = read_curation(gen)
    tokenizer = curated_tokenizer(spec, ws, curation)
    names = domain_names(curation)
    sources = sorted({s for key in weight_keys(spec) for s in resolve(key, curation["sources"], names).sources})
    check_eval_sources(spec, sources)
    recorded = provenance(gen)
    check_allowed(spec, sources, recorded)
    con = documents(gen)
    held_out = hold_out(con, spec, sources)
    expansion = expand(spec, con, names, curation["sources"], whole_batches)
    keys = weight_keys(expansion.spec)
    components = [resolve(key, curation["sources"], names) for key in keys]
    validation = validation_counts(held_out, sources, spec.seq_len)
    check_dup_counts(spec, con)
    stats = {c.key: measured_stats(spec, con, c, validation) for c in components}
    return Measured(expansion.spec, expansion, gen, curation, tokenizer, keys, components, con, held_out, validation,
                    stats, recorded)


def compile_mixture(spec: MixtureSpec, ws: Workspace, out: Path) -> dict:
    m = measure(spec, ws)
    steps = spec.resolved_steps()
    phases = plan_phases(m.spec, m.keys, steps)
    rows = plan_rows(m.spec, m.components, phases, m.stats)
    meta = {
        "name": spec.name, "seed": spec.seed, "seq_len": spec.seq_len, "global_batch": spec.global_batch,
        "steps": steps, "tokens": steps * spec.global_batch * spec.seq_len,
        "vocab_size": Tokenizer.from_file(str(local_file(m.tokenizer))).get_vocab_size(),
        "phases": [{k: p[k] for k in ("name", "start_step", "end_step", "counts")} for p in phases],
        "components": write_sequence_indexes(m.con, m.components, m.stats, out, spec),
        **m.expansion.record(),
        "validation": {"file": VALIDATION_FILE, "tokens_per_source": spec.validation_budget(),
                       "sources": m.validation},
        "evals": compile_evals(spec, ws.root, m.tokenizer, m.gen, m.held_out, out),
        "manifest_fingerprint": manifest_fingerprint(m.gen), "tokenizer_fingerprint": m.curation["tokenizer_fingerprint"],
        "workspace": str(ws.root), "generation": m.gen.id,
        "licenses": {s: source_license(m.provenance, s) for s in sorted({s for c in m.components for s in c.sources})},
    }
    write_parquet(m.held_out, out / VALIDATION_FILE)
    write_parquet(pa.Table.from_pylist(rows, schema=PLAN), out / PLAN_FILE)
    licenses = license_rows(rows, {c.key: source_tokens(m.con, c, spec.rehydration(c.key), m.stats) for c in m.components},
                            m.provenance)
    write_parquet(pa.Table.from_pylist(licenses, schema=LICENSES), out / LICENSES_FILE)
    resolved = dataclasses.replace(spec, tokenizer=inside_workspace(m.tokenizer, ws))
    write_text(to_toml(resolved, {"steps": steps}, f"{meta['tokens']:,} tokens"), out / SPEC_FILE)
    write_text(json.dumps(meta, indent=2), out / SCHEDULE_FILE)
    return meta


def curated_tokenizer(spec: MixtureSpec, ws: Workspace, curation: dict) -> Path:
    """The spec's tokenizer, refused unless it is the one the data was curated with; a spec that names none gets
    that one (data_tokenizer)."""
    if spec.tokenizer is None:
        return data_tokenizer(spec.name, ws, curation)
    tokenizer = ws.root / spec.tokenizer
    if not tokenizer.is_file():
        raise UserError(f"mixture '{spec.name}': no tokenizer at {tokenizer}; fix `tokenizer` in the spec")
    if tokenizer_fingerprint(tokenizer) != curation["tokenizer_fingerprint"]:
        raise UserError(f"mixture '{spec.name}': tokenizer {tokenizer} differs from the one the data was curated "
                        f"with ({curation['tokenizer']}); use that one or re-run `loom curate`")
    return tokenizer


def data_tokenizer(mixture: str, ws: Workspace, curation: dict) -> Path:
    """The tokenizer the data was curated with: the workspace's models/tokenizer.json when it has the recorded
    fingerprint (so a copied or moved workspace, whose recorded path is elsewhere, builds as before), else the
    path curation.json records, checked by fingerprint."""
    for candidate in (ws.tokenizer, as_path(curation["tokenizer"])):
        if candidate.is_file() and tokenizer_fingerprint(candidate) == curation["tokenizer_fingerprint"]:
            return candidate
    raise UserError(f"mixture '{mixture}': the tokenizer the data was curated with ({curation['tokenizer']}) is "
                    f"gone or changed, and {ws.tokenizer} is another; put it back, or re-run `loom curate`")


def inside_workspace(tokenizer: Path, ws: Workspace) -> str | None:
    """A tokenizer's path as a spec names it, relative to the workspace; None (the data's) for one outside it."""
    root = path_text(ws.root).rstrip("/") + "/"
    path = path_text(tokenizer)
    return path[len(root):] if path.startswith(root) else None


def mixture_tokenizer(spec: MixtureSpec, ws: Workspace) -> Path:
    """The tokenizer a mixture reads the published data with (curated_tokenizer)."""
    return curated_tokenizer(spec, ws, read_curation(ws.published()))


def check_eval_sources(spec: MixtureSpec, sources: list[str]) -> None:
    for e in spec.evals:
        if e.source and e.source not in sources:
            raise UserError(f"mixture '{spec.name}': eval set '{e.name}' uses source '{e.source}', which no weight "
                            f"of the mixture reads; use one of {', '.join(sources)}")


def measured_stats(spec: MixtureSpec, con: duckdb.DuckDBPyConnection, component: Component,
                   validation: dict[str, dict]) -> dict:
    """A component's stats (plan.component_stats) with its validation tokens and, when rehydrated, its rules and
    its rehydration: tokens after over before (what its tokens and epochs are counted on is after)."""
    rules = spec.rehydration(component.key)
    documents, tokens, natural = count(con, component, rules)
    stats = {**component_stats(spec, component.key, documents, tokens),
             "validation_tokens": sum(validation[s]["tokens"] for s in component.sources)}
    if rules:  # a component without keeps the stats (and so the schedule) it had before [rehydrate]
        stats.update(rehydrate={str(t): r for t, r in rules}, rehydration=round(tokens / max(natural, 1), 6))
    return stats


def repeats_sql(rules: tuple[tuple[int, int], ...]) -> str:
    """SQL for how many times a document is repeated: the rule with the largest threshold its dup_count reaches."""
    if not rules:
        return "1"
    cases = " ".join(f"WHEN dup_count >= {threshold} THEN {repeats}" for threshold, repeats in reversed(rules))
    return f"(CASE {cases} ELSE 1 END)"


def check_dup_counts(spec: MixtureSpec, con: duckdb.DuckDBPyConnection) -> None:
    """A spec that rehydrates needs data curated with dup_count (every generation since issue 38's)."""
    columns = {d[0] for d in con.execute("SELECT * FROM documents LIMIT 0").description}
    if spec.rehydrate and "dup_count" not in columns:
        raise UserError(f"mixture '{spec.name}': [rehydrate] needs each document's dup_count, which the published "
                        "data predates; re-run `loom curate`, or drop [rehydrate]")


def count(con: duckdb.DuckDBPyConnection, component: Component,
          rules: tuple[tuple[int, int], ...] = ()) -> tuple[int, int, int]:
    """The training documents a component selects (its sources' held-out ones left out), their tokens as the
    mixture reads them (each document `repeats_sql` times) and their tokens once each."""
    documents, tokens, natural = con.execute(
        f"SELECT count(*), coalesce(sum(n_tokens * {repeats_sql(rules)}), 0), coalesce(sum(n_tokens), 0) "
        f"FROM training_documents WHERE {component.where}").fetchall()[0]
    return documents, int(tokens), int(natural)


def source_tokens(con: duckdb.DuckDBPyConnection, component: Component, rules: tuple[tuple[int, int], ...],
                  stats: dict[str, dict]) -> dict[str, int]:
    """A component's training tokens per source, as the mixture reads them (count's)."""
    if len(component.sources) == 1:
        return {component.sources[0]: stats[component.key]["tokens"]}
    return dict(con.execute(f"SELECT source, coalesce(sum(n_tokens * {repeats_sql(rules)}), 0)::BIGINT "
                            f"FROM training_documents WHERE {component.where} GROUP BY source ORDER BY source").fetchall())


def write_sequence_indexes(con: duckdb.DuckDBPyConnection, components: list[Component], stats: dict[str, dict],
                           out: Path, spec: MixtureSpec) -> list[dict]:
    """Per component, its training documents in shard and row order with their offsets into its packed token
    stream; returns the components as schedule.json records them. A rehydrated component's stream passes over
    its documents once per repeat, each pass holding those repeated at least that often, in shard and row order:
    a document's copies lie a whole pass apart, not side by side in one sequence (where a model would learn to
    copy the text it has just read rather than predict it) unless a pass is shorter than a sequence, and each pass
    reads the row groups in order. A component without [rehydrate] has one pass: the index it always had."""
    records = []
    for i, c in enumerate(components):
        index = con.sql(f"""
            SELECT shard, row, n_tokens, (sum(n_tokens) OVER (ORDER BY pass, shard, row) - n_tokens)::BIGINT AS offset
            FROM (SELECT shard, row, n_tokens, unnest(range({repeats_sql(spec.rehydration(c.key))})) AS pass
                  FROM training_documents WHERE {c.where})
            ORDER BY pass, shard, row
        """).to_arrow_table()
        file = sequences_file(i)
        write_parquet(index, out / file)
        records.append({"key": c.key, "sources": list(c.sources), "file": file, **stats[c.key]})
    return records


def check_current(meta: dict, ws: Workspace) -> Generation:
    """The generation a schedule reads; refused unless it is the published one, with the manifest and tokenizer
    the schedule was compiled against."""
    gen = ws.published()
    if meta.get("generation", "") != gen.id or meta["manifest_fingerprint"] != manifest_fingerprint(gen):
        raise UserError(f"mixture '{meta['name']}' was built on other curated data than {ws.root} publishes now "
                        f"(generation {gen.id or 'none'}); rebuild it with `loom mix build {meta['name']}`")
    if meta["tokenizer_fingerprint"] != read_curation(gen)["tokenizer_fingerprint"]:
        raise UserError(f"mixture '{meta['name']}' was built with another tokenizer; rebuild it")
    return gen
