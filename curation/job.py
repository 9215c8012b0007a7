"""The curation job: stages over input shards as Dask tasks. Every output is written atomically and marked
done with a fingerprint of what it was made from, so a rerun skips finished shards and redoes the rest."""

import functools
import json
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Callable, Iterator

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from loom.io import done_stats, text_digest, mark_done, parquet_writer, write_parquet, write_text
from curation.config import DedupConfig, QualityConfig, SourceConfig
from curation.dedup import (BANDS, band_keys, connected_components, doc_key, estimated_jaccard,
                            pairs_in_buckets, signature_schema, signatures, verify_pairs)
from loom.workspace import Workspace
from curation.readers import check_readable, read_shard
from curation.schema import CURATED, EXACT_DUPLICATES, FUNNEL, NEAR_DUPLICATE_CLUSTERS, PREPARED, QUALITY_SELECTION
from curation.steps import Doc, document_steps
from curation.tokenizer import encode_to_arrow, load_tokenizer

CODE_VERSION = "1"  # bump when a stage's output changes for the same inputs, so reruns redo it
WRITE_BATCH = 1000
TOKENIZE_BATCH = 512


@dataclass(frozen=True)
class Shard:
    source: SourceConfig
    index: int
    input: str
    rank: int  # the source's place in sources.toml; earlier sources keep the copy of an exact duplicate

    @property
    def key(self) -> str:
        return f"{self.source.name}/part-{self.index:05d}"


@dataclass(frozen=True)
class JobContext:
    layout: Workspace
    tokenizer: str
    quality_model: str | None = None  # no model: no scores, no buckets
    quality: QualityConfig = QualityConfig()
    dedup: DedupConfig = DedupConfig()
    stage_inputs: tuple[tuple[str, str], ...] = ()  # (stage, fingerprint of what else it reads): models, configs

    def stage_input(self, stage: str) -> str:
        return dict(self.stage_inputs).get(stage, "")


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable
    per_shard: bool  # one task per shard, or one task that sees every shard
    on_client: bool = False  # a global stage that builds its own Dask graph from the client


def plan_shards(sources: list[SourceConfig]) -> list[Shard]:
    """Every input shard, checked to be readable before any compute is spent on it."""
    shards = []
    for rank, source in enumerate(sources):
        for index, path in enumerate(source.shard_paths()):
            check_readable(source, path)
            shards.append(Shard(source=source, index=index, input=str(path), rank=rank))
    return shards


# ---- stage 1: read -> extract -> language -> heuristic filters, per shard -------------------------------


