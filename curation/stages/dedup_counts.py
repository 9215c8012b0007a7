"""Each kept document's dup_count, on Dask: how many documents its exact and near-duplicate clusters held.

Exact dedup keeps one copy of each text and writes its number of copies (exact_dedup's copies table, only those
over 1). A near-duplicate cluster's survivor then counts, over itself and the members removed in its favour, each
one's copies; a member that an oversized cluster keeps counts its own copies only. So every document that entered
dedup is counted by exactly one kept document: the dup_counts sum to the documents dedup saw. Members are
shuffled by cluster, so each cluster is summed where all its members are; no task reads every document."""

import numpy as np
import pandas as pd

from curation.stages.parts import read_parts

KEYS = ["source", "shard", "record"]
DUP_COUNTS = pd.DataFrame({"source": pd.Series(dtype=object), "shard": pd.Series(dtype=np.int32),
                           "record": pd.Series(dtype=np.int64), "dup_count": pd.Series(dtype=np.int32)})


def counted(rows: pd.DataFrame, counts) -> pd.DataFrame:
    return pd.DataFrame({"source": rows["source"].to_numpy(object), "shard": rows["shard"].to_numpy(np.int32),
                         "record": rows["record"].to_numpy(np.int64),
                         "dup_count": np.asarray(counts, dtype=np.int32)})


def cluster_dup_counts(part: pd.DataFrame) -> pd.DataFrame:
    """The kept members of the partition's clusters (all of a cluster's members are here) with their dup_count."""
    if part.empty:
        return DUP_COUNTS.copy()
    copies = part["copies"].fillna(1).to_numpy(np.int64)
    survivor, removed = part["is_survivor"].to_numpy(bool), part["removed"].to_numpy(bool)
    represented = pd.Series(np.where(survivor | removed, copies, 0), index=part.index)
    cluster_total = represented.groupby(part["cluster_id"].to_numpy()).transform("sum").to_numpy(np.int64)
    kept = ~removed
    return counted(part[kept], np.where(survivor, cluster_total, copies)[kept])


def outside_clusters(part: pd.DataFrame) -> pd.DataFrame:
    """Rows of the copies table that no cluster holds (`in_cluster` NaN after the left join), with their copies."""
    alone = part[part["in_cluster"].isna()]
    return counted(alone, alone["copies"].to_numpy(np.int64))


def dup_counts(clusters, copy_files: list[str], partitions: int):
    """Every kept document whose dup_count is over 1, as a lazy Dask frame (source, shard, record, dup_count), from
    the clusters frame (dedup_clusters.cluster_members) and the exact copies tables' parts."""
    import dask.dataframe as dd

    copies = read_parts(copy_files, partitions, columns=[*KEYS, "copies"]).astype({"source": object})  # as the clusters'
    members = clusters[[*KEYS, "cluster_id", "is_survivor", "removed"]].merge(copies, on=KEYS, how="left")
    in_clusters = (members.astype({"copies": np.float64}).shuffle(on="cluster_id", npartitions=partitions)
                   .map_partitions(cluster_dup_counts, meta=DUP_COUNTS))
    keys = clusters[KEYS].assign(in_cluster=np.int8(1))
    alone = copies.merge(keys, on=KEYS, how="left").map_partitions(outside_clusters, meta=DUP_COUNTS)
    both = dd.concat([in_clusters, alone])
    return both[both["dup_count"] > 1]
