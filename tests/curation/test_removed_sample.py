"""What a generation keeps so a user can read what was removed: manifest/removed/ (the `removed` view), a sample of
removed documents' text per shard and reason with the funnel's fate, reason and detail, and the setting that sizes
it. (`removed_sample = "all"`, a too_large record's raw start and a generation without the table: test_bad_input.)"""

from collections import Counter

import pyarrow.parquet as pq

from base.workspace import Workspace
from curation.config import load_config
from curation.job import JobContext
from curation.stages.prepare import PREPARE
from curation.steps.filters import FILTERS
from helpers import published
from reports.views import connect

DEFAULT_SAMPLE = 50
KEY = ("source", "shard", "record")


def removed_rows(funnel: list[dict]) -> list[dict]:
    return [row for row in funnel if row["fate"] != "kept"]


def test_the_generation_keeps_each_shards_first_removed_texts_per_reason_with_the_funnels_fate_and_detail(curated_slice):
    ws, _ = curated_slice
    gen = published(ws)
    funnel = pq.read_table(gen / "manifest" / "funnel").to_pylist()
    removed = pq.read_table(gen / "manifest" / "removed").to_pylist()
    assert sorted(p.name for p in (gen / "manifest" / "removed").iterdir()) == \
        sorted(p.name for p in (gen / "manifest" / "funnel").iterdir())  # a part per shard, empty ones too
    by_key = {tuple(row[k] for k in KEY): row for row in funnel}
    for row in removed:
        recorded = by_key[tuple(row[k] for k in KEY)]
        assert {k: row[k] for k in ("input", "doc_id", "fate", "stage", "reason", "detail")} == \
            {k: recorded[k] for k in ("input", "doc_id", "fate", "stage", "reason", "detail")}
        assert row["fate"] != "kept" and row["text"]
    filtered = [row for row in funnel if row["stage"] in FILTERS]
    assert filtered and all(row["detail"] for row in filtered)  # each filter's measure against its threshold
    per_reason = Counter((r["source"], r["shard"], r["reason"]) for r in removed_rows(funnel))
    assert max(per_reason.values()) > DEFAULT_SAMPLE  # fortunes' short docs: the bound is met
    assert Counter((r["source"], r["shard"], r["reason"]) for r in removed) == \
        {key: min(n, DEFAULT_SAMPLE) for key, n in per_reason.items()}
    for part in (gen / "manifest" / "removed").iterdir():
        records = pq.read_table(part, columns=["record"])["record"].to_pylist()
        assert records == sorted(records)
    curated = {row["id"]: row["text"] for row in pq.read_table(gen / "curated", columns=["id", "text"]).to_pylist()}
    duplicates = [row for row in removed if row["reason"] == "exact_duplicate"]
    assert duplicates and all(row["text"] == curated[row["doc_id"]] for row in duplicates)  # the kept copy's text
    con, names = connect(ws)
    assert "removed" in names
    assert con.execute("SELECT count(*) FROM removed").fetchone()[0] == len(removed)


def test_removed_sample_enters_prepares_own_fingerprint_only_when_it_is_not_the_default(tmp_path):
    def prepare_inputs(inspect: str) -> str:
        (tmp_path / "sources.toml").write_text(
            f'[[source]]\nname = "web"\nformat = "jsonl"\npaths = ["x.jsonl"]\n{inspect}')
        config = load_config(tmp_path / "sources.toml")
        return PREPARE.own_inputs(JobContext(workspace=Workspace(tmp_path), config=config, tokenizer=""))

    default = prepare_inputs("")
    assert default == "" and prepare_inputs(f"[inspect]\nremoved_sample = {DEFAULT_SAMPLE}\n") == default
    two, every = prepare_inputs("[inspect]\nremoved_sample = 2\n"), prepare_inputs('[inspect]\nremoved_sample = "all"\n')
    assert len({default, two, every}) == 3 and prepare_inputs("[inspect]\nremoved_sample = 2\n") == two