class FunnelRecorder:
    """Collects one funnel row per input record of a shard, and the quarantine rows of malformed ones."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.rows: list[dict] = []
        self.quarantine: list[dict] = []

    def _row(self, record: int, doc_id, fate: str, stage: str, reason: str | None, detail: str, lang) -> None:
        self.rows.append(
            {"source": self.shard.source.name, "shard": self.shard.index, "input": self.shard.input, "record": record,
             "doc_id": doc_id, "fate": fate, "stage": stage, "reason": reason, "detail": detail or None, "lang": lang}
        )

    def malformed(self, record) -> None:
        self._row(record.index, None, "malformed", "read", record.problem, record.detail, None)
        self.quarantine.append({"input": self.shard.input, "record": record.index, "reason": record.problem,
                                "detail": record.detail, "raw": record.raw})

    def remove(self, doc: Doc, stage: str, reason: str, fate: str = "filtered", detail: str = "") -> None:
        self._row(doc.record, doc.id, fate, stage, reason, detail, doc.lang)

    def kept(self, doc: Doc) -> None:
        self._row(doc.record, doc.id, "kept", "", None, "", doc.lang)

    def table(self) -> pa.Table:
        rows = sorted(self.rows, key=lambda row: row["record"])
        return pa.Table.from_pylist(rows, schema=FUNNEL)


@functools.cache
def _steps_for(source_json: str, quality_model: str | None) -> list:
    return document_steps(SourceConfig(**json.loads(source_json)), quality_model)


def steps_for(source: SourceConfig, quality_model: str | None = None) -> list:
    """The document steps of a source, built once per worker process (models load once)."""
    return _steps_for(json.dumps(asdict(source), sort_keys=True), quality_model)


def prepare_shard(ctx: JobContext, shard: Shard, fingerprint: str) -> dict:
    layout = ctx.layout
    funnel = FunnelRecorder(shard)

    def good_records() -> Iterator[Doc]:
        for record in read_shard(shard.source, Path(shard.input)):
            if record.problem:
                funnel.malformed(record)
            else:
                yield Doc(record=record.index, text=record.text, meta=record.meta)

    docs = good_records()
    for step in steps_for(shard.source, ctx.quality_model):
        docs = step.run(docs, funnel)
    n_kept = 0
    with parquet_writer(layout.stage_part("prepare", shard.source.name, shard.index), PREPARED) as writer:
        while batch := list(islice(docs, WRITE_BATCH)):
            writer.write_table(_prepared_table(batch))
            for doc in batch:
                funnel.kept(doc)
            n_kept += len(batch)
    write_parquet(funnel.table(), layout.stage_part("funnel", shard.source.name, shard.index))
    quarantine = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in funnel.quarantine)
    write_text(quarantine, layout.quarantine_part(shard.source.name, shard.index))
    stats = {"records": len(funnel.rows), "kept": n_kept, "malformed": len(funnel.quarantine)}
    mark_done(layout.stage_part("prepare", shard.source.name, shard.index, "done"), fingerprint, stats)
    return stats


def _prepared_table(docs: list[Doc]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"record": d.record, "id": d.id, "text": d.text, "lang": d.lang, "lang_score": d.lang_score,
          "quality": d.quality, "n_chars": len(d.text), "meta": json.dumps(d.meta, ensure_ascii=False, default=str, sort_keys=True)}
         for d in docs],
        schema=PREPARED,
    )


def prepared_columns(ctx: JobContext, shards: list[Shard], columns: list[str]) -> pa.Table:
    """Some columns of every prepared shard, with the shard's source, index and rank added."""
    parts = []
    for shard in shards:
        table = pq.read_table(ctx.layout.stage_part("prepare", shard.source.name, shard.index), columns=columns)
        n = table.num_rows
        parts.append(table.append_column("source", pa.array([shard.source.name] * n, pa.string()))
                     .append_column("shard", pa.array([shard.index] * n, pa.int32()))
                     .append_column("rank", pa.array([shard.rank] * n, pa.int32())))
    return pa.concat_tables(parts)


# ---- stage 2: quality buckets and per-source selection by score, over all shards ------------------------


def quality_selection_path(layout: Workspace) -> Path:
    return layout.work / "quality_select" / "selection.parquet"


def quality_cut_points(scores: np.ndarray, config: QualityConfig) -> list[float]:
    if config.cut_points:
        return list(config.cut_points)
    if len(scores) == 0:
        return []
    return [float(q) for q in np.quantile(scores, [i / config.buckets for i in range(1, config.buckets)])]


