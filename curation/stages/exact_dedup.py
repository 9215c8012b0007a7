"""Stage 3, over all shards, as a Dask shuffle by id: of documents with the same normalized text (so, the same
id), the first by source order in sources.toml, then shard, then record, is kept; documents removed before take
no part. Every copy of an id meets in one partition, which decides its own ids; no task reads every id. Each kept
copy's number of copies (itself included) is written too, for those with more than one (`copies_folder`): the
start of its dup_count, which minhash_dedup completes."""

from pathlib import Path

import numpy as np
import pandas as pd

from base.done_markers import mark_done
from base.parquet_files import read_parquet
from base.workspace import COPIES_DIR
from curation.schema import EXACT_COPIES, REMOVALS
from curation.stages.base import GlobalStage, removals_frame, shared_context
from curation.stages.dedup_components import persisted
from curation.stages.parts import shard_groups, write_by_shard
from curation.stages.prepare import PREPARE
from curation.stages.survivors import partitions_for, surviving_batches

BATCH = 10_000
IDS = pd.DataFrame({"id": pd.Series(dtype=object), "rank": pd.Series(dtype=np.int32), "source": pd.Series(dtype=object),
                    "shard": pd.Series(dtype=np.int32), "record": pd.Series(dtype=np.int64),
                    "input": pd.Series(dtype=object)})
DUPLICATES = removals_frame()
COPIES = pd.DataFrame({"source": pd.Series(dtype=object), "shard": pd.Series(dtype=np.int32),
                       "record": pd.Series(dtype=np.int64), "copies": pd.Series(dtype=np.int32)})
JUDGED = DUPLICATES.assign(copies=pd.Series(dtype=np.int32))  # removals (copies 0) and kept copies (copies > 1)


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


def group_ids(ctx, shards: list) -> pd.DataFrame:
    """shard_ids of a run of shards, one frame: a task and a partition for many small shards."""
    return pd.concat([shard_ids(ctx, s) for s in shards], ignore_index=True)


def in_copy_order(part: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The partition sorted by id then the order copies are kept by, and each row's place among its id's copies."""
    part = part.sort_values(["id", "rank", "shard", "record"], kind="stable")
    return part, part.groupby("id", sort=False).cumcount().to_numpy()


def duplicates(part: pd.DataFrame) -> pd.DataFrame:
    """Every copy but the first of each id in the partition (all copies of an id are here)."""
    if part.empty:
        return DUPLICATES.copy()
    part, copy = in_copy_order(part)
    first = part["input"].astype(str) + "#" + part["record"].astype(str)  # the same whichever shard holds it
    survivor = first.where(copy == 0).ffill()  # sorted by id: each group's first row holds its survivor
    gone = part[copy > 0]
    n = len(gone)
    return pd.DataFrame({"source": gone["source"].to_numpy(object), "shard": gone["shard"].to_numpy(np.int32),
                         "record": gone["record"].to_numpy(np.int64), "fate": ["duplicate"] * n,
                         "stage": ["exact_dedup"] * n, "reason": ["exact_duplicate"] * n,
                         "detail": ("same text as " + survivor[copy > 0]).to_numpy(object),
                         "dup_cluster": [None] * n})


def kept_copies(part: pd.DataFrame) -> pd.DataFrame:
    """The kept copy of each id of the partition that had more than one, with the number of its copies."""
    if part.empty:
        return COPIES.copy()
    part, copy = in_copy_order(part)
    copies = part.groupby("id", sort=False)["record"].transform("size").to_numpy()
    kept = part[(copy == 0) & (copies > 1)]
    return pd.DataFrame({"source": kept["source"].to_numpy(object), "shard": kept["shard"].to_numpy(np.int32),
                         "record": kept["record"].to_numpy(np.int64),
                         "copies": copies[(copy == 0) & (copies > 1)].astype(np.int32)})


def judged(part: pd.DataFrame) -> pd.DataFrame:
    """The partition's removals and its kept copies in one frame (`copies` 0 on a removal), so that the shuffle by
    id runs once and only these rows, not every id, are held until both tables are written."""
    return pd.concat([duplicates(part).assign(copies=np.int32(0)), kept_copies(part)], ignore_index=True)[
        list(JUDGED.columns)].astype({"shard": np.int32, "record": np.int64, "copies": np.int32})


class ExactDedup(GlobalStage):
    name = "exact_dedup"
    on_client = True
    removes = True
    partitions = None  # of the shuffle; default from the data's size (parts.shuffle_partitions). Results do not depend on it

    def copies_folder(self, ws) -> Path:
        """Kept documents with exact copies and their number, a table by shard."""
        return ws.stage_dir(self.name) / COPIES_DIR

    def outputs(self, ws) -> list[Path]:
        return [*super().outputs(ws), self.copies_folder(ws)]

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        import dask
        import dask.dataframe as dd

        partitions = partitions_for(ctx, shards, self.partitions)
        shared = shared_context(client, ctx)
        ids = dd.from_delayed([dask.delayed(group_ids)(shared, group) for group in shard_groups(shards, partitions)],
                              meta=IDS, verify_meta=False)
        by_id = ids.shuffle(on="id", npartitions=partitions)
        found = persisted(client, by_id.map_partitions(judged, meta=JUDGED))
        n = write_by_shard(client, found[found["copies"] == 0][list(DUPLICATES.columns)],
                           self.removed_path(ctx.workspace), shards, REMOVALS, ["record"], self.name, partitions)
        n_kept = write_by_shard(client, found[found["copies"] > 0][list(COPIES.columns)],
                                self.copies_folder(ctx.workspace), shards, EXACT_COPIES, ["record"],
                                f"{self.name}-copies", partitions)
        stats = {"duplicates": n, "kept_with_copies": n_kept}
        mark_done(self.marker(ctx.workspace), fingerprint, stats)
        return stats


EXACT_DEDUP = ExactDedup()
