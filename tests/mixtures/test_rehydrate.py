"""[rehydrate]: a component's documents repeated by their dup_count, in its sequence index, its plan and the
trainer's batches; and the bad tables refused in one line."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from base.errors import UserError
from base.workspace import Workspace
from helpers import GOOD_SPEC, compiled, copy_curated, published, run_loom, write_spec
from mixtures import SequenceReader, load_schedule, load_spec
from mixtures.spec import parse_spec, rehydrate_covers
from trainer.data import RankLoader

REHYDRATED = GOOD_SPEC + "[rehydrate]\nweb = { 1 = 2 }\ndocs = { 2 = 3, 3 = 4 }\n"
REPEATS = {"web": lambda dup_count: 2, "docs": lambda dup_count: 4 if dup_count >= 3 else 3 if dup_count >= 2 else 1}


@pytest.fixture(scope="module")
def rehydrated(tmp_path_factory, curated_slice, slice_tokenizer):
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("rehydrate") / "ws")
    write_spec(ws, "rehydrated", REHYDRATED)
    result = run_loom("-w", ws, "mix", "build", "rehydrated")
    return ws, compiled(ws, "rehydrated"), result


def training_documents(ws, out, source: str) -> list[dict]:
    """A source's training documents (its held-out ones left out), in shard and row order."""
    held_out = {(d["shard"], d["row"]) for d in pq.read_table(out / "validation.parquet").to_pylist()}
    documents = pq.read_table(published(ws) / "manifest" / "documents").to_pylist()
    return sorted((d for d in documents if d["source"] == source and (d["shard"], d["row"]) not in held_out),
                  key=lambda d: (d["shard"], d["row"]))


def rehydrated_stream(ws, documents: list[dict], repeats) -> list[int]:
    """The component's tokens as rehydration packs them: a pass over its documents per repeat, each pass holding
    the documents repeated at least that often."""
    times = [repeats(d["dup_count"]) for d in documents]
    stream = []
    for repeat in range(max(times)):
        for doc, n in zip(documents, times):
            if n > repeat:
                stream += pq.read_table(published(ws) / doc["shard"], columns=["input_ids"])["input_ids"][doc["row"]].as_py()
    return stream


