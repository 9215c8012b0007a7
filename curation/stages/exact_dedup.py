"""Stage 3, over all shards, as a Dask shuffle by id: of documents with the same normalized text (so, the same
id), the first by source order in sources.toml, then shard, then record, is kept; documents removed before take
no part. Every copy of an id meets in one partition, which decides its own ids; no task reads every id."""

import numpy as np
import pandas as pd

from base.done_markers import mark_done
from base.parquet_files import read_parquet
from curation.schema import REMOVALS
from curation.stages.base import GlobalStage, removals_frame
from curation.stages.parts import write_by_shard
from curation.stages.prepare import PREPARE
from curation.stages.survivors import surviving_batches

BATCH = 10_000
IDS = pd.DataFrame({"id": pd.Series(dtype=object), "rank": pd.Series(dtype=np.int32), "source": pd.Series(dtype=object),
                    "shard": pd.Series(dtype=np.int32), "record": pd.Series(dtype=np.int64),
                    "input": pd.Series(dtype=object)})
DUPLICATES = removals_frame()


def shard_ids(ctx, shard) -> pd.DataFrame:
    """The id of every document of a shard still in, with what orders copies (rank, shard, record) and the
    input its record is in, as the funnel names it."""
    ids, records = [], []
    for docs in surviving_batches(ctx, shard, BATCH, columns=["record", "id"]):
        ids += docs["id"].to_pylist()
        records.append(docs["record"].to_numpy())
    n = len(ids)
    frame = pd.DataFrame({"id": pd.Series(ids, dtype=object), "rank": np.full(n, shard.rank, np.int32),
                          "source": pd.Series([shard.source.name] * n, dtype=object),
                          "shard": np.full(n, shard.index, np.int32),
                          "record": np.concatenate(records) if records else np.empty(0, np.int64)})
    inputs = read_parquet(PREPARE.funnel_path(ctx.workspace, shard), columns=["record", "input"]).to_pandas()
    return frame.merge(inputs, on="record", how="left", sort=False)


def duplicates(part: pd.DataFrame) -> pd.DataFrame:
    """Every copy but the first of each id in the partition (all copies of an id are here)."""
    if part.empty:
        return DUPLICATES.copy()
    part = part.sort_values(["id", "rank", "shard", "record"], kind="stable")
    copy = part.groupby("id", sort=False).cumcount().to_numpy()
    first = part["input"].astype(str) + "#" + part["record"].astype(str)  # the same whichever shard holds it
    survivor = first.where(copy == 0).ffill()  # sorted by id: each group's first row holds its survivor
    gone = part[copy > 0]
    n = len(gone)
    return pd.DataFrame({"source": gone["source"].to_numpy(object), "shard": gone["shard"].to_numpy(np.int32),
                         "record": gone["record"].to_numpy(np.int64), "fate": ["duplicate"] * n,
                         "stage": ["exact_dedup"] * n, "reason": ["exact_duplicate"] * n,
                         "detail": ("same text as " + survivor[copy > 0]).to_numpy(object),
                         "dup_cluster": [None] * n})


class ExactDedup(GlobalStage):
    name = "exact_dedup"
    on_client = True
    removes = True
    partitions = None  # of the shuffle; default one per shard. Results do not depend on it

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        import dask
        import dask.dataframe as dd

        ids = dd.from_delayed([dask.delayed(shard_ids)(ctx, s) for s in shards], meta=IDS, verify_meta=False)
        removed = ids.shuffle(on="id", npartitions=self.partitions or len(shards)).map_partitions(duplicates, meta=DUPLICATES)
        n = write_by_shard(client, removed, self.removed_path(ctx.workspace), shards, REMOVALS, ["record"],
                           self.name, self.partitions)
        stats = {"duplicates": n}
        mark_done(self.marker(ctx.workspace), fingerprint, stats)
        return stats


EXACT_DEDUP = ExactDedup()
