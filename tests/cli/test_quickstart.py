"""`loom quickstart` on the whole bundled corpora, as a new user runs it."""

import json

import pyarrow.parquet as pq

from helpers import compiled, published, run_loom

BUNDLED = ("web", "docs", "code", "fortunes", "reference")


def test_quickstart_curates_the_bundled_corpora_and_reports_them(quickstart_ws):
    ws, result = quickstart_ws
    out = result.stdout
    assert "Tokenizer:" in out and "Quality model:" in out and "Curation funnel" in out
    assert f"Workspace:       {ws}" in out
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    documents = pq.read_table(published(ws) / "manifest" / "documents").to_pylist()
    assert {row["source"] for row in funnel} == set(BUNDLED)
    for source in BUNDLED:
        kept = sum(1 for row in documents if row["source"] == source)
        assert kept > 0, f"{source}: nothing kept"
        inputs = sum(1 for row in funnel if row["source"] == source)
        assert f"│ {source:<9} │ {inputs:>7,} │" in out  # the summary's "docs in" is the funnel's count
    assert sum(1 for row in funnel if row["source"] == "web") == 192  # 32 handbook pages in 6 languages
    assert {row["quality_bucket"] for row in documents} == {0, 1, 2, 3, 4}
    assert "Mixture 'sample':" in out and (compiled(ws, "sample") / "schedule.json").exists()

    run = ws / "runs" / "quickstart"
    assert f"Run report: {run / 'report.html'}" in out
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(60)) and records[-1]["loss"] < records[0]["loss"] - 1.0
    assert json.loads((run / "run.json").read_text())["status"] == "stopped"  # a short run of the 244 steps
    evaluated = [r for r in records if "eval_bpb_by_set" in r]
    assert [r["step"] for r in evaluated] == [19, 39, 59] and 0 < evaluated[-1]["eval_bpb_by_set"]["bofh"] < 10
    assert "eval set 'bofh' loss" in out and "bits per byte" in out

    # the README: quickstart "writes every report", and `report open` opens index.html, "every page ... linked"
    pages = [published(ws) / "manifest" / "report.html", ws / "mixtures" / "sample" / "report.html",
             run / "report.html", ws / "index.html"]
    shown = [line.split(maxsplit=1)[1] for line in out.splitlines() if line.startswith(("Report: ", "Index:  "))]
    assert shown[-4:] == [str(page) for page in pages] and all(page.is_file() for page in pages)
    assert f"Next: `loom -w {ws} report open` (the index links every page)" in out
    index = pages[-1].read_text()
    assert "no page yet" not in index and all(f'href="{p.relative_to(ws)}"' in index for p in pages[:-1])

    again = run_loom("-w", ws, "quickstart", timeout=600)
    assert "is at step 60 already" in again.stdout and "nothing to train" in again.stdout  # nothing trained twice
    assert "Tokenizer:" not in again.stdout and "Quality model:" not in again.stdout  # trained once, reused
    assert f"note: nothing to do: generation {published(ws).name} is published already" in again.stdout
    assert again.stdout.split("Curation funnel")[1].split("Curated in")[0] == out.split("Curation funnel")[1].split("Curated in")[0]