def quality_select(ctx: JobContext, shards: list[Shard], fingerprint: str) -> dict:
    """Each scored document's bucket, and the documents a source's `quality_threshold` or `keep_fraction`
    removes (ranked by score, then id, so ties are cut deterministically)."""
    docs = prepared_columns(ctx, shards, ["record", "id", "quality"])
    scores = docs["quality"].to_numpy(zero_copy_only=False)
    scored = ~np.isnan(scores.astype(np.float64))
    cuts = quality_cut_points(scores[scored], ctx.quality)
    buckets = np.where(scored, np.searchsorted(np.array(cuts), np.nan_to_num(scores), side="right"), -1)
    reasons: list = [None] * docs.num_rows
    details: list = [None] * docs.num_rows
    source_column = np.array(docs["source"].to_pylist(), dtype=object)
    ids = docs["id"].to_pylist()
    for source in {s.source.name: s.source for s in shards}.values():
        rows = np.flatnonzero((source_column == source.name) & scored)
        if source.quality_threshold is not None:
            for row in rows[scores[rows] < source.quality_threshold]:
                reasons[row] = "below_threshold"
                details[row] = f"quality {scores[row]:.4f} < {source.quality_threshold}"
        elif source.keep_fraction is not None and len(rows):
            ranked = sorted(rows, key=lambda row: (-scores[row], ids[row]))
            keep = round(source.keep_fraction * len(ranked))
            for place, row in enumerate(ranked[keep:], start=keep + 1):
                reasons[row] = "below_keep_fraction"
                details[row] = f"rank {place} of {len(ranked)} by quality; keep_fraction keeps {keep}"
    selection = pa.table({
        "source": docs["source"], "shard": docs["shard"], "record": docs["record"],
        "quality_bucket": pa.array(buckets, pa.int16(), mask=~scored),
        "low_quality": pa.array(reasons, pa.string()), "detail": pa.array(details, pa.string()),
    }, schema=QUALITY_SELECTION)
    write_parquet(selection, quality_selection_path(ctx.layout))
    stats = {"cut_points": cuts, "scored": int(scored.sum()), "removed": sum(r is not None for r in reasons)}
    mark_done(ctx.layout.work / "quality_select" / "_done", fingerprint, stats)
    return stats


# ---- stage 3: exact dedup over all shards -----------------------------------------------------------------


def exact_duplicates_path(layout: Workspace) -> Path:
    return layout.work / "exact_dedup" / "duplicates.parquet"


def exact_dedup(ctx: JobContext, shards: list[Shard], fingerprint: str) -> dict:
    """Documents whose normalized text (so, id) appeared before: in an earlier source, shard or record.
    Documents removed for their quality score take no part."""
    con = duckdb.connect()
    con.register("prepared", prepared_columns(ctx, shards, ["record", "id"]))
    con.register("selection", pq.read_table(quality_selection_path(ctx.layout)))
    con.execute("CREATE VIEW docs AS SELECT p.* FROM prepared p JOIN selection s USING (source, shard, record) "
                "WHERE s.low_quality IS NULL")
    duplicates = con.sql(
        """
        SELECT source, shard, record, id AS doc_id, survivor FROM (
            SELECT *, row_number() OVER w AS copy,
                   first_value(source || '/part-' || lpad(shard::VARCHAR, 5, '0') || '#' || record) OVER w AS survivor
            FROM docs WINDOW w AS (PARTITION BY id ORDER BY rank, shard, record)
        ) WHERE copy > 1 ORDER BY rank, shard, record
        """
    ).to_arrow_table()
    write_parquet(duplicates.cast(EXACT_DUPLICATES), exact_duplicates_path(ctx.layout))
    stats = {"duplicates": duplicates.num_rows}
    mark_done(ctx.layout.work / "exact_dedup" / "_done", fingerprint, stats)
    return stats


# ---- stages 4 and 5: MinHash signatures per shard, then near-duplicate clusters over all of them ----------


def near_duplicates_path(layout: Workspace) -> Path:
    return layout.work / "minhash_dedup" / "removed.parquet"


def near_duplicate_clusters_path(layout: Workspace) -> Path:
    return layout.work / "minhash_dedup" / "clusters.parquet"


def minhash_shard(ctx: JobContext, shard: Shard, fingerprint: str) -> dict:
    """Signatures and LSH band keys of the documents that survived the stages before."""
    config, layout = ctx.dedup, ctx.layout
    salt = shard.source.name if config.scope == "per-source" else ""
    n = 0
    with parquet_writer(layout.stage_part("minhash", shard.source.name, shard.index), signature_schema(config)) as sig_out, \
            parquet_writer(layout.stage_part("minhash_bands", shard.source.name, shard.index), BANDS) as band_out:
        batches = surviving_batches(layout, shard, near_duplicates=False, batch_size=WRITE_BATCH,
                                    columns=["record", "id", "text", "quality"]) if config.enabled else []
        for docs in batches:
            sigs = signatures(docs["text"].to_pylist(), config)
            keys = np.array([doc_key(i) for i in docs["id"].to_pylist()], dtype=np.int64)
            sig_out.write_table(pa.table({
                "key": keys, "id": docs["id"], "source": pa.array([shard.source.name] * len(keys), pa.string()),
                "shard": pa.array([shard.index] * len(keys), pa.int32()), "record": docs["record"],
                "quality": docs["quality"], "sig": pa.array([row.tobytes() for row in sigs], pa.binary(4 * config.num_perm)),
            }, schema=signature_schema(config)))
            band_out.write_table(pa.table({
                "band": np.tile(np.arange(config.bands, dtype=np.int16), len(keys)),
                "bucket": band_keys(sigs, config, salt).ravel(), "key": np.repeat(keys, config.bands),
            }, schema=BANDS))
            n += len(keys)
    stats = {"signatures": n}
    mark_done(layout.stage_part("minhash", shard.source.name, shard.index, "done"), fingerprint, stats)
    return stats


