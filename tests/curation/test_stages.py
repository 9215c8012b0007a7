"""The stage seam: a new stage that removes documents is one class and one place in the stage list. The rest of
the job (later stages, the funnel, the manifest) picks it up with no other change. Run in this process, on a
LocalCluster with 2 worker processes."""

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from base.done_markers import mark_done
from base.workspace import Workspace
from curation.config import load_config
from curation.job import plan_job
from curation.run import curate, dask_client
from curation.schema import REMOVALS
from curation.stages import EXACT_DEDUP, MINHASH, PREPARE, STAGES
from curation.stages.base import GlobalStage
from curation.stages.parts import write_shard_rows
from curation.stages.survivors import surviving_columns

WORD = "Python"


class DropMentions(GlobalStage):
    """Removes every document still in whose text mentions WORD: a stand-in for a decontamination stage. It
    runs on the client, so the workers need not import this test module."""

    name = "drop_mentions"
    on_client = True
    removes = True

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        docs = surviving_columns(ctx, shards, ["record", "text"])
        hits = docs.filter(pc.match_substring(docs["text"], WORD))
        n = hits.num_rows
        removals = pa.table({"source": hits["source"], "shard": hits["shard"], "record": hits["record"],
                             "fate": ["filtered"] * n, "stage": [self.name] * n, "reason": ["mentions_word"] * n,
                             "detail": [WORD] * n, "dup_cluster": pa.nulls(n, pa.string())}, schema=REMOVALS)
        for shard in shards:  # a table by shard: a part for every shard, its own removals in it
            mine = pc.and_(pc.equal(removals["source"], shard.source.name), pc.equal(removals["shard"], shard.index))
            write_shard_rows(removals.filter(mine), self.removed_path(ctx.workspace), shard.source.name, shard.index,
                             REMOVALS, ["record"])
        stats = {"removed": n}
        mark_done(self.marker(ctx.workspace), fingerprint, stats)
        return stats


@pytest.mark.slow  # two whole curations (~33 s)
def test_a_new_removing_stage_needs_no_change_elsewhere(tmp_path, slice_sources, slice_tokenizer):
    ws = Workspace(tmp_path / "ws")
    place = STAGES.index(EXACT_DEDUP) + 1
    stages = STAGES[:place] + (DropMentions(),) + STAGES[place:]
    shards, ctx = plan_job(load_config(slice_sources), ws, slice_tokenizer)
    with dask_client(workers=2) as client:
        summary = curate(shards, ctx, client, stages=stages)
        # the local workers keep no statistical profile, whose history grew with the job's length (curation.run)
        assert set(client.run(lambda dask_worker: len(dask_worker.profile_history)).values()) == {0}

    funnel = pq.read_table(ws.published().manifest_table("funnel"))
    dropped = funnel.filter(pc.equal(funnel["stage"], "drop_mentions"))
    assert dropped.num_rows > 0
    assert set(dropped["fate"].to_pylist()) == {"filtered"} and set(dropped["reason"].to_pylist()) == {"mentions_word"}
    # every input record has exactly one fate: the stage's removals did not add funnel rows
    records = {}
    for shard in shards:
        rows = pq.read_table(PREPARE.funnel_path(ws, shard)).num_rows
        records[shard.source.name] = records.get(shard.source.name, 0) + rows
    assert {row["source"]: row["docs_in"] for row in summary} == records
    assert funnel.num_rows == sum(records.values())
    # the later stages skipped what it removed: no signature, no curated row mentions the word
    dropped_keys = {(r["source"], r["shard"], r["record"]) for r in dropped.to_pylist()}
    signed = {(r["source"], r["shard"], r["record"])
              for path in ws.stage_dir(MINHASH.name).glob("*/part-*.parquet")
              for r in pq.read_table(path, columns=["source", "shard", "record"]).to_pylist()}
    assert signed and not signed & dropped_keys
    curated = pq.read_table(ws.published().curated, columns=["text"])
    assert curated.num_rows == funnel.filter(pc.equal(funnel["fate"], "kept")).num_rows
    assert not any(WORD in text for text in curated["text"].to_pylist())
