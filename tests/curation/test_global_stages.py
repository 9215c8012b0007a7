"""The global stages on Dask: connected components against union-find and its rounds bound, quality sketches
against exact quantiles, and dedup results that do not depend on the number of workers or partitions. Run in
this process, on LocalClusters of real worker processes."""

import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.config import load_config
from curation.job import plan_job
from curation.run import TASK_BYTES, curate, dask_client, shard_tasks
from curation.stages import STAGES
from curation.stages.dedup_components import ComponentsDidNotConverge, component_labels, round_cap
from curation.stages.exact_dedup import ExactDedup
from curation.stages.minhash_dedup import MinHashDedup
from curation.stages.parts import PARTITION_BYTES, partitions_by_size, read_parts, shard_groups, shuffle_partitions
from curation.stages.quality_select import ACCURACY, merged, odds
from base.workspace import Workspace
from test_dedup import write_near_duplicate_corpus


@pytest.fixture(scope="module")
def client():
    with dask_client(workers=2) as c:
        yield c


def union_find_labels(a, b) -> dict:
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for x, y in zip(a, b):
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    return {x: find(x) for x in parent}


def random_graph(seed: int, n: int):
    """A long path through shuffled keys (the worst case for plain label propagation) plus random chords."""
    rng = random.Random(seed)
    keys = list({rng.getrandbits(63) - 2**62 for _ in range(n)})
    rng.shuffle(keys)
    n = len(keys)
    a, b = keys[:-1], keys[1:]
    cut = set(rng.sample(range(n - 1), n // 10))  # breaks the path into several components
    pairs = [(x, y) for i, (x, y) in enumerate(zip(a, b)) if i not in cut]
    pairs += [tuple(rng.sample(keys, 2)) for _ in range(n // 20)]
    pairs = [(min(p), max(p)) for p in pairs]
    return [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.mark.slow  # a LocalCluster (~14 s a case); test_dedup finds components through the job by default
@pytest.mark.parametrize("partitions", [1, 4])
def test_components_match_union_find_within_the_round_bound(client, partitions):
    import dask.dataframe as dd

    a, b = random_graph(partitions, 1000)
    edges = dd.from_pandas(pd.DataFrame({"a": np.array(a, np.int64), "b": np.array(b, np.int64)}), npartitions=partitions)
    labels, rounds = component_labels(client, edges, partitions, n_nodes_hint=2 * len(a))
    got = client.compute(labels, sync=True)
    assert len(got) == got["key"].nunique()
    assert dict(zip(got["key"], got["label"])) == union_find_labels(a, b)
    assert rounds <= round_cap(2 * len(a)) and rounds <= 2 * np.log2(1000), rounds


def test_components_that_do_not_converge_in_the_cap_raise(client):
    import dask.dataframe as dd

    a, b = random_graph(0, 500)
    edges = dd.from_pandas(pd.DataFrame({"a": np.array(a, np.int64), "b": np.array(b, np.int64)}), npartitions=2)
    with pytest.raises(ComponentsDidNotConverge, match="did not reach stars in 1 rounds"):
        component_labels(client, edges, 2, n_nodes_hint=1000, cap=1)


def test_merged_sketches_give_quantiles_within_their_accuracy():
    from ddsketch import DDSketch

    rng = np.random.default_rng(5)
    scores = np.concatenate([rng.beta(0.3, 0.3, 20000), 1 - rng.random(3000) * 1e-6])  # saturated ones too
    parts = []
    for chunk in np.array_split(odds(scores), 7):
        sketch = DDSketch(ACCURACY)
        for value in chunk.tolist():
            sketch.add(value)
        parts.append(sketch)
    whole, exact = merged(*parts), np.sort(odds(scores))
    for q in (0.05, 0.2, 0.5, 0.8, 0.95, 0.99):
        truth = exact[int(q * (len(exact) - 1))]
        assert abs(whole.get_quantile_value(q) - truth) <= ACCURACY * abs(truth) + 1e-12, q


def test_many_small_shards_share_partitions_and_tasks_and_full_shards_do_not():
    # 300 sources of 5 documents: one partition per worker thread, not 300; 16 small shards: one
    assert shuffle_partitions(300 * 5_000, 300, worker_threads=2) == 2 and shuffle_partitions(16 * 5_000, 16, worker_threads=2) == 1
    assert shuffle_partitions(300 * 5_000, 300) == 1 and shuffle_partitions(300 * 5_000, 300, worker_threads=64) == 300 // 32
    assert shuffle_partitions(300 * PARTITION_BYTES, 300) == 300 == shuffle_partitions(10**15, 300)
    assert shuffle_partitions(0, 0) == 1 and shuffle_partitions(1, 300, fixed=5, worker_threads=8) == 5
    # a table a stage derives (minhash_dedup's edges): by its own size, not the shards'
    assert partitions_by_size(0) == 1 and partitions_by_size(3 * PARTITION_BYTES + 1) == 4
    assert partitions_by_size(10**15, most=7) == 7 and partitions_by_size(PARTITION_BYTES, most=7) == 1
    groups = shard_groups(list(range(10)), 3)
    assert [x for g in groups for x in g] == list(range(10)) and len(groups) == 3 and min(map(len, groups)) == 3
    assert shard_groups([1, 2], 5) == [[1], [2]]
    # a shard stage's tasks: runs of tiny shards, at least 4 a thread; a shard of TASK_BYTES or unknown size alone
    runs = shard_tasks([2_000] * 300, threads=2)
    assert [i for a, b in runs for i in range(a, b)] == list(range(300)) and 8 <= len(runs) <= 9
    assert shard_tasks([TASK_BYTES] * 5 + [None] * 3, threads=1) == [(i, i + 1) for i in range(8)]
    assert shard_tasks([TASK_BYTES // 2] * 64, threads=2) == [(i, i + 2) for i in range(0, 64, 2)]
    assert shard_tasks([10] * 3, threads=2) == [(0, 1), (1, 2), (2, 3)] and shard_tasks([], threads=2) == []


def test_a_run_of_small_files_is_read_by_one_task_with_each_row_s_file_index(tmp_path):
    files = []
    for i, n in enumerate([3, 0, 2, 4, 1]):  # an empty part among them, as a shard without rows writes
        files.append(str(tmp_path / f"part-{i}.parquet"))
        pq.write_table(pa.table({"key": pa.array(range(10 * i, 10 * i + n), pa.int64()), "x": [f"v{i}"] * n}), files[-1])
    frame = read_parts(files, 2, columns=["key"], file_column="file")
    reads = [key for key in dict(frame.__dask_graph__()) if str(key).startswith("('read-parts")]
    assert frame.npartitions == 2 and len(reads) == 2  # a task a run of files, not a file
    rows = frame.compute(scheduler="sync").reset_index(drop=True)
    assert list(rows.columns) == ["key", "file"] and rows["file"].dtype == np.int32
    assert rows["key"].tolist() == [0, 1, 2, 20, 21, 30, 31, 32, 33, 40]
    assert rows["file"].tolist() == [0, 0, 0, 2, 2, 3, 3, 3, 3, 4]
    assert read_parts(files, 8).compute(scheduler="sync")["x"].tolist() == ["v0"] * 3 + ["v2"] * 2 + ["v3"] * 4 + ["v4"]


def curated_results(ws: Workspace) -> dict:
    gen = ws.published()
    funnel = pq.read_table(gen.manifest_table("funnel")).to_pylist()
    clusters = pq.read_table(gen.manifest_table("dedup_clusters")).to_pylist()
    return {
        "fates": sorted((r["doc_id"], r["fate"], r["reason"] or "", r["detail"] or "") for r in funnel),
        "clusters": sorted(tuple(sorted(r.items())) for r in clusters),
        "curated": sorted(pq.read_table(gen.curated, columns=["id", "dup_count"]).to_pylist(), key=lambda r: r["id"]),
    }


def run_with(root, tokenizer, workers: int, partitions: int | None) -> dict:
    exact, near = ExactDedup(), MinHashDedup()
    exact.partitions = near.partitions = partitions
    stages = tuple({"exact_dedup": exact, "minhash_dedup": near}.get(s.name, s) for s in STAGES)
    ws = Workspace(root / f"ws-{workers}-{partitions}")
    shards, ctx = plan_job(load_config(root / "sources.toml"), ws, tokenizer)
    with dask_client(workers=workers) as client:
        curate(shards, ctx, client, stages=stages)
    return curated_results(ws)


@pytest.mark.slow  # two LocalClusters and two jobs (~30 s); test_dedup checks workers and shard order by default
def test_dedup_results_do_not_depend_on_workers_or_partitions(tmp_path, slice_tokenizer):
    corpus = write_near_duplicate_corpus(tmp_path)
    exact_copies = (tmp_path / "base" / "base-0.jsonl").read_text().splitlines(keepends=True)[:5]
    with open(tmp_path / "planted" / "planted-1.jsonl", "a") as fh:
        fh.writelines(exact_copies)
    one = run_with(tmp_path, slice_tokenizer, workers=1, partitions=None)
    two = run_with(tmp_path, slice_tokenizer, workers=2, partitions=5)
    assert one == two
    reasons = [reason for _, _, reason, _ in one["fates"]]
    assert reasons.count("exact_duplicate") == 5 and reasons.count("near_duplicate") >= 40
    assert len(one["curated"]) == len(corpus["texts"]) - reasons.count("near_duplicate")
    assert sum(r["dup_count"] for r in one["curated"]) == len(corpus["texts"]) + 5  # every document counted once
