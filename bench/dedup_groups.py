"""bench/dedup.py's dup_count check: how many planted groups (an original and its planted near copies) have one
kept member carrying the group's size, read from minhash_dedup's dup_counts table."""

from collections import Counter
from pathlib import Path

import numpy as np

from dedup_corpus import record_offsets


def loom_dup_counts(ws: Path, texts: list[str], lines: list[list[int]]) -> dict[int, int]:
    """Doc index -> dup_count of each kept document whose dup_count is over 1 (minhash_dedup's dup_counts)."""
    import pyarrow.parquet as pq
    from base.workspace import Workspace
    from curation.stages.minhash_dedup import MINHASH_DEDUP

    by_record = record_offsets([f"doc-{i:07d}" for i in range(len(texts))], texts, lines)
    table = pq.read_table(MINHASH_DEDUP.dup_counts_folder(Workspace(ws)), columns=["shard", "record", "dup_count"])
    return {by_record[r["shard"]][r["record"]]: r["dup_count"] for r in table.to_pylist()}


def oversized_clusters(ws: Path) -> set:
    """The ids of the clusters over `max_cluster_size`, which keep their members far from the survivor."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from base.workspace import Workspace
    from curation.stages.minhash_dedup import MINHASH_DEDUP

    table = pq.read_table(MINHASH_DEDUP.clusters_folder(Workspace(ws)), columns=["cluster_id", "oversized"])
    return set(pc.unique(table.filter(table["oversized"])["cluster_id"]).to_pylist())


def planted_groups_report(ws: Path, texts: list[str], lines, planted, removed: set, clusters: dict,
                          true_j: np.ndarray, threshold: float) -> None:
    """How many planted groups' one kept member carries the group's size (bench/dedup.py's docstring, 5); a group that Loom's
    cluster merged with others (originals that are near copies of each other) is counted apart, its survivor
    checked against the cluster's size."""
    counts = loom_dup_counts(ws, texts, lines)
    size = Counter(clusters.values())
    kept_in: dict = {}
    for d, c in clusters.items():
        if d not in removed:
            kept_in.setdefault(c, []).append(d)
    every, close = {}, {}
    for (original, copy, _), j in zip(planted, true_j):
        every.setdefault(original, [original]).append(copy)
        if j >= threshold:
            close.setdefault(original, [original]).append(copy)

    oversized = oversized_clusters(ws)

    def carried(groups: dict) -> str:
        right = merged = merged_right = in_oversized = 0
        for members in groups.values():
            kept = [d for d in members if d not in removed]
            cluster = {clusters.get(d) for d in members}
            if cluster & oversized:
                in_oversized += 1
                continue
            if len(cluster) == 1 and None not in cluster and size[cluster.pop()] > len(members):
                merged += 1
                survivor = kept_in.get(clusters[members[0]], [])
                merged_right += len(survivor) == 1 and counts.get(survivor[0], 1) == size[clusters[members[0]]]
            else:
                right += len(kept) == 1 and counts.get(kept[0], 1) == len(members)
        return (f"{right:,} of {len(groups) - merged - in_oversized:,} (and {merged_right:,} of {merged:,} merged with "
                f"other documents into one cluster carry its size; {in_oversized:,} in clusters over max_cluster_size)")

    survivors = [d for d in clusters if d not in removed and clusters[d] not in oversized]
    exact = sum(counts.get(d, 1) == size[clusters[d]] for d in survivors)
    kept_far = sum(1 for d in clusters if d not in removed and clusters[d] in oversized)
    print(f"dup_count: planted groups whose survivor carries the group's size: {carried(close)}, the groups of copies "
          f"with true Jaccard >= {threshold}; {carried(every)}, all planted groups (copies edited further stay "
          f"documents of their own); survivors carrying their cluster's size: {exact:,} of {len(survivors):,}, "
          f"besides {len(oversized):,} clusters over max_cluster_size ({sum(size[c] for c in oversized):,} members), "
          f"which keep {kept_far:,} members far from their survivor by design")
