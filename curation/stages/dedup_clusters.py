"""Each near-duplicate cluster's survivor and fates, on Dask: members are shuffled by their cluster label, the
survivor is the highest quality, then the smallest id; each member's true Jaccard to its survivor comes from its
shingle set and its survivor's, read from the files that hold them (dedup_pairs.with_shingles). A cluster over
`max_cluster_size` is flagged, and only the members whose Jaccard to the survivor reaches the threshold are
removed."""

import numpy as np
import pandas as pd

from curation.stages.base import removals_frame
from curation.stages.dedup_pairs import pair_jaccard, with_shingles
from curation.stages.parts import read_parts

MEMBERS = pd.DataFrame({
    "key": pd.Series(dtype=np.int64), "survivor_key": pd.Series(dtype=np.int64), "cluster_id": pd.Series(dtype=object),
    "member_id": pd.Series(dtype=object), "source": pd.Series(dtype=object), "shard": pd.Series(dtype=np.int32),
    "record": pd.Series(dtype=np.int64), "is_survivor": pd.Series(dtype=bool), "cluster_size": pd.Series(dtype=np.int32),
})
LOCATED = MEMBERS.assign(file=pd.Series(dtype=np.int32), survivor_file=pd.Series(dtype=np.int32))
CLUSTERS = MEMBERS.assign(jaccard_to_survivor=pd.Series(dtype=np.float64), removed=pd.Series(dtype=bool),
                          oversized=pd.Series(dtype=bool))
REMOVED = removals_frame()


def choose_survivors(part: pd.DataFrame) -> pd.DataFrame:
    """Rows (key, label, id, source, shard, record, quality, file), all of a label's rows here: each with its
    cluster's survivor (highest quality, a missing score counting as -1, then smallest id), the survivor's file
    and the cluster's size."""
    if part.empty:
        return LOCATED.copy()
    rank = part.assign(order=-part["quality"].astype(np.float64).fillna(-1.0), id=part["id"].astype(object))
    rank = rank.sort_values(["label", "order", "id"], kind="stable")
    first = rank.groupby("label", sort=False).head(1).set_index("label")
    survivor_key = first["key"].reindex(rank["label"]).to_numpy()
    return pd.DataFrame({
        "key": rank["key"].to_numpy(np.int64), "survivor_key": survivor_key.astype(np.int64),
        "cluster_id": first["id"].reindex(rank["label"]).to_numpy(object), "member_id": rank["id"].to_numpy(object),
        "source": rank["source"].to_numpy(object), "shard": rank["shard"].to_numpy(np.int32),
        "record": rank["record"].to_numpy(np.int64), "is_survivor": rank["key"].to_numpy() == survivor_key,
        "cluster_size": rank.groupby("label", sort=False)["key"].transform("size").to_numpy(np.int32),
        "file": rank["file"].to_numpy(np.int32),
        "survivor_file": first["file"].reindex(rank["label"]).to_numpy(np.int32),
    })


def fates(part: pd.DataFrame, threshold: float, max_cluster_size: int) -> pd.DataFrame:
    """Members with their Jaccard to the survivor, whether the cluster is oversized and whether they go."""
    out = part[list(MEMBERS.columns)].reset_index(drop=True)
    jaccard = pair_jaccard(part, "shingles_member", "shingles_survivor") if len(part) else np.empty(0)
    oversized = out["cluster_size"].to_numpy() > max_cluster_size
    removed = ~out["is_survivor"].to_numpy(bool) & (~oversized | (jaccard >= threshold))
    return out.assign(jaccard_to_survivor=jaccard, removed=removed, oversized=oversized)


def removals(part: pd.DataFrame) -> pd.DataFrame:
    """The removed members in the shared REMOVALS columns, with the evidence."""
    gone = part[part["removed"]]
    detail = [f"cluster {c}, Jaccard {round(j, 3)} to its survivor"
              for c, j in zip(gone["cluster_id"], gone["jaccard_to_survivor"])]
    return pd.DataFrame({"source": gone["source"].to_numpy(object), "shard": gone["shard"].to_numpy(np.int32),
                         "record": gone["record"].to_numpy(np.int64), "fate": "duplicate", "stage": "minhash_dedup",
                         "reason": "near_duplicate", "detail": pd.Series(detail, dtype=object),
                         "dup_cluster": gone["cluster_id"].to_numpy(object)}, index=range(len(gone)))


def cluster_members(labels, signature_files: list[str], shingle_files, config, partitions: int):
    """The clusters table as a lazy Dask frame (the NEAR_DUPLICATE_CLUSTERS columns and the keys). The signature
    files and the shingle files are in the same order (a shard's at the same index)."""
    docs = read_parts(signature_files, partitions, columns=["key", "id", "source", "shard", "record", "quality"],
                      file_column="file")
    members = (labels.merge(docs, on="key").shuffle(on="label", npartitions=partitions)
               .map_partitions(choose_survivors, meta=LOCATED))
    with_member = with_shingles(members, shingle_files, "key", "file", "shingles_member", partitions)
    joined = with_shingles(with_member, shingle_files, "survivor_key", "survivor_file", "shingles_survivor", partitions)
    return joined.map_partitions(fates, config.threshold, config.max_cluster_size, meta=CLUSTERS)
