"""Validation that never touches training: whole documents held out per source, chosen at compile time.

A source's documents are ordered by md5(seed, shard, row) (stable across DuckDB versions and machines, and
independent of which keys weigh the source); the held-out set is the shortest prefix of that order holding the
spec's token budget, stopped before any document that would take more than a tenth of the source's tokens.
Every component (a source, a tag, a slice) trains on the view `training_documents`, which leaves these
documents out, so slices and tags of a source share its one held-out set and a document is either validation
or training, never both."""

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from base.sql import literal_list
from mixtures.spec import MixtureSpec

MAX_SHARE = 10  # at most a tenth of a source's tokens is held out


def hold_out(con: duckdb.DuckDBPyConnection, spec: MixtureSpec, sources: list[str]) -> pa.Table:
    """The held-out documents of `sources` (source, shard, row, n_tokens, offset into the source's validation
    stream, in shard and row order); registers them as `held_out` and the rest as the view `training_documents`."""
    budget = spec.validation_budget()
    table = con.sql(f"""
        WITH ranked AS (
            SELECT source, shard, row, n_tokens,
                   sum(n_tokens) OVER (PARTITION BY source ORDER BY md5(concat({spec.seed}, ':', shard, ':', row)),
                                       shard, row) AS through,
                   sum(n_tokens) OVER (PARTITION BY source) AS source_tokens
            FROM documents WHERE source IN {literal_list(sorted(sources))}
        ), chosen AS (
            SELECT source, shard, row, n_tokens FROM ranked
            WHERE through - n_tokens < {budget} AND through * {MAX_SHARE} <= source_tokens
        )
        SELECT source, shard, row, n_tokens,
               (sum(n_tokens) OVER (PARTITION BY source ORDER BY shard, row) - n_tokens)::BIGINT AS offset
        FROM chosen ORDER BY source, shard, row
    """).to_arrow_table()
    con.register("held_out", table)
    con.execute("CREATE VIEW training_documents AS SELECT * FROM documents d "
                "WHERE NOT EXISTS (SELECT 1 FROM held_out h WHERE h.shard = d.shard AND h.row = d.row)")
    return table


def validation_counts(held_out: pa.Table, sources: list[str], seq_len: int) -> dict[str, dict]:
    """Per source: its held-out documents, their tokens, and the whole sequences of seq_len + 1 they pack into."""
    counts, rows = {}, list(zip(held_out["source"].to_pylist(), held_out["n_tokens"].to_pylist()))
    for source in sorted(sources):
        tokens = [n for s, n in rows if s == source]
        counts[source] = {"documents": len(tokens), "tokens": sum(tokens), "sequences": sum(tokens) // (seq_len + 1)}
    return counts


def source_rows(held_out: pa.Table, source: str) -> pa.Table:
    return held_out.filter(pc.equal(held_out["source"], source))
