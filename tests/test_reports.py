"""HTML reports, opened in a real headless Chromium: charts present, numbers equal to the plan's, untrusted
document text inert, nothing fetched from the network."""

import json
import re
import shutil

import pyarrow.parquet as pq
import pytest

from conftest import chromium, needs_chromium, only_the_inline_script, open_page, published, run_loom, write_spec

PAYLOADS = [
    "<script>document.title = 'pwned-by-script'</script>",
    '<img src="x" onerror="document.title = \'pwned-by-onerror\'">',
    "</pre><script>document.title = 'pwned-by-breakout'</script><pre>",
]
pytestmark = needs_chromium()


@pytest.fixture(scope="module")
def five_source_mixture(quickstart_ws):
    ws, _ = quickstart_ws
    write_spec(ws, "five", 'seq_len = 128\nglobal_batch = 32\ntotal_tokens = 1_000_000\n[weights]\nweb = 0.25\n'
                           'docs = 0.3\ncode = 0.3\nreference = 0.1\nfortunes = 0.05\n[midtrain]\ndocs = 0.5\n'
                           '"code:quality_bucket>=3" = 0.3\nreference = 0.2\n')
    run_loom("-w", ws, "mix", "build", "five")
    return ws, ws / "mixtures" / "five" / "report.html"


def test_the_mixture_report_renders_its_charts_and_the_plans_numbers(five_source_mixture, tmp_path):
    ws, report = five_source_mixture
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert dom.title == "Loom mixture five"
    plan = pq.read_table(ws / "mixtures" / "five" / "plan.parquet").to_pylist()
    for phase in ("pretrain", "midtrain"):
        rows = [r for r in dom.tables[f"plan-{phase}"] if r]
        expected = [r for r in plan if r["phase"] == phase]
        assert [int(r[4]) for r in rows] == [r["tokens"] for r in expected]  # the tokens column
        assert [float(r[2]) for r in rows] == pytest.approx([r["target_share"] for r in expected])
    assert dom.charts["composition-chart"] == len(plan)  # one segment per phase and component
    assert dom.charts["funnel-chart"] >= 5 and dom.charts["languages"] > 1
    assert {f"length-{s}" for s in ("web", "docs", "code", "fortunes", "reference")} <= dom.charts.keys()
    meta = json.loads((ws / "mixtures" / "five" / "schedule.json").read_text())
    headline = report.read_text()
    assert f"<b>{meta['tokens']:,}</b>" in headline
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    raw = [int(row[1]) for row in dom.tables["funnel-table"] if row]  # per source, alphabetically
    assert raw == [sum(1 for f in funnel if f["source"] == s) for s in sorted({f["source"] for f in funnel})]


def test_the_mixture_report_is_small_and_needs_no_network(five_source_mixture, tmp_path):
    _, report = five_source_mixture
    text = report.read_text()
    assert report.stat().st_size < 5 * 1024 * 1024
    assert not re.findall(r"""(?:src|href)\s*=\s*["']?[^"'>\s]*http""", text, flags=re.IGNORECASE)
    only_the_inline_script(text, open_page(report, tmp_path)[0])
    shot = tmp_path / "mixture.png"
    result = chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.stat().st_size > 20_000


def test_untrusted_document_text_renders_as_text(quickstart_ws, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(quickstart_ws[0], ws)
    evil = tmp_path / "evil.jsonl"
    def filler(i: int) -> str:  # distinct per document, or dedup would keep one of them
        return " ".join(f"word{i}x{k}" for k in range(300))

    evil.write_text("".join(json.dumps({"text": f"{p} {filler(i)}"}) + "\n" for i, p in enumerate(PAYLOADS)))
    sources = ws / "sources.toml"
    sources.write_text(sources.read_text() + f'\n[[source]]\nname = "evil"\nformat = "jsonl"\npaths = ["{evil}"]\n'
                                             'filters = []\n')
    run_loom("-w", ws, "curate")
    run_loom("-w", ws, "report", "curation")
    report = published(ws) / "manifest" / "report.html"
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert dom.title == "Loom curation report"
    only_the_inline_script(report.read_text(), dom)  # no payload's script or img among the elements
    text = report.read_text()
    assert text.count("&lt;script&gt;document.title") >= 2 and "onerror=&quot;document.title" in text
    shot = tmp_path / "curation.png"
    chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 20_000


def test_report_open_prints_the_path_and_a_missing_report_is_one_line(five_source_mixture, tmp_path):
    ws, report = five_source_mixture
    assert run_loom("-w", ws, "report", "open", "five").stdout.strip() == str(report)
    missing = run_loom("-w", tmp_path, "report", "open", "nosuch", check=False)
    assert missing.returncode == 2 and "no report at" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
