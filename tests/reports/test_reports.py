"""HTML reports, opened in a real headless Chromium: charts present, numbers equal to the plan's, untrusted
document text inert, nothing fetched from the network."""

import json
import re
import shutil

import pyarrow.parquet as pq
import pytest

from helpers import compiled, copy_curated, published, run_loom, write_spec
from report_pages import chromium, needs_chromium, only_the_inline_script, open_page
from test_report_scale import bars, chart, legend_colors, spot_ids

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
    plan = pq.read_table(compiled(ws, "five") / "plan.parquet").to_pylist()
    for phase in ("pretrain", "midtrain"):
        rows = [r for r in dom.tables[f"plan-{phase}"] if r]
        expected = [r for r in plan if r["phase"] == phase]
        assert [int(r[4]) for r in rows] == [r["tokens"] for r in expected]  # the tokens column
        assert [float(r[2]) for r in rows] == pytest.approx([r["target_share"] for r in expected])
    text = report.read_text()
    components = re.findall(r'<rect class="component" data-name="([^"]*)"', chart(text, "phase-timeline"))
    assert len(components) == len(plan)  # one block per phase and component
    assert dom.charts["funnel-chart"] >= 5 and dom.charts["languages"] > 1
    assert {f"length-{s}" for s in ("web", "docs", "code", "fortunes", "reference")} <= dom.charts.keys()
    meta = json.loads((compiled(ws, "five") / "schedule.json").read_text())
    assert f"<b>{meta['tokens']:,}</b>" in text
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    raw = [int(row[1]) for row in dom.tables["funnel-table"] if row]  # per source, alphabetically
    assert raw == [sum(1 for f in funnel if f["source"] == s) for s in sorted({f["source"] for f in funnel})]
    licenses = pq.read_table(compiled(ws, "five") / "licenses.parquet").to_pylist()  # examples/sources.toml's
    shown = {(r[0], r[1]): int(r[2]) for r in dom.tables["licenses"] if r}
    assert shown == {(r["phase"], r["license"]): r["tokens"] for r in licenses}
    assert ("midtrain", "GPL-2.0-or-later") in shown and ("pretrain", "BSD-3-Clause") in shown  # reference, fortunes


def test_the_mixture_reports_phases_are_as_wide_as_their_tokens(five_source_mixture):
    ws, report = five_source_mixture
    text = report.read_text()
    meta = json.loads((compiled(ws, "five") / "schedule.json").read_text())
    blocks = re.findall(r'<rect class="phase" data-phase="([^"]*)" data-tokens="(\d+)"[^>]*\swidth="([\d.]+)"', text)
    per_step = meta["seq_len"] * meta["global_batch"]
    tokens = [(p["end_step"] - p["start_step"]) * per_step for p in meta["phases"]]
    assert [(name, int(n)) for name, n, _ in blocks] == [(p["name"], t) for p, t in zip(meta["phases"], tokens)]
    widths = [float(w) for _, _, w in blocks]
    assert [w / sum(widths) for w in widths] == pytest.approx([t / sum(tokens) for t in tokens], abs=1e-3)
    assert 0.75 < widths[0] / sum(widths) < 0.85  # pretrain's 80%, not each phase at 100%
    for phase, t in zip(meta["phases"], tokens):
        steps = phase["end_step"] - phase["start_step"]
        assert f"{t:,} tokens" in text and f"({steps:,} steps)" in text
    assert "epochs up to" in text
    totals = bars(chart(text, "source-tokens-chart"))
    assert sum(total for total, _ in totals.values()) == pytest.approx(meta["tokens"], rel=1e-6)


def test_funnel_bars_are_as_long_as_their_sources(five_source_mixture):
    ws, report = five_source_mixture
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    for page in (report, published(ws) / "manifest" / "report.html"):
        drawn = bars(chart(page.read_text(), "funnel-chart"))
        raw = {s: sum(1 for f in funnel if f["source"] == s) for s in drawn}
        assert {s: total for s, (total, _) in drawn.items()} == raw
        per_record = {s: sum(widths) / raw[s] for s, (_, widths) in drawn.items()}
        assert max(per_record.values()) == pytest.approx(min(per_record.values()), rel=0.01)  # one scale


