"""Near-duplicate pairs on Dask: candidates from shared LSH buckets, then verification on the documents' shingle
sets (the true Jaccard, not the signature estimate). Each pair knows the file that holds each document's shingles,
so the pairs go to the files: shuffled by that file, each task reads the shingle sets its pairs need from the files
they name. The shingle sets themselves, most of what `minhash` writes, are never shuffled whole."""

import numpy as np
import pandas as pd
import pyarrow as pa

from base.parquet_files import read_parquet
from curation.minhash import pairs_in_buckets, true_jaccard
from curation.stages.parts import read_parts

PAIRS = pd.DataFrame({"a": pd.Series(dtype=np.int64), "b": pd.Series(dtype=np.int64),
                      "file_a": pd.Series(dtype=np.int32), "file_b": pd.Series(dtype=np.int32)})
VERIFIED = pd.DataFrame({"a": pd.Series(dtype=np.int64), "b": pd.Series(dtype=np.int64),
                         "jaccard": pd.Series(dtype=np.float64)})


def candidate_pairs(band_files: list[str], partitions: int):
    """Distinct pairs (a < b) of documents that share a bucket of some band, with the index in `band_files` of
    each one's file (the same as its shingles' in the shingle files)."""
    bands = read_parts(band_files, partitions, file_column="file")
    return (bands.shuffle(on=["band", "bucket"], npartitions=partitions)
            .map_partitions(pairs_in_buckets, meta=PAIRS)
            .shuffle(on=["a", "b"], npartitions=partitions)
            .map_partitions(pd.DataFrame.drop_duplicates, meta=PAIRS))


def with_shingles(frame, shingle_files, key: str, file: str, column: str, partitions: int):
    """`frame` with the shingle set of the document in its column `key` as `column`, read from the shingle file
    whose index is in its column `file`. `shingle_files` is the list as one Dask object (dask.delayed), so that the
    graph holds it once, not once a task."""
    meta = frame._meta.assign(**{column: pd.Series(dtype=object)})
    return (frame.shuffle(on=file, npartitions=partitions)
            .map_partitions(attach_shingles, shingle_files, key, file, column, meta=meta))


def attach_shingles(part: pd.DataFrame, shingle_files: list[str], key: str, file: str, column: str) -> pd.DataFrame:
    """A partition's rows with the shingle sets of their `key` documents: each file its rows name read once, only
    the rows of those documents, and one join for them all (a join per file cost ~2 ms, most of the stage's time
    where a partition's pairs name hundreds of small shards' files)."""
    files, keys = part[file].to_numpy(), part[key].to_numpy()
    found = []
    for index in np.unique(files).tolist():
        wanted = np.unique(keys[files == index]).tolist()
        shingles = read_parquet(shingle_files[index], where_in=("key", wanted))
        if shingles.num_rows < len(wanted):  # a join would drop their pairs without a word
            raise LookupError(f"{len(wanted) - shingles.num_rows} documents have no shingle set in {shingle_files[index]}")
        found.append(shingles.append_column(file, pa.array(np.full(shingles.num_rows, index, np.int32))))
    if not found:
        return part.assign(**{column: pd.Series(dtype=object)})
    table = pa.concat_tables(found).rename_columns([key, column, file])
    return part.merge(table.to_pandas().astype({file: part[file].dtype}), on=[file, key])


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


def verified_pairs(candidates, shingle_files, threshold: float, partitions: int):
    with_a = with_shingles(candidates, shingle_files, "a", "file_a", "shingles_a", partitions)
    joined = with_shingles(with_a, shingle_files, "b", "file_b", "shingles_b", partitions)
    return joined.map_partitions(verify, threshold, meta=VERIFIED)
