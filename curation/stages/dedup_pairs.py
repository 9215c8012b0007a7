"""Near-duplicate pairs on Dask: candidates from shared LSH buckets, then verification on the documents' shingle
sets (the true Jaccard, not the signature estimate), each joined to the pair by a shuffle on its key."""

import numpy as np
import pandas as pd

from curation.minhash import pairs_in_buckets, true_jaccard
from curation.stages.parts import read_parts

PAIRS = pd.DataFrame({"a": pd.Series(dtype=np.int64), "b": pd.Series(dtype=np.int64)})
VERIFIED = PAIRS.assign(jaccard=pd.Series(dtype=np.float64))


def candidate_pairs(band_files: list[str], partitions: int):
    """Distinct pairs (a < b) of documents that share a bucket of some band."""
    return (read_parts(band_files, partitions).shuffle(on=["band", "bucket"], npartitions=partitions)
            .map_partitions(pairs_in_buckets, meta=PAIRS)
            .shuffle(on=["a", "b"], npartitions=partitions)
            .map_partitions(pd.DataFrame.drop_duplicates, meta=PAIRS))


def with_shingles(frame, shingles, key: str, column: str):
    """`frame` with the shingle set of the document in its column `key`, as `column`."""
    return frame.merge(shingles.rename(columns={"key": key, "shingles": column}), on=key)


def pair_jaccard(part: pd.DataFrame, left: str = "shingles_a", right: str = "shingles_b") -> np.ndarray:
    return np.array([true_jaccard(np.frombuffer(x, dtype=np.uint32), np.frombuffer(y, dtype=np.uint32))
                     for x, y in zip(part[left], part[right])], dtype=np.float64)


def verify(part: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The pairs of a partition whose true Jaccard reaches `threshold`."""
    if part.empty:
        return VERIFIED.copy()
    jaccard = pair_jaccard(part)
    keep = jaccard >= threshold
    return pd.DataFrame({"a": part["a"].to_numpy(np.int64)[keep], "b": part["b"].to_numpy(np.int64)[keep],
                         "jaccard": jaccard[keep]})


def verified_pairs(candidates, shingle_files: list[str], threshold: float, partitions: int):
    shingles = read_parts(shingle_files, partitions)
    joined = with_shingles(with_shingles(candidates, shingles, "a", "shingles_a"), shingles, "b", "shingles_b")
    return joined.map_partitions(verify, threshold, meta=VERIFIED)