@pytest.mark.parametrize("key", ["web", "docs"])
def test_the_plan_counts_each_document_as_often_as_it_is_repeated(rehydrated, key):
    ws, out, result = rehydrated
    meta = json.loads((out / "schedule.json").read_text())
    component = next(c for c in meta["components"] if c["key"] == key)
    documents = training_documents(ws, out, key)
    natural = sum(d["n_tokens"] for d in documents)
    tokens = sum(d["n_tokens"] * REPEATS[key](d["dup_count"]) for d in documents)
    plan = [r for r in pq.read_table(out / "plan.parquet").to_pylist() if r["component"] == key]
    width = meta["seq_len"] + 1
    assert component["tokens"] == tokens and component["available_sequences"] == tokens // width
    assert component["rehydration"] == pytest.approx(tokens / natural, rel=1e-6)
    assert all(r["available_tokens"] == tokens and r["rehydration"] == component["rehydration"] for r in plan)
    assert plan[-1]["epochs_cumulative"] == pytest.approx(sum(r["sequences"] for r in plan) / (tokens // width), rel=1e-5)
    if key == "web":
        assert component["rehydration"] == 2.0
    plain = next(r for r in pq.read_table(out / "plan.parquet").to_pylist() if r["component"] == "code")
    assert plain["rehydration"] == 1.0
    assert "rehydration" in result.stdout and "x2.000" in result.stdout


def test_the_trainers_batches_hold_the_repeated_documents(rehydrated):
    """Every sequence the schedule draws of the rehydrated `web` is its slice of the stream with each document
    twice, read as the trainer reads it (RankLoader, SequenceReader), and every sequence as an export gathers
    them: a repeated row of the index just works."""
    ws, out, _ = rehydrated
    schedule, data = load_schedule(out, Workspace(ws))
    sources = sorted({s for c in schedule.meta["components"] for s in c["sources"]})
    reader = SequenceReader(schedule, out, data, sources)
    stream = rehydrated_stream(ws, training_documents(ws, out, "web"), REPEATS["web"])
    width = schedule.meta["seq_len"] + 1
    web = schedule.components.index("web")
    drawn = set()
    for batch in RankLoader(schedule, reader, 0, 1, 0, schedule.steps):
        for row, (key, sequence) in enumerate(schedule.batch(batch.step)):
            if key == "web":
                expected = stream[sequence * width : (sequence + 1) * width]
                assert batch.inputs[row].tolist() == expected[:-1] and int(batch.components[row]) == web
                drawn.add(sequence)
    half = len(stream) // 2 // width
    assert any(s < half for s in drawn) and any(s > half for s in drawn)  # both passes were read
    every = np.arange(len(stream) // width)
    gathered = reader.gather(np.full(len(every), web), every, np.int64)  # how an export reads them
    assert gathered.reshape(-1).tolist() == stream[: len(every) * width]


def test_the_resolved_spec_keeps_the_rehydrate_table(rehydrated):
    _, out, _ = rehydrated
    assert load_spec(out / "mixture.toml").rehydrate == (("web", ((1, 2),)), ("docs", ((2, 3), (3, 4))))


def test_a_wildcard_key_covers_the_cells_it_expands_to():
    assert rehydrate_covers("web:domain=*", "web:domain=3")
    assert rehydrate_covers("web:domain=*,quality_bucket=*", "web:domain=3,quality_bucket=2")
    assert rehydrate_covers("web:domain=*,quality_bucket=2", "web:domain=math,quality_bucket=2")
    assert not rehydrate_covers("web:domain=*,quality_bucket=2", "web:domain=3,quality_bucket=1")
    assert not rehydrate_covers("web:domain=*", "web:domain=3,quality_bucket=2")
    assert not rehydrate_covers("web:domain=*", "code:domain=3")
    assert not rehydrate_covers("web", "web:domain=3")
    spec = parse_spec({"name": "m", "steps": 1, "weights": {"web:domain=*": 1, "web": 1},
                       "rehydrate": {"web:domain=*": {"1": 1, "2": 2}}}, "m.toml")
    assert spec.rehydration("web:domain=4") == ((1, 1), (2, 2)) and spec.rehydration("web") == ()


BAD_TABLES = [
    ("3", "[rehydrate] must be a table of weight key = { N = REPEATS }"),
    ("{ web = 2 }", "[rehydrate] 'web' must be a table { N = REPEATS }"),
    ("{ web = {} }", "[rehydrate] 'web' must be a table { N = REPEATS }"),
    ("{ blog = { 1 = 2 } }", "[rehydrate] 'blog' is weighed in no phase; give a key of the weights (code, docs, web"),
    ("{ web = { 0 = 2 } }", "'0' is not a distinct whole number >= 1"),
    ("{ web = { x = 2 } }", "'x' is not a distinct whole number >= 1"),
    ("{ web = { 1 = 2, 01 = 3 } }", "'01' is not a distinct whole number >= 1"),
    ("{ web = { 2 = 0 } }", "2 = 0; the repeats are a whole number >= 1"),
    ("{ web = { 2 = 1.5 } }", "2 = 1.5; the repeats are a whole number >= 1"),
]


@pytest.mark.parametrize("table, message", BAD_TABLES, ids=[t for t, _ in BAD_TABLES])
def test_a_bad_rehydrate_table_is_refused_with_a_line_naming_the_fix(table, message):
    import tomllib

    raw = tomllib.loads(GOOD_SPEC + f"\n[x]\nrehydrate = {table}\n")
    raw["rehydrate"] = raw.pop("x")["rehydrate"]
    with pytest.raises(UserError, match=None) as refused:
        parse_spec({"name": "bad", **raw}, "bad.toml")
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_rehydrating_data_curated_before_dup_count_is_refused_in_one_line():
    import duckdb

    from mixtures.compile import check_dup_counts

    con = duckdb.connect()
    con.execute("CREATE VIEW documents AS SELECT 'web' AS source, 10 AS n_tokens")
    spec = parse_spec({"name": "old", "steps": 1, "weights": {"web": 1}, "rehydrate": {"web": {"2": 2}}}, "old.toml")
    with pytest.raises(UserError, match=r"predates; re-run `loom curate`, or drop \[rehydrate\]"):
        check_dup_counts(spec, con)
    check_dup_counts(parse_spec({"name": "old", "steps": 1, "weights": {"web": 1}}, "old.toml"), con)


def test_loom_refuses_a_bad_rehydrate_table_in_one_line_before_compiling(rehydrated):
    ws, _, _ = rehydrated
    write_spec(ws, "badrehydrate", GOOD_SPEC + "[rehydrate]\nweb = { 2 = 0 }\n")
    result = run_loom("-w", ws, "mix", "build", "badrehydrate", check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "the repeats are a whole number >= 1" in lines[0]
    assert not (ws / "mixtures" / "badrehydrate").exists()
