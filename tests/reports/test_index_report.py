"""The workspace's index page: `loom report` with no command writes every page and then it, `loom report open`
prints it; every mixture, run, ladder and the curation report linked, each link to a page that exists."""

import json
import shutil
from pathlib import Path
from urllib.parse import unquote

from helpers import compiled, run_loom
from report_pages import chromium, needs_chromium, open_page

pytestmark = needs_chromium()


def test_the_index_links_every_page_of_the_workspace(quickstart_ws, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(quickstart_ws[0], ws, ignore=shutil.ignore_patterns("checkpoints"))
    shutil.copy(compiled(ws, "sample") / "mixture.toml", ws / "mixtures" / "draft.toml")
    (ws / "mixtures" / "draft.toml").write_text((ws / "mixtures" / "draft.toml").read_text().replace(
        'name = "sample"', 'name = "draft"'))
    pages = [next(ws.glob("generations/*/manifest/report.html")), ws / "mixtures" / "sample" / "report.html",
             ws / "runs" / "quickstart" / "report.html"]
    for page in pages:
        page.unlink()
    result = run_loom("-w", ws, "report")  # every page the workspace has data for, then the index
    index = ws / "index.html"
    assert result.stdout == "".join(f"Report: {page}\n" for page in pages) + (
        f"Index:  {index}\nNext: `loom -w {ws} report open` (opens the index where a browser is)\n")
    assert all(page.is_file() for page in pages) and index.is_file()
    dom, console = open_page(index, tmp_path)
    assert console == "", console
    hrefs = [attrs["href"] for tag, attrs in dom.tags if tag == "a" and "href" in attrs]
    for href in hrefs:
        assert (ws / unquote(href)).is_file(), href  # relative to the workspace, and there
    assert "runs/quickstart/report.html" in hrefs and "mixtures/sample/report.html" in hrefs
    assert any(h.endswith("manifest/report.html") for h in hrefs)
    runs = [r for r in dom.tables["index-runs"] if r]
    assert len(runs) == 1 and int(runs[0][3]) == len((ws / "runs" / "quickstart" / "metrics.jsonl").read_text().splitlines())
    assert "loom mix build draft" in index.read_text()  # a spec not built names the command
    generation = json.loads((ws / "published.json").read_text())["generation"]
    curated = json.loads((ws / "generations" / generation / "manifest" / "curation.json").read_text())["sources"]
    assert len([r for r in dom.tables["index-sources"] if r]) == len(curated)
    shot = tmp_path / "index.png"
    chromium(index.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,1600", f"--screenshot={shot}")
    assert shot.stat().st_size > 15_000


def test_report_open_without_a_name_rewrites_and_prints_the_index(quickstart_ws, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(quickstart_ws[0], ws, ignore=shutil.ignore_patterns("checkpoints", "runs"))
    opened = run_loom("-w", ws, "report", "open")
    assert Path(opened.stdout.strip()) == ws / "index.html"
    assert "None yet: <code>loom train --mixture NAME</code>" in (ws / "index.html").read_text()


def test_an_empty_workspace_has_an_index_that_says_what_to_run(tmp_path):
    run_loom("-w", tmp_path / "ws", "report")
    text = (tmp_path / "ws" / "index.html").read_text()
    assert "Nothing curated yet" in text and "loom curate" in text
    assert "None yet: <code>loom ladder NAME --mixture MIX</code>" in text
    (tmp_path / "ws" / "searches" / "first").mkdir(parents=True)  # a search whose page is not written yet
    run_loom("-w", tmp_path / "ws", "report")
    assert "loom mix search first --from MIX" in (tmp_path / "ws" / "index.html").read_text()


def test_report_open_finds_a_run_or_a_comparison_by_its_name(quickstart_ws, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(quickstart_ws[0], ws, ignore=shutil.ignore_patterns("checkpoints"))
    assert Path(run_loom("-w", ws, "report", "open", "quickstart").stdout.strip()) == ws / "runs" / "quickstart" / "report.html"
    shutil.copytree(ws / "runs" / "quickstart", ws / "runs" / "again")
    run_loom("-w", ws, "report", "compare", "quickstart", "again", "--name", "both")
    assert Path(run_loom("-w", ws, "report", "open", "both").stdout.strip()) == ws / "reports" / "compare" / "both.html"
    run_loom("-w", ws, "report")
    assert 'href="reports/compare/both.html"' in (ws / "index.html").read_text()
