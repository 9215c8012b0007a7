"""Publishing on Dask: the manifest's documents and funnel written per shard by the workers, as folders of parts
whose rows, read in name order, are the single tables the client used to write."""

import shutil

import duckdb
import pyarrow.parquet as pq
import pytest
from helpers import copy_curated

from base.sql import literal, path_list
from base.workspace import Workspace


def single_funnel(ws: Workspace, shards: list) -> list[dict]:
    """The funnel as one query over every prepare funnel and every removals table, ordered by source rank, shard
    and record: what publish wrote as manifest/funnel.parquet before it was written per shard."""
    funnels = path_list(ws.stage_part("funnel", s.source.name, s.index) for s in shards)
    removals = path_list(sorted(ws.work.glob("*/removals/*/part-*.parquet")))
    ranks = ", ".join(f"({literal(s.source.name)}, {s.rank})" for s in shards)
    later = lambda c: f"CASE WHEN x.fate IS NOT NULL THEN x.{c} ELSE f.{c} END AS {c}"  # noqa: E731
    return duckdb.sql(f"""
        SELECT f.source, f.shard, f.input, f.record, f.doc_id, {later("fate")}, {later("stage")}, {later("reason")},
               {later("detail")}, x.dup_cluster, f.lang
        FROM read_parquet({funnels}) f LEFT JOIN read_parquet({removals}) x USING (source, shard, record)
        JOIN (SELECT DISTINCT * FROM (VALUES {ranks})) AS r(source, rank) USING (source)
        ORDER BY r.rank, f.shard, f.record
    """).to_arrow_table().to_pylist()


def planned(ws: Workspace, slice_sources, slice_tokenizer):
    from curation.config import load_config
    from curation.job import plan_job

    return plan_job(load_config(slice_sources), ws, slice_tokenizer)


def test_funnel_and_documents_are_per_shard_parts_of_the_single_tables(curated_slice, slice_sources, slice_tokenizer):
    ws = Workspace(curated_slice[0])
    gen = ws.published()
    shards, _ = planned(ws, slice_sources, slice_tokenizer)
    assert len({s.source.name for s in shards}) < len(shards), "the slice has a source of several shards"
    funnel_parts = sorted(p.name for p in gen.manifest_table("funnel").iterdir())
    assert funnel_parts == [f"part-{i:05d}.parquet" for i in range(len(shards))]
    for i, shard in enumerate(shards):  # part i is the i-th shard in publish order, and only it
        part = pq.read_table(gen.manifest_part("funnel", i))
        assert set(zip(part["source"].to_pylist(), part["shard"].to_pylist())) <= {(shard.source.name, shard.index)}
    funnel = pq.read_table(gen.manifest_table("funnel")).to_pylist()
    assert funnel == single_funnel(ws, shards)  # same rows, same order, same fates, reasons and clusters
    assert "exact_dedup" in {r["stage"] for r in funnel}  # a removal joined in: the slice's planted duplicate
    documents = pq.read_table(gen.manifest_table("documents"))
    expected = [(f"curated/{s.source.name}/part-{s.index:05d}.parquet", row) for s in shards
                for row in range(pq.read_metadata(gen.curated_part(s.source.name, s.index)).num_rows)]
    assert list(zip(documents["shard"].to_pylist(), documents["row"].to_pylist())) == expected


@pytest.mark.slow  # a LocalCluster and a publish: 29-41 s on a loaded machine
def test_publish_runs_on_the_workers_and_a_killed_one_rerun_ends_identical(curated_slice, slice_sources, slice_tokenizer, tmp_path):
    """The stages are all done in a copy of the curated slice; with its generations gone (but for a killed
    publish's temporary folder), curate runs publish only: each run of shards is a task on a worker (the task stream
    says where), the manifest comes out as before and the killed publish's folder is gone."""
    from distributed import get_task_stream

    from curation.run import curate, dask_client

    ws = Workspace(copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws"))
    before = {name: pq.read_table(ws.published().manifest_table(name)) for name in ("funnel", "documents")}
    shutil.rmtree(ws.generations)
    ws.published_file.unlink()
    killed = ws.generations / ".g-0123456789abcdef.tmp-1" / "manifest" / "funnel"  # a publish killed part-way
    killed.mkdir(parents=True)
    (killed / "part-00000.parquet").write_bytes(b"PAR1 cut short")
    shards, ctx = planned(ws, slice_sources, slice_tokenizer)
    with dask_client(workers=2) as client, get_task_stream(client) as stream:
        workers = set(client.scheduler_info()["workers"])
        summary = curate(shards, ctx, client)
    ran = {}
    for task in stream.data:
        ran.setdefault(str(task["key"]).split("-")[0], set()).add(task["worker"])
    threads = 2  # small shards go a run to a task, two tasks per worker thread
    assert sum(str(t["key"]).startswith("publish_shard-") for t in stream.data) == min(len(shards), 2 * threads)
    for name in ("publish_shard", "publish_manifest", "source_summary"):
        assert ran.get(name) and ran[name] <= workers, (name, sorted(ran))
    gen = ws.published()
    assert [p.name for p in ws.generations.iterdir()] == [gen.id]
    for name, table in before.items():
        assert pq.read_table(gen.manifest_table(name)).equals(table), name
    assert sum(s["docs_in"] for s in summary) == len(before["funnel"])


def test_a_run_of_shards_writes_the_parts_each_shard_alone_would(curated_slice, slice_sources, slice_tokenizer, tmp_path):
    """publish_group queries each table once for a run of shards and splits the rows: every documents, funnel and
    removed part is byte for byte the one a run of that shard alone writes."""
    from dataclasses import replace

    from curation.manifest_parts import publish_group
    from curation.stages import STAGES

    ws = Workspace(copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws"))
    shards, ctx = planned(ws, slice_sources, slice_tokenizer)
    ctx = replace(ctx, removals=tuple(str(s.removed_path(ws)) for s in STAGES if getattr(s, "removes", False) and s.enabled(ctx)))
    together, alone = ws.generation(".together"), ws.generation(".alone")
    counts = publish_group(ctx, together, list(enumerate(shards)))
    assert [c for i, s in enumerate(shards) for c in publish_group(ctx, alone, [(i, s)])] == counts
    removed = 0
    for table in ("documents", "funnel", "removed"):
        for i in range(len(shards)):
            assert together.manifest_part(table, i).read_bytes() == alone.manifest_part(table, i).read_bytes(), (table, i)
        removed += table == "removed" and pq.read_table(together.manifest_table("removed")).num_rows
    assert removed and len(shards) > 2  # the slice removes documents, in shards of several sources
