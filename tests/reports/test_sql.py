"""`loom sql`: the example questions of docs/reports.md, checked against the same figures computed with pyarrow."""

import csv
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict

import duckdb
import pyarrow.parquet as pq
import pytest

from helpers import compiled, REPO, published, run_loom
from reports.sql import CELL_WIDTH, aligned
from reports.views import connect

README_QUERIES = re.findall(r'^\$ loom sql "([^"]*)"$', (REPO / "docs" / "reports.md").read_text(), flags=re.MULTILINE)


def sql_csv(ws, query: str) -> list[list[str]]:
    out = run_loom("-w", ws, "sql", "--format", "csv", query).stdout
    return list(csv.reader(out.strip().splitlines()))[1:]


@pytest.fixture(scope="module")
def tables(quickstart_ws):
    ws, _ = quickstart_ws
    return ws, {name: pq.read_table(published(ws) / "manifest" / name).to_pylist()
                for name in ("documents", "funnel")}


def test_the_sql_page_has_five_example_questions():
    assert len(README_QUERIES) == 5


def test_tokens_per_source(tables):
    ws, t = tables
    expected = defaultdict(lambda: [0, 0])
    for doc in t["documents"]:
        expected[doc["source"]][0] += 1
        expected[doc["source"]][1] += doc["n_tokens"]
    rows = sql_csv(ws, README_QUERIES[0])
    assert {r[0]: [int(r[1]), int(r[2])] for r in rows} == dict(expected)
    assert [int(r[2]) for r in rows] == sorted((v[1] for v in expected.values()), reverse=True)


def test_why_a_document_was_removed(tables):
    ws, t = tables
    doc_id = re.search(r"doc_id = '([0-9a-f]{32})'", README_QUERIES[1]).group(1)
    expected = [(r["fate"], r["stage"], r["reason"], r["detail"]) for r in t["funnel"] if r["doc_id"] == doc_id]
    assert expected and expected[0][2] == "near_duplicate"
    assert [tuple(r) for r in sql_csv(ws, README_QUERIES[1])] == expected


def test_top_removal_reasons_per_source(tables):
    ws, t = tables
    counts = defaultdict(Counter)
    for row in t["funnel"]:
        if row["fate"] != "kept":
            counts[row["source"]][row["reason"]] += 1
    expected = [[s, reason, str(n)] for s in sorted(counts)
                for reason, n in sorted(counts[s].items(), key=lambda kv: (-kv[1], kv[0]))[:2]]
    assert sql_csv(ws, README_QUERIES[2]) == expected


def test_quality_by_language(tables):
    ws, t = tables
    by_lang = defaultdict(list)
    for doc in t["documents"]:
        by_lang[doc["lang"]].append(doc["quality"])
    rows = sql_csv(ws, README_QUERIES[3])
    assert {r[0] for r in rows} == {lang for lang, q in by_lang.items() if len(q) >= 20}
    for lang, docs, mean in rows:
        assert int(docs) == len(by_lang[lang])
        assert abs(float(mean) - sum(by_lang[lang]) / len(by_lang[lang])) < 6e-4


def test_shards_a_mixtures_midtrain_phase_uses(tables):
    ws, t = tables
    plan = pq.read_table(compiled(ws, "sample") / "plan.parquet").to_pylist()
    midtrain = {row["component"] for row in plan if row["phase"] == "midtrain"}
    meta = json.loads((compiled(ws, "sample") / "schedule.json").read_text())
    expected = Counter()
    for component in meta["components"]:
        if component["key"] in midtrain:
            for doc in pq.read_table(compiled(ws, "sample") / component["file"]).to_pylist():
                expected[doc["shard"]] += 1
    assert {r[0]: int(r[1]) for r in sql_csv(ws, README_QUERIES[4])} == dict(expected)


