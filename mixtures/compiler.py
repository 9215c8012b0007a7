"""Compile a mixture spec against a workspace's manifest: resolve keys, plan tokens per phase and component,
check epochs, and write the schedule a trainer reads."""

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
from tokenizers import Tokenizer

from loom.io import write_parquet, write_text
from loom.errors import UserError
from loom.workspace import Workspace
from curation.tokenizer import tokenizer_fingerprint
from mixtures.schedule import largest_remainder
from mixtures.spec import MixtureSpec, to_toml

SLICE = re.compile(r"^(?P<source>[a-z0-9_-]+):(?P<column>[a-z_]+)\s*(?P<op>>=|<=|!=|=|>|<)\s*(?P<value>.+)$")
SLICE_COLUMNS = {"lang", "lang_score", "quality", "quality_bucket", "n_tokens", "n_chars"}
PLAN = pa.schema([
    ("phase", pa.string()), ("component", pa.string()), ("sources", pa.string()), ("weight", pa.float64()),
    ("target_share", pa.float64()), ("realized_share", pa.float64()), ("sequences_per_step", pa.int32()),
    ("steps", pa.int64()), ("sequences", pa.int64()), ("tokens", pa.int64()), ("epochs_cumulative", pa.float64()),
    ("available_sequences", pa.int64()), ("available_tokens", pa.int64()), ("documents", pa.int64()),
])


@dataclass(frozen=True)
class Component:
    key: str
    where: str  # SQL over the manifest's documents
    sources: tuple[str, ...]


def manifest_fingerprint(layout: Workspace) -> str:
    shards = duckdb.sql(f"SELECT fingerprint FROM read_parquet('{layout.manifest / 'shards.parquet'}') ORDER BY path")
    return hashlib.sha256("\n".join(r[0] for r in shards.fetchall()).encode()).hexdigest()[:24]


def read_curation(layout: Workspace) -> dict:
    path = layout.manifest / "curation.json"
    if not path.is_file():
        raise UserError(f"no curated data in {layout.root} (no {path}); run `loom curate` first")
    return json.loads(path.read_text())


def resolve(key: str, sources: dict[str, dict]) -> Component:
    """A weight's key: a source, a tag of sources, or a slice `source:column op value`."""
    if key in sources:
        return Component(key, f"source = '{key}'", (key,))
    tagged = tuple(sorted(name for name, info in sources.items() if key in info["tags"]))
    if tagged:
        names = ", ".join(f"'{n}'" for n in tagged)
        return Component(key, f"source IN ({names})", tagged)
    match = SLICE.match(key)
    if not match:
        raise UserError(f"weight key '{key}' is not a source, a tag or a slice like 'web:quality_bucket>=3'; "
                        f"sources: {', '.join(sorted(sources))}")
    source, column, op, value = match["source"], match["column"], match["op"], match["value"].strip()
    if source not in sources:
        raise UserError(f"weight key '{key}': no source '{source}'; sources: {', '.join(sorted(sources))}")
    if column not in SLICE_COLUMNS:
        raise UserError(f"weight key '{key}': cannot slice on '{column}'; use one of {', '.join(sorted(SLICE_COLUMNS))}")
    literal = value if re.fullmatch(r"-?\d+(\.\d+)?", value) else "'" + value.strip("'\"").replace("'", "''") + "'"
    return Component(key, f"source = '{source}' AND {column} {op} {literal}", (source,))


def plan_phases(spec: MixtureSpec, keys: list[str], steps: int) -> list[dict]:
    """Each phase's steps (the switch at round(cumulative fraction x steps); every step is a block, so the
    switch needs no snapping) and its sequences per batch for each key (largest remainder of its share)."""
    phases, start, cumulative = [], 0, 0.0
    for i, phase in enumerate(spec.phases):
        cumulative += phase.fraction
        end = steps if i == len(spec.phases) - 1 else round(cumulative * steps)
        if end <= start:
            raise UserError(f"mixture '{spec.name}': phase '{phase.name}' gets no steps of {steps}; raise the budget")
        weights = dict(phase.weights)
        shares = [weights.get(k, 0.0) for k in keys]
        counts = largest_remainder(shares, spec.global_batch)
        for key, share, count in zip(keys, shares, counts):
            if share > 0 and count == 0:
                raise UserError(f"mixture '{spec.name}': in phase '{phase.name}', '{key}' rounds to 0 of "
                                f"{spec.global_batch} sequences per batch; raise global_batch or its weight")
        phases.append({"name": phase.name, "start_step": start, "end_step": end, "counts": counts, "shares": shares})
        start = end
    return phases