def verified_edges(ctx: JobContext, shards: list[Shard], client):
    """Candidate pairs from shared LSH buckets, verified on the full signatures, all on the cluster."""
    import dask.dataframe as dd

    layout = ctx.layout
    sig_files = [str(layout.stage_part("minhash", s.source.name, s.index)) for s in shards]
    band_files = [str(layout.stage_part("minhash_bands", s.source.name, s.index)) for s in shards]
    partitions = max(1, len(shards))
    pair_meta = pd.DataFrame({"a": pd.Series(dtype=np.int64), "b": pd.Series(dtype=np.int64)})
    bands = dd.read_parquet(band_files)
    candidates = (bands.shuffle(on=["band", "bucket"], npartitions=partitions)
                  .map_partitions(pairs_in_buckets, meta=pair_meta)
                  .shuffle(on=["a", "b"], npartitions=partitions)
                  .map_partitions(pd.DataFrame.drop_duplicates, meta=pair_meta))
    sigs = dd.read_parquet(sig_files, columns=["key", "sig"])
    joined = (candidates.merge(sigs.rename(columns={"key": "a", "sig": "sig_a"}), on="a")
              .merge(sigs.rename(columns={"key": "b", "sig": "sig_b"}), on="b"))
    verified = joined.map_partitions(verify_pairs, ctx.dedup.threshold,
                                     meta={"a": np.int64, "b": np.int64, "jaccard": np.float64})
    edges, n_candidates = client.compute([verified, candidates.shape[0]], sync=True)
    return edges, int(n_candidates)


def _members(ctx: JobContext, shards: list[Shard], keys: np.ndarray) -> pa.Table:
    """Signature rows of the given documents only, read shard by shard."""
    wanted = pa.array(keys, pa.int64())
    parts = []
    for shard in shards:
        table = pq.read_table(ctx.layout.stage_part("minhash", shard.source.name, shard.index))
        parts.append(table.filter(pc.is_in(table["key"], wanted)))
    return pa.concat_tables(parts).sort_by("key")


