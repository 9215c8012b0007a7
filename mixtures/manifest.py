"""What a mixture reads of a published generation of curated data: what it was curated with, a fingerprint of its
shards, which source each shard holds, and its documents as a DuckDB view."""

import hashlib
import json

import duckdb

from base.errors import UserError
from base.parquet_files import read_parquet
from base.sql import duckdb_connect, literal
from base.workspace import Generation


def read_curation(gen: Generation) -> dict:
    path = gen.curation_info
    if not path.is_file():
        raise UserError(f"no curated data in {gen.root} (no {path}); run `loom curate` first")
    return with_annotator_columns(json.loads(path.read_text()))


def with_annotator_columns(curation: dict) -> dict:
    """curation.json with each source's annotator columns (`columns`: NAME, and NAME_bucket where it has buckets)
    from its `annotators`, so that a slice on `edu_bucket` is checked against the sources an annotator covers."""
    for annotator in curation.get("annotators") or ():
        columns = [annotator["name"]] + ([f"{annotator['name']}_bucket"] if annotator.get("buckets", 0) > 1 else [])
        for name in annotator.get("sources") or list(curation["sources"]):
            if name in curation["sources"]:
                curation["sources"][name].setdefault("columns", []).extend(columns)
    return curation


def manifest_fingerprint(gen: Generation) -> str:
    con = duckdb_connect(gen.root)
    shards = con.sql(f"SELECT fingerprint FROM read_parquet({literal(gen.manifest_table('shards'))}) ORDER BY path")
    return hashlib.sha256("\n".join(r[0] for r in shards.fetchall()).encode()).hexdigest()[:24]


def shard_sources(gen: Generation) -> dict[str, str]:
    """The source of each curated shard, by its path relative to the generation (as sequence indexes name it)."""
    shards = read_parquet(gen.manifest_table("shards"), columns=["path", "source"])
    return dict(zip(shards["path"].to_pylist(), shards["source"].to_pylist()))


def documents(gen: Generation) -> duckdb.DuckDBPyConnection:
    """A connection with the manifest's documents (one row per kept document, no text) as the view `documents`."""
    con = duckdb_connect(gen.root)
    con.execute(f"CREATE VIEW documents AS SELECT * FROM read_parquet({literal(gen.manifest_files('documents'))})")
    return con