def test_views_printed_for_another_client_give_the_same_results(tables):
    ws, _ = tables
    statements = run_loom("-w", ws, "sql", "--views").stdout
    con = duckdb.connect()
    con.execute(statements)
    loom_con, views = connect(ws)
    assert statements.count("CREATE OR REPLACE VIEW") == len(views)
    for query in README_QUERIES:
        assert con.sql(query).fetchall() == loom_con.sql(query).fetchall()
    assert [[str(v) for v in row] for row in con.sql(README_QUERIES[2]).fetchall()] == sql_csv(ws, README_QUERIES[2])


def test_queries_from_stdin_a_database_file_and_errors(tables, tmp_path):
    ws, t = tables
    piped = subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), "sql", "--format", "csv"], input="SELECT count(*) AS n FROM funnel",
                           capture_output=True, text=True, check=True)
    assert piped.stdout.split() == ["n", str(len(t["funnel"]))]
    db = tmp_path / "loom.duckdb"
    run_loom("-w", ws, "sql", "--db", db)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.sql("SELECT count(*) FROM funnel").fetchall()[0][0] == len(t["funnel"])
    bad = run_loom("-w", ws, "sql", "SELECT nope FROM funnel", check=False)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "nope" in bad.stderr and "views: documents, doc_stats" in bad.stderr
    write = run_loom("-w", ws, "sql", "DROP VIEW funnel", check=False)
    assert write.returncode == 2 and "only reads" in write.stderr
    out = tmp_path / "tokens.parquet"
    run_loom("-w", ws, "sql", "--format", "parquet", "--output", out, README_QUERIES[0])
    assert pq.read_table(out).num_rows == len({d["source"] for d in t["documents"]})
    cut = run_loom("-w", ws, "sql", "--limit", "3", "SELECT * FROM doc_stats").stdout
    assert len(cut.strip().splitlines()) == 2 + 3 + 1 and "more exist" in cut


def test_a_long_path_in_a_table_loses_its_start_and_keeps_its_file_name_a_long_text_loses_its_end():
    path = "/home/someone/debian-docs/workspaces/loom-work/corpora/sqlite-html/lang_select.html"
    text = "The SELECT statement is used to query the database; its result is zero or more rows of data"
    _, _, row = aligned(["input", "text"], [(path, text)]).splitlines()
    cut_path, cut_text = row.split("  ", 1)[0], row.split("  ", 1)[1].strip()
    assert cut_path == ".../loom-work/corpora/sqlite-html/lang_select.html"  # cut at a '/', within the width
    assert cut_text == text[:CELL_WIDTH - 3] + "..." and len(cut_text) == CELL_WIDTH


def test_a_text_of_several_lines_stays_on_its_row():
    table = aligned(["reason", "text"], [("curly_bracket", "$var\nwhere\tvar"), ("x", "one")])
    assert table.splitlines()[2:] == ["curly_bracket  $var\\nwhere\\tvar", "x              one"]


def test_run_views_appear_when_a_workspace_has_runs(tmp_path):
    for run, losses in (("a", [4.0, 3.5, 3.1]), ("b", [5.0, 4.2])):
        (tmp_path / "runs" / run).mkdir(parents=True)
        (tmp_path / "runs" / run / "metrics.jsonl").write_text(
            "".join(json.dumps({"step": i, "loss": loss, "lr": 1e-3}) + "\n" for i, loss in enumerate(losses)))
    rows = sql_csv(tmp_path, "SELECT run, records, last_step, last_loss FROM runs ORDER BY run")
    assert rows == [["a", "3", "2", "3.1"], ["b", "2", "1", "4.2"]]
    assert run_loom("-w", tmp_path, "sql", "--views").stdout.count("CREATE OR REPLACE VIEW") == 2


def test_the_cli_the_reports_and_the_run_metrics_load_without_torch_or_datatrove():
    """Commands that do not train or filter stay quick: torch is imported only when a command trains, datatrove's
    filters (and the Hugging Face hub they import, 0.2 s) only when documents are filtered."""
    code = ("import sys, loom.cli, reports.build, reports.index, reports.run, reports.sql, trainer.metrics, mixtures, "
            "curation.config; print(sorted(m for m in ('torch', 'trainer.loop', 'datatrove') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
