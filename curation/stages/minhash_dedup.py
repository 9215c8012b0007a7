"""Stage 5, over all shards, on the cluster only: candidate pairs from shared LSH buckets, verified on the true
Jaccard of the documents' shingle sets (dedup_pairs), joined into clusters by distributed connected components
(dedup_components), each cluster keeping one survivor: highest quality, then smallest id (dedup_clusters); then
each kept document's dup_count from the clusters and exact dedup's copies (dedup_counts). The client holds counts
only: pairs, rounds, rows written, and the oversized clusters' ids for the report."""

from pathlib import Path

from dask import delayed

from base.done_markers import mark_done
from base.workspace import CLUSTERS_DIR, DUP_COUNTS_DIR
from curation.schema import DUP_COUNTS, NEAR_DUPLICATE_CLUSTERS, REMOVALS
from curation.stages.base import GlobalStage, settings_json
from curation.stages.dedup_clusters import REMOVED, cluster_members, removals
from curation.stages.dedup_components import EDGE_BYTES, component_labels, persisted
from curation.stages.dedup_counts import dup_counts
from curation.stages.dedup_pairs import candidate_pairs, verified_pairs
from curation.stages.exact_dedup import EXACT_DEDUP
from curation.stages.minhash import MINHASH
from curation.stages.parts import all_parts, partitions_by_size, shard_part, write_by_shard
from curation.stages.survivors import partitions_for


class MinHashDedup(GlobalStage):
    name = "minhash_dedup"
    on_client = True
    removes = True
    partitions = None  # of every shuffle; default from the data's size (parts.shuffle_partitions). Results do not depend on it

    def enabled(self, ctx) -> bool:
        """Off with `[dedup] enabled = false` (as is `minhash`): no clusters, and each kept document's dup_count is
        its exact copies (`exact_dedup` runs either way)."""
        return ctx.config.dedup.enabled

    def inputs(self, ctx) -> str:
        d = ctx.config.dedup
        return settings_json([d.threshold, d.max_cluster_size, "true-jaccard", "dup-counts"])

    def clusters_folder(self, ws) -> Path:
        """Every member of a cluster, a table by shard (the shard of the member)."""
        return ws.stage_dir(self.name) / CLUSTERS_DIR

    def clusters_path(self, ws) -> str:
        """All of the clusters table, as a glob for DuckDB."""
        return all_parts(self.clusters_folder(ws))

    def dup_counts_folder(self, ws) -> Path:
        """Each kept document whose dup_count is over 1, with it: a table by shard (what tokenize reads)."""
        return ws.stage_dir(self.name) / DUP_COUNTS_DIR

    def outputs(self, ws) -> list[Path]:
        return [*super().outputs(ws), self.clusters_folder(ws), self.dup_counts_folder(ws)]

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        config, ws = ctx.config.dedup, ctx.workspace
        partitions = partitions_for(ctx, shards, self.partitions)
        shingle_files = delayed([str(MINHASH.shingles_path(ws, s)) for s in shards])  # once in the graph
        candidates = persisted(client, candidate_pairs([str(MINHASH.bands_path(ws, s)) for s in shards], partitions))
        edges = persisted(client, verified_pairs(candidates, shingle_files, config.threshold, partitions))
        n_candidates, n_verified = client.compute([candidates.shape[0], edges.shape[0]], sync=True)
        edge_partitions = self.partitions or partitions_by_size(EDGE_BYTES * 2 * int(n_verified), partitions)
        labels, rounds = component_labels(client, edges, edge_partitions, n_nodes_hint=2 * int(n_verified))
        del candidates
        clusters = persisted(client, cluster_members(labels, [str(MINHASH.part_path(ws, s)) for s in shards],
                                                     shingle_files, config, partitions))
        n_members = write_by_shard(client, clusters, self.clusters_folder(ws), shards, NEAR_DUPLICATE_CLUSTERS,
                                   ["record"], self.name, partitions)
        n_removed = write_by_shard(client, clusters.map_partitions(removals, meta=REMOVED), self.removed_path(ws),
                                   shards, REMOVALS, ["record"], self.name, partitions)
        copy_files = [str(shard_part(EXACT_DEDUP.copies_folder(ws), s.source.name, s.index)) for s in shards]
        n_duplicated = write_by_shard(client, dup_counts(clusters, copy_files, partitions), self.dup_counts_folder(ws),
                                      shards, DUP_COUNTS, ["record"], f"{self.name}-counts", partitions)
        survivors = clusters[clusters["is_survivor"]]
        oversized = survivors[survivors["oversized"]][["cluster_id", "cluster_size"]]
        n_clusters, flagged = client.compute([survivors.shape[0], oversized], sync=True)
        stats = {"candidate_pairs": int(n_candidates), "verified_pairs": int(n_verified), "rounds": rounds,
                 "clusters": int(n_clusters), "members": n_members, "removed": n_removed,
                 "kept_with_duplicates": n_duplicated,
                 "oversized": [{"cluster_id": c, "size": int(n)} for c, n in
                               sorted(zip(flagged["cluster_id"], flagged["cluster_size"]))]}
        mark_done(self.marker(ws), fingerprint, stats)
        return stats


MINHASH_DEDUP = MinHashDedup()