def minhash_dedup(ctx: JobContext, shards: list[Shard], fingerprint: str, client) -> dict:
    """Clusters of verified near duplicates; one survivor each (highest quality, then smallest id)."""
    config = ctx.dedup
    edges, n_candidates = verified_edges(ctx, shards, client) if config.enabled else (pd.DataFrame({"a": [], "b": []}), 0)
    roots = connected_components(edges["a"].to_numpy(np.int64), edges["b"].to_numpy(np.int64))
    members = _members(ctx, shards, np.array(sorted(roots), dtype=np.int64)).to_pylist()
    by_cluster: dict[int, list[dict]] = {}
    for member in members:
        by_cluster.setdefault(roots[member["key"]], []).append(member)
    rows, oversized = [], []
    for cluster in by_cluster.values():
        survivor = min(cluster, key=lambda m: (-(m["quality"] if m["quality"] is not None else -1.0), m["id"]))
        survivor_sig = np.frombuffer(survivor["sig"], dtype=np.uint32)
        too_big = len(cluster) > config.max_cluster_size
        if too_big:
            oversized.append({"cluster_id": survivor["id"], "size": len(cluster)})
        for m in cluster:
            jaccard = float(estimated_jaccard(np.frombuffer(m["sig"], dtype=np.uint32), survivor_sig))
            is_survivor = m is survivor
            rows.append({"cluster_id": survivor["id"], "member_id": m["id"], "source": m["source"], "shard": m["shard"],
                         "record": m["record"], "is_survivor": is_survivor, "jaccard_to_survivor": jaccard,
                         "removed": not is_survivor and (not too_big or jaccard >= config.threshold),
                         "cluster_size": len(cluster), "oversized": too_big})
    clusters = pa.Table.from_pylist(rows, schema=NEAR_DUPLICATE_CLUSTERS).sort_by([("cluster_id", "ascending"),
                                                                                  ("member_id", "ascending")])
    write_parquet(clusters, near_duplicate_clusters_path(ctx.layout))
    removed = clusters.filter(clusters["removed"]).select(["source", "shard", "record", "member_id", "cluster_id",
                                                           "jaccard_to_survivor"])
    write_parquet(removed, near_duplicates_path(ctx.layout))
    stats = {"candidate_pairs": n_candidates, "verified_pairs": len(edges), "clusters": len(by_cluster),
             "removed": removed.num_rows, "oversized": oversized}
    mark_done(ctx.layout.work / "minhash_dedup" / "_done", fingerprint, stats)
    return stats


# ---- stage 6: tokenize the survivors and write the curated Parquet ----------------------------------------


def _shard_rows(path: Path, shard: Shard, columns: list[str]) -> pa.Table:
    return pq.read_table(path, columns=columns, filters=[("source", "==", shard.source.name), ("shard", "==", shard.index)])


def removed_records(layout: Workspace, shard: Shard, near_duplicates: bool) -> pa.Array:
    """Records of a shard that a global stage removed: for their score, as exact duplicates, and (once
    MinHash dedup has run) as near duplicates."""
    selection = _shard_rows(quality_selection_path(layout), shard, ["record", "low_quality"])
    removed = [selection.filter(pc.is_valid(selection["low_quality"]))["record"],
               _shard_rows(exact_duplicates_path(layout), shard, ["record"])["record"]]
    if near_duplicates:
        removed.append(_shard_rows(near_duplicates_path(layout), shard, ["record"])["record"])
    return pa.concat_arrays([column.combine_chunks() for column in removed]).cast(pa.int64())


def surviving_batches(layout: Workspace, shard: Shard, near_duplicates: bool, batch_size: int,
                      columns: list[str] | None = None) -> Iterator[pa.Table]:
    dropped = removed_records(layout, shard, near_duplicates)
    prepared = pq.ParquetFile(layout.stage_part("prepare", shard.source.name, shard.index))
    for batch in prepared.iter_batches(batch_size=batch_size, columns=columns):
        docs = pa.Table.from_batches([batch]).filter(pc.invert(pc.is_in(batch["record"], dropped)))
        if docs.num_rows:
            yield docs


def tokenize_shard(ctx: JobContext, shard: Shard, fingerprint: str) -> dict:
    layout = ctx.layout
    tokenizer, eos_id = load_tokenizer(ctx.tokenizer)
    selection = _shard_rows(quality_selection_path(layout), shard, ["record", "quality_bucket"])
    clusters = _shard_rows(near_duplicate_clusters_path(layout), shard, ["record", "cluster_id"])
    out = layout.curated_part(shard.source.name, shard.index)
    n_docs = n_tokens = 0
    with parquet_writer(out, CURATED) as writer:
        for docs in surviving_batches(layout, shard, near_duplicates=True, batch_size=TOKENIZE_BATCH):
            input_ids = encode_to_arrow(tokenizer, eos_id, docs["text"].to_pylist())
            lengths = pc.list_value_length(input_ids).cast(pa.int64())
            buckets = pc.take(selection["quality_bucket"], pc.index_in(docs["record"], selection["record"]))
            cluster = pc.take(clusters["cluster_id"], pc.index_in(docs["record"], clusters["record"]))
            writer.write_table(_curated_table(shard.source.name, docs, input_ids, lengths, buckets, cluster))
            n_docs += docs.num_rows
            n_tokens += pc.sum(lengths).as_py()
    stats = {"docs": n_docs, "tokens": n_tokens, "bytes": out.stat().st_size}
    mark_done(layout.stage_part("tokenize", shard.source.name, shard.index, "done"), fingerprint, stats)
    return stats


