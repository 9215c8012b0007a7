"""Fuzzy deduplication with MinHash LSH, across all shards and sources.

Per shard, the `minhash` stage hashes each document's word n-gram shingles (32-bit xxhash, kept as a sorted set
per document), computes datasketch MinHash signatures over those hashes, and the LSH band keys. The global
`minhash_dedup` stage then works on the Dask cluster only (curation/stages/dedup_*.py): band rows are shuffled by
bucket to candidate pairs, each pair is verified on the TRUE Jaccard of the two shingle sets (joined to the pair
by a shuffle), the verified edges are joined into clusters by distributed connected components, and each
cluster's survivor is chosen by a shuffle on the cluster label.

Why 32-bit shingle hashes are enough: two distinct shingles of a pair collide with probability 2^-32; a pair of
documents of 2,000 shingles each has about 2000^2 / 2^32 < 0.001 expected collisions, each of which moves the
Jaccard by at most 1/2000, so the verified figure is the exact one to well under 10^-5.
"""

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import xxhash

from curation.config import DedupConfig

WORD = re.compile(r"\w+")
ALL_PAIRS_UP_TO = 20  # buckets with more members give star pairs from their smallest key instead of all pairs


def shingles(text: str, n: int) -> set[bytes]:
    """Word n-grams of the lowercased text; a document shorter than n words is one shingle."""
    words = WORD.findall(text.lower())
    if len(words) <= n:
        return {" ".join(words).encode()}
    return {" ".join(words[i : i + n]).encode() for i in range(len(words) - n + 1)}


def shingle_hashes(text: str, n: int) -> np.ndarray:
    """The sorted, distinct 32-bit xxhashes of a text's shingles: what signatures are made from and what a
    candidate pair is verified on."""
    return np.unique(np.fromiter((xxhash.xxh32_intdigest(s) for s in shingles(text, n)), dtype=np.uint32))


def signatures(texts: list[str], config: DedupConfig) -> np.ndarray:
    """MinHash signatures, one row of `num_perm` uint32 per text."""
    return hash_signatures([shingle_hashes(t, config.ngram) for t in texts], config)


def hash_signatures(hashes: list[np.ndarray], config: DedupConfig) -> np.ndarray:
    """MinHash signatures, one row of `num_perm` uint32 per document's shingle hashes (datasketch's bulk API
    over the already hashed shingles, so the values are those of hashing each shingle with xxh32)."""
    from datasketch import MinHash

    if not hashes:
        return np.empty((0, config.num_perm), dtype=np.uint32)
    minhashes = MinHash.bulk((h.tolist() for h in hashes), num_perm=config.num_perm, seed=config.seed, hashfunc=int)
    return np.stack([m.hashvalues for m in minhashes]).astype(np.uint32)


def true_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two sorted sets of distinct shingle hashes."""
    common = len(np.intersect1d(a, b, assume_unique=True))
    union = len(a) + len(b) - common
    return common / union if union else 1.0


def _row_multipliers(rows: int) -> np.ndarray:
    rng = np.random.default_rng(0x10AD)
    return rng.integers(1, 2**63, size=rows, dtype=np.uint64) | np.uint64(1)


def band_keys(sigs: np.ndarray, config: DedupConfig, salt: str = "") -> np.ndarray:
    """One 64-bit bucket key per document and band: a hash of the band's `rows` values (and the band number,
    and the salt, which is the source name for per-source scope). Shape (n_docs, bands), int64."""
    view = sigs.reshape(len(sigs), config.bands, config.rows).astype(np.uint64)
    with np.errstate(over="ignore"):
        keys = (view * _row_multipliers(config.rows)).sum(axis=2, dtype=np.uint64)
        keys ^= np.arange(config.bands, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        keys ^= np.uint64(xxhash.xxh64_intdigest(salt.encode()))
        keys *= np.uint64(0xBF58476D1CE4E5B9)
    return keys.view(np.int64)


def doc_key(doc_id: str) -> int:
    """A document's 64-bit key: the first half of its content id, so pairs and clusters do not depend on
    shard order or on how many workers ran."""
    return int.from_bytes(bytes.fromhex(doc_id[:16]), "big", signed=True)


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b).mean(axis=-1)


# ---- the distributed parts: plain functions over pandas partitions ----------------------------------------


def pairs_in_buckets(part: pd.DataFrame) -> pd.DataFrame:
    """Candidate pairs (a < b) of the documents that share a bucket. After the shuffle by (band, bucket),
    every member of a bucket is in this partition. A `file` column, if there is one, goes with each key (file_a,
    file_b): where its shingles are."""
    part = part.sort_values(["band", "bucket", "key"], kind="stable")
    sizes = part.groupby(["band", "bucket"], sort=False)["key"].transform("size").to_numpy()
    shared = part[sizes > 1]
    first, second, start = [], [], 0
    for n in shared.groupby(["band", "bucket"], sort=False).size():
        if n <= ALL_PAIRS_UP_TO:
            for i in range(start, start + n - 1):
                first.extend([i] * (start + n - i - 1))
                second.extend(range(i + 1, start + n))
        else:
            first.extend([start] * (n - 1))
            second.extend(range(start + 1, start + n))
        start += n
    keys = shared["key"].to_numpy(np.int64)
    pairs = {"a": keys[first], "b": keys[second]}
    if "file" in part.columns:
        files = shared["file"].to_numpy(np.int32)
        pairs.update(file_a=files[first], file_b=files[second])
    return pd.DataFrame(pairs)


SIGNATURE_FIELD = "sig"


def signature_schema(config: DedupConfig) -> pa.Schema:
    return pa.schema([
        ("key", pa.int64()), ("id", pa.string()), ("source", pa.string()), ("shard", pa.int32()),
        ("record", pa.int64()), ("quality", pa.float32()), (SIGNATURE_FIELD, pa.binary(4 * config.num_perm)),
    ])


BANDS = pa.schema([("band", pa.int16()), ("bucket", pa.int64()), ("key", pa.int64())])
SHINGLES = pa.schema([("key", pa.int64()), ("shingles", pa.binary())])  # sorted distinct uint32 hashes, as bytes
