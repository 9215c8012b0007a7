"""Stage 5, over all shards, on the cluster: candidate pairs from shared LSH buckets, verified on the full
signatures, joined into clusters on the client; each cluster keeps one survivor (highest quality, then
smallest id)."""

from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from curation.minhash import connected_components, estimated_jaccard, pairs_in_buckets, verify_pairs
from curation.schema import NEAR_DUPLICATE_CLUSTERS, REMOVALS
from curation.stages.base import GlobalStage, settings_json
from curation.stages.minhash import MINHASH
from loom.io import mark_done, read_parquet, write_parquet


class MinHashDedup(GlobalStage):
    name = "minhash_dedup"
    on_client = True
    removes = True

    def inputs(self, ctx) -> str:
        return settings_json([ctx.config.dedup.threshold, ctx.config.dedup.max_cluster_size])

    def clusters_path(self, ws) -> Path:
        return ws.stage_dir(self.name) / "clusters.parquet"

    def outputs(self, ws) -> list[Path]:
        return [*super().outputs(ws), self.clusters_path(ws)]

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        config, ws = ctx.config.dedup, ctx.workspace
        edges, n_candidates = verified_edges(ctx, shards, client) if config.enabled else (pd.DataFrame({"a": [], "b": []}), 0)
        roots = connected_components(edges["a"].to_numpy(np.int64), edges["b"].to_numpy(np.int64))
        members = signature_rows(ws, shards, np.array(sorted(roots), dtype=np.int64)).to_pylist()
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
        write_parquet(clusters, self.clusters_path(ws))
        removed = removals(clusters)
        write_parquet(removed, self.removed_path(ws))
        stats = {"candidate_pairs": n_candidates, "verified_pairs": len(edges), "clusters": len(by_cluster),
                 "removed": removed.num_rows, "oversized": oversized}
        mark_done(self.marker(ws), fingerprint, stats)
        return stats


def removals(clusters: pa.Table) -> pa.Table:
    """The removed members' fates, with the evidence: their cluster and estimated Jaccard to its survivor."""
    con = duckdb.connect()
    con.register("clusters", clusters)
    return con.sql("""
        SELECT source, shard, record, 'duplicate' AS fate, 'minhash_dedup' AS stage, 'near_duplicate' AS reason,
               'cluster ' || cluster_id || ', estimated Jaccard ' || round(jaccard_to_survivor, 3) || ' to its survivor'
                   AS detail,
               cluster_id AS dup_cluster
        FROM clusters WHERE removed ORDER BY cluster_id, member_id
    """).to_arrow_table().cast(REMOVALS)


def verified_edges(ctx, shards: list, client):
    """Candidate pairs from shared LSH buckets, verified on the full signatures, all on the cluster."""
    import dask.dataframe as dd

    ws = ctx.workspace
    sig_files = [str(MINHASH.part_path(ws, s)) for s in shards]
    band_files = [str(MINHASH.bands_path(ws, s)) for s in shards]
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
    verified = joined.map_partitions(verify_pairs, ctx.config.dedup.threshold,
                                     meta={"a": np.int64, "b": np.int64, "jaccard": np.float64})
    edges, n_candidates = client.compute([verified, candidates.shape[0]], sync=True)
    return edges, int(n_candidates)


def signature_rows(ws, shards: list, keys: np.ndarray) -> pa.Table:
    """Signature rows of the given documents only, read shard by shard."""
    wanted = pa.array(keys, pa.int64())
    parts = []
    for shard in shards:
        table = read_parquet(MINHASH.part_path(ws, shard))
        parts.append(table.filter(pc.is_in(table["key"], wanted)))
    return pa.concat_tables(parts).sort_by("key")


MINHASH_DEDUP = MinHashDedup()