def _curated_table(source: str, docs: pa.Table, input_ids, lengths, buckets, cluster) -> pa.Table:
    n = docs.num_rows
    columns = {
        "id": docs["id"], "source": pa.array([source] * n, pa.string()), "text": docs["text"],
        "lang": docs["lang"], "lang_score": docs["lang_score"], "quality": docs["quality"],
        "quality_bucket": buckets, "dup_cluster": cluster,
        "n_chars": docs["n_chars"], "n_tokens": lengths, "input_ids": input_ids, "meta": docs["meta"],
    }
    return pa.table(columns, schema=CURATED)


# ---- the job --------------------------------------------------------------------------------------------

STAGES = (
    # The order of curation, in one place. Quality scoring ends the per-document steps of `prepare`, so that
    # selection by score and then dedup see every score; global MinHash dedup follows exact dedup.
    Stage("prepare", prepare_shard, per_shard=True),
    Stage("quality_select", quality_select, per_shard=False),
    Stage("exact_dedup", exact_dedup, per_shard=False),
    Stage("minhash", minhash_shard, per_shard=True),
    Stage("minhash_dedup", minhash_dedup, per_shard=False, on_client=True),
    Stage("tokenize", tokenize_shard, per_shard=True),
)


def input_fingerprint(shard: Shard) -> str:
    """What a shard's first stage depends on: the source's config and the input's files, sizes and times."""
    path = Path(shard.input)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    listing = [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]
    config = {k: v for k, v in asdict(shard.source).items() if k != "base_dir"}
    return text_digest(CODE_VERSION, json.dumps(config, sort_keys=True), str(shard.index), *listing)


def stage_marker(layout: Workspace, stage: Stage, shard: Shard | None = None) -> Path:
    if shard is None:
        return layout.work / stage.name / "_done"
    return layout.stage_part(stage.name, shard.source.name, shard.index, "done")


def run_curation(shards: list[Shard], ctx: JobContext, client, progress=None) -> dict[str, dict]:
    """Runs every stage; returns the tokenize stats of each shard by key. `progress(stage, total)` gives a
    callable to advance per finished shard."""
    from distributed import as_completed

    upstream = {s.key: input_fingerprint(s) for s in shards}
    for stage in STAGES:
        extra = ctx.stage_input(stage.name)
        if stage.per_shard:
            fingerprints = {s.key: text_digest(stage.name, upstream[s.key], extra) for s in shards}
            todo = [s for s in shards if done_stats(stage_marker(ctx.layout, stage, s), fingerprints[s.key]) is None]
            advance = progress(stage.name, len(shards)) if progress else (lambda n=1: None)
            advance(len(shards) - len(todo))
            futures = [client.submit(stage.run, ctx, s, fingerprints[s.key], key=f"{stage.name}-{s.key}-{fingerprints[s.key]}")
                       for s in todo]
            for future in as_completed(futures):
                future.result()
                advance(1)
            upstream = fingerprints
        else:
            fingerprint = text_digest(stage.name, extra, *(upstream[s.key] for s in shards))
            advance = progress(stage.name, 1) if progress else (lambda n=1: None)
            if done_stats(stage_marker(ctx.layout, stage), fingerprint) is None:
                if stage.on_client:
                    stage.run(ctx, shards, fingerprint, client)
                else:
                    client.submit(stage.run, ctx, shards, fingerprint, key=f"{stage.name}-{fingerprint}").result()
            advance(1)
            upstream = {s.key: text_digest(fingerprint, s.key) for s in shards}
    tokenize = STAGES[-1]
    return {s.key: done_stats(stage_marker(ctx.layout, tokenize, s), upstream[s.key]) for s in shards}