def test_sources_look_the_same_on_every_page_and_legends_never_repeat_a_colour(five_source_mixture):
    ws, report = five_source_mixture
    from reports.build import curation_report
    from reports.colors import workspace_colors

    colors = workspace_colors(ws)
    for page in (report, curation_report(ws)):
        text = page.read_text()
        for source in ("web", "docs", "code", "fortunes", "reference"):
            assert f'fill="{colors.of(source)}"' in chart(text, f"length-{source}")
        assert all(len(c) == len(set(c)) for c in legend_colors(text))
    slice_color = colors.of_component("code:quality_bucket>=3", ["code"], ["code", "code:quality_bucket>=3"])
    drawn = re.findall(r'<rect class="component" data-name="code:quality_bucket&gt;=3"[^>]*fill="(#[0-9a-f]{6})"',
                       report.read_text())
    assert drawn == [slice_color] and slice_color != colors.of("code")  # a shade of code's colour


def test_spot_checks_show_each_document_once(five_source_mixture):
    ws, report = five_source_mixture
    for page in (report, published(ws) / "manifest" / "report.html"):
        shown = spot_ids(page.read_text())
        assert shown and all(len(ids) == len(set(ids)) >= 3 for ids in shown.values())


def test_a_copied_workspace_shows_its_own_tokenizer(five_source_mixture, tmp_path):
    ws, _ = five_source_mixture
    copy = tmp_path / "copy"
    shutil.copytree(ws, copy, ignore=shutil.ignore_patterns("runs", "ladders", "searches"))
    from reports.build import mixture_report

    text = mixture_report(copy, "five").read_text()
    meta = json.loads((compiled(copy, "five") / "schedule.json").read_text())
    assert f"tokenizer models/tokenizer.json (fingerprint {meta['tokenizer_fingerprint']})" in text
    assert str(ws) not in text


def test_the_mixture_report_is_small_and_needs_no_network(five_source_mixture, tmp_path):
    _, report = five_source_mixture
    text = report.read_text()
    assert report.stat().st_size < 5 * 1024 * 1024
    assert not re.findall(r"""(?:src|href)\s*=\s*["']?[^"'>\s]*http""", text, flags=re.IGNORECASE)
    only_the_inline_script(text, open_page(report, tmp_path)[0])
    shot = tmp_path / "mixture.png"
    result = chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.stat().st_size > 20_000


def test_untrusted_document_text_renders_as_text(curated_slice, slice_sources, slice_tokenizer, tmp_path):
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws")  # the curated slice: one source more to curate
    evil = tmp_path / "evil.jsonl"
    def filler(i: int) -> str:  # distinct per document, or dedup would keep one of them
        return " ".join(f"word{i}x{k}" for k in range(300))

    evil.write_text("".join(json.dumps({"text": f"{p} {filler(i)}"}) + "\n" for i, p in enumerate(PAYLOADS)))
    sources = ws / "sources.toml"
    sources.write_text(f'root = "{slice_sources.parent}"\n{slice_sources.read_text()}\n[[source]]\nname = "evil"\n'
                       f'format = "jsonl"\npaths = ["{evil}"]\nfilters = []\n')
    run_loom("-w", ws, "curate")
    run_loom("-w", ws, "report", "curation")
    report = published(ws) / "manifest" / "report.html"
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert dom.title == "Loom curation report"
    only_the_inline_script(report.read_text(), dom)  # no payload's script or img among the elements
    text = report.read_text()
    assert text.count("&lt;script&gt;document.title") >= 2 and "onerror=&quot;document.title" in text
    # personal data: the slice's web source redacts by default (a row per kind and its total), evil looks for none
    pii = [r for r in dom.tables["pii-counts"] if r]
    assert len(pii) == 5 and all(len(r) == 5 and r[2:] != [None] * 3 for r in pii), pii
    shot = tmp_path / "curation.png"
    chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 20_000


def test_report_open_prints_the_path_and_a_missing_report_is_one_line(five_source_mixture, tmp_path):
    ws, report = five_source_mixture
    assert run_loom("-w", ws, "report", "open", "five").stdout.strip() == str(report)
    missing = run_loom("-w", tmp_path, "report", "open", "nosuch", check=False)
    assert missing.returncode == 2 and "no page named 'nosuch'" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
