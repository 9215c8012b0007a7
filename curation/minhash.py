"""Fuzzy deduplication with MinHash LSH, across all shards and sources.

Per shard, the `minhash` stage computes datasketch MinHash signatures over word n-gram shingles and the LSH band
keys. The global `minhash_dedup` stage then works on the Dask cluster: band rows are shuffled by bucket so that each
bucket's members meet in one partition, candidate pairs come out of shared buckets, and each pair is verified
against the full signatures (estimated Jaccard >= threshold) after a distributed join. Only the verified edges
reach the client, where a union-find joins them into clusters: it holds one entry per document that has a
verified near-duplicate (about 150 bytes each in CPython, so ~150 MB per million such documents) and nothing
for the others.
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


def _hash32(data: bytes) -> int:
    return xxhash.xxh32_intdigest(data)


def signatures(texts: list[str], config: DedupConfig) -> np.ndarray:
    """MinHash signatures, one row of `num_perm` uint32 per text, with datasketch's bulk API."""
    from datasketch import MinHash

    if not texts:
        return np.empty((0, config.num_perm), dtype=np.uint32)
    minhashes = MinHash.bulk((shingles(t, config.ngram) for t in texts), num_perm=config.num_perm,
                             seed=config.seed, hashfunc=_hash32)
    return np.stack([m.hashvalues for m in minhashes]).astype(np.uint32)


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
    every member of a bucket is in this partition."""
    part = part.sort_values(["band", "bucket", "key"], kind="stable")
    groups = part.groupby(["band", "bucket"], sort=False)["key"]
    sizes = groups.transform("size")
    shared = part[sizes.to_numpy() > 1]
    a, b = [], []
    for keys in shared.groupby(["band", "bucket"], sort=False)["key"].agg(list):
        if len(keys) <= ALL_PAIRS_UP_TO:
            for i, first in enumerate(keys):
                a.extend([first] * (len(keys) - i - 1))
                b.extend(keys[i + 1 :])
        else:
            a.extend([keys[0]] * (len(keys) - 1))
            b.extend(keys[1:])
    return pd.DataFrame({"a": np.array(a, dtype=np.int64), "b": np.array(b, dtype=np.int64)})


def verify_pairs(part: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The pairs whose signatures agree on at least `threshold` of their positions."""
    if part.empty:
        return pd.DataFrame({"a": pd.Series(dtype=np.int64), "b": pd.Series(dtype=np.int64),
                             "jaccard": pd.Series(dtype=np.float64)})
    sig_a = np.frombuffer(b"".join(part["sig_a"]), dtype=np.uint32).reshape(len(part), -1)
    sig_b = np.frombuffer(b"".join(part["sig_b"]), dtype=np.uint32).reshape(len(part), -1)
    jaccard = estimated_jaccard(sig_a, sig_b)
    keep = jaccard >= threshold
    return pd.DataFrame({"a": part["a"].to_numpy()[keep], "b": part["b"].to_numpy()[keep], "jaccard": jaccard[keep]})


# ---- on the client: clusters from verified edges ----------------------------------------------------------


def connected_components(a: np.ndarray, b: np.ndarray) -> dict[int, int]:
    """Union-find over the edges; returns each node's root (the smallest key of its component)."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    for x, y in zip(a.tolist(), b.tolist()):
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    return {x: find(x) for x in parent}


SIGNATURE_FIELD = "sig"


def signature_schema(config: DedupConfig) -> pa.Schema:
    return pa.schema([
        ("key", pa.int64()), ("id", pa.string()), ("source", pa.string()), ("shard", pa.int32()),
        ("record", pa.int64()), ("quality", pa.float32()), (SIGNATURE_FIELD, pa.binary(4 * config.num_perm)),
    ])


BANDS = pa.schema([("band", pa.int16()), ("bucket", pa.int64()), ("key", pa.int64())])