def compile_mixture(spec: MixtureSpec, layout: Workspace, out: Path) -> dict:
    curation = read_curation(layout)
    tokenizer = layout.root / spec.tokenizer
    if not tokenizer.is_file():
        raise UserError(f"mixture '{spec.name}': no tokenizer at {tokenizer}; fix `tokenizer` in the spec")
    if tokenizer_fingerprint(tokenizer) != curation["tokenizer_fingerprint"]:
        raise UserError(f"mixture '{spec.name}': tokenizer {tokenizer} differs from the one the data was curated "
                        f"with ({curation['tokenizer']}); use that one or re-run `loom curate`")
    keys = list(dict.fromkeys(key for phase in spec.phases for key, _ in phase.weights))
    components = [resolve(key, curation["sources"]) for key in keys]
    con = duckdb.connect()
    con.execute(f"CREATE VIEW documents AS SELECT * FROM read_parquet('{layout.manifest / 'documents.parquet'}')")
    stats = {}
    for c in components:
        docs, tokens = con.execute(f"SELECT count(*), coalesce(sum(n_tokens), 0) FROM documents WHERE {c.where}").fetchall()[0]
        if docs == 0:
            raise UserError(f"mixture '{spec.name}': weight key '{c.key}' matches no documents; check it against "
                            "`loom mix show` or the manifest")
        sequences = int(tokens) // (spec.seq_len + 1)
        held_out = min(spec.validation_sequences, sequences // 10)
        # the last sequences of the component's stream are held out: training permutes only the ones before them
        stats[c.key] = {"documents": docs, "tokens": int(tokens), "available_sequences": sequences - held_out,
                        "validation_sequences": held_out}
        if stats[c.key]["available_sequences"] == 0:
            raise UserError(f"mixture '{spec.name}': '{c.key}' has {tokens} tokens, less than one sequence of "
                            f"{spec.seq_len + 1}; lower seq_len or drop it")
    steps = spec.resolved_steps()
    phases = plan_phases(spec, keys, steps)
    plan_rows, used = [], {k: 0 for k in keys}
    for phase in phases:
        n_steps = phase["end_step"] - phase["start_step"]
        total_share = sum(phase["shares"])
        for c, share, count in zip(components, phase["shares"], phase["counts"]):
            if share == 0:
                continue
            used[c.key] += count * n_steps
            epochs = used[c.key] / stats[c.key]["available_sequences"]
            if epochs > spec.max_epochs:
                raise UserError(f"mixture '{spec.name}': '{c.key}' would be read {epochs:.2f} times by the end of "
                                f"'{phase['name']}', over max_epochs = {spec.max_epochs:g}; lower its weight or the "
                                "budget, or raise max_epochs")
            plan_rows.append({
                "phase": phase["name"], "component": c.key, "sources": ",".join(c.sources), "weight": share,
                "target_share": share / total_share, "realized_share": count / spec.global_batch,
                "sequences_per_step": count, "steps": n_steps, "sequences": count * n_steps,
                "tokens": count * n_steps * spec.seq_len, "epochs_cumulative": round(epochs, 6),
                "available_sequences": stats[c.key]["available_sequences"], "available_tokens": stats[c.key]["tokens"],
                "documents": stats[c.key]["documents"],
            })
    out.mkdir(parents=True, exist_ok=True)
    (out / "sequences").mkdir(exist_ok=True)
    meta_components = []
    for i, c in enumerate(components):
        index = con.sql(f"""
            SELECT shard, row, n_tokens, (sum(n_tokens) OVER (ORDER BY shard, row) - n_tokens)::BIGINT AS offset
            FROM documents WHERE {c.where} ORDER BY shard, row
        """).to_arrow_table()
        file = f"sequences/component-{i:03d}.parquet"
        write_parquet(index, out / file)
        meta_components.append({"key": c.key, "sources": list(c.sources), "file": file, **stats[c.key]})
    meta = {
        "name": spec.name, "seed": spec.seed, "seq_len": spec.seq_len, "global_batch": spec.global_batch,
        "steps": steps, "tokens": steps * spec.global_batch * spec.seq_len,
        "vocab_size": Tokenizer.from_file(str(tokenizer)).get_vocab_size(),
        "phases": [{k: p[k] for k in ("name", "start_step", "end_step", "counts")} for p in phases],
        "components": meta_components,
        "manifest_fingerprint": manifest_fingerprint(layout), "tokenizer_fingerprint": curation["tokenizer_fingerprint"],
        "workspace": str(layout.root),
    }
    write_parquet(pa.Table.from_pylist(plan_rows, schema=PLAN), out / "plan.parquet")
    write_text(to_toml(spec, {"steps": steps}, f"{meta['tokens']:,} tokens"), out / "mixture.toml")
    write_text(json.dumps(meta, indent=2), out / "schedule.json")
    return meta


def check_current(meta: dict, layout: Workspace) -> None:
    """Refuses a schedule compiled against other curated data or another tokenizer."""
    if meta["manifest_fingerprint"] != manifest_fingerprint(layout):
        raise UserError(f"mixture '{meta['name']}' was built on other curated data than {layout.root} holds now; "
                        f"rebuild it with `loom mix build {meta['name']}`")
    if meta["tokenizer_fingerprint"] != read_curation(layout)["tokenizer_fingerprint"]:
        raise UserError(f"mixture '{meta['name']}' was built with another tokenizer; rebuild it")
