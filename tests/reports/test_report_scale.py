"""The curation and mixture reports at 300 sources (the quickstart's five, each repeated 60 times under new names,
as bench/report_scale.py builds them, removed texts included): small, one bar segment per shown source and one for
the rest, every source in the table, removed texts of the 10 sources that lost the most, legends without a repeated
colour, no console error."""

import importlib.util
import re
import subprocess
import sys

import pytest

from helpers import REPO, run_loom
from report_pages import chromium, needs_chromium, open_page

TARGET_BYTES = 1_500_000
TOP_N = 10
pytestmark = needs_chromium()


def bench_module():
    spec = importlib.util.spec_from_file_location("report_scale", REPO / "bench" / "report_scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chart(text: str, chart_id: str) -> str:
    """The markup of the SVG chart `chart_id`."""
    return re.search(rf'<svg class="chart" id="{re.escape(chart_id)}".*?</svg>', text, flags=re.DOTALL).group()


def bars(svg: str) -> dict[str, tuple[float, list[float]]]:
    """Each bar of a bars.bar_chart: {label: (its data-total, its segments' widths)}."""
    return {label: (float(total), [float(w) for w in re.findall(r'<rect [^>]*\swidth="([\d.]+)"', inner)])
            for label, total, inner in re.findall(r'<g class="bar" data-label="([^"]*)" data-total="([^"]*)">(.*?)</g>',
                                                  svg, flags=re.DOTALL)}


def legend_colors(text: str) -> list[list[str]]:
    return [re.findall(r"background:\s*(#[0-9a-fA-F]{6})", legend)
            for legend in re.findall(r'<div class="legend">(.*?)</div>', text, flags=re.DOTALL)]


def spot_ids(text: str) -> dict[str, list[str]]:
    """The spot-checked documents' ids under each source's heading."""
    section = text.split("<h2>Spot checks</h2>", 1)[1]
    return {source: re.findall(r'<p class="note spot">([^ ]+) ·', body)
            for source, body in re.findall(r"<h3>([^<]*)</h3>(.*?)(?=<h3>|</body>)", section, flags=re.DOTALL)}


@pytest.fixture(scope="module")
def wide_ws(quickstart_ws, tmp_path_factory):
    """The quickstart workspace with 300 sources, and a 480-weight mixture `wide` compiled over 240 of them."""
    report_scale = bench_module()
    ws = tmp_path_factory.mktemp("wide") / "ws"
    names = report_scale.widen(quickstart_ws[0], ws, 60)
    (ws / "mixtures").mkdir()
    (ws / "mixtures" / "wide.toml").write_text(report_scale.mixture_spec(names))
    run_loom("-w", ws, "mix", "build", "wide")
    return ws, names


def check_page(path, tmp_path, name: str):
    """What every page at 300 sources must be: small, no console error, a plausible screenshot, a colour per
    legend entry; returns its text and its DOM."""
    text = path.read_text()
    assert path.stat().st_size < TARGET_BYTES
    dom, console = open_page(path, tmp_path)
    assert console == "", console
    shot = tmp_path / f"{name}.png"
    result = chromium(path.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.stat().st_size > 30_000
    for colors in legend_colors(text):
        assert len(colors) == len(set(colors)) and len(colors) <= TOP_N + 4, colors  # 4: the funnel's removed fates
    assert text.count('<svg class="chart"') <= 40
    return text, dom


def test_the_curation_report_at_300_sources_is_small_and_complete(wide_ws, tmp_path):
    ws, names = wide_ws
    from reports.build import curation_report

    text, dom = check_page(curation_report(ws), tmp_path, "curation")
    funnel = bars(chart(text, "funnel-chart"))
    assert len(funnel) == TOP_N and all(total == 3805 for total, _ in funnel.values())  # the fortunes copies
    assert len(names) == 300 and len([row for row in dom.tables["funnel-table"] if row]) == 300
    shown = spot_ids(text)
    assert len(shown) == TOP_N and all(len(ids) == len(set(ids)) for ids in shown.values())
    folded = re.findall(r'<details class="removed" id="removed-([^"]+)">', text)  # the sources that lost the most
    assert len(folded) == TOP_N and all(name.startswith("fortunes-") for name in folded)


def test_the_mixture_report_at_300_sources_is_small_with_other_drawn_as_one(wide_ws, tmp_path):
    ws, _ = wide_ws
    text, dom = check_page(ws / "mixtures" / "wide" / "report.html", tmp_path, "mixture")
    blocks = re.findall(r'<rect class="phase"[^>]*>', text)
    components = re.findall(r'<rect class="component" data-name="([^"]*)"', chart(text, "phase-timeline"))
    assert len(blocks) == 2 and len(components) <= 2 * (TOP_N + 1)
    assert sum(name.startswith("other (") for name in components) == 2  # one "other" per phase
    totals = bars(chart(text, "source-tokens-chart"))
    assert len(totals) == TOP_N + 1 and "other (230 sources)" in totals
    assert len([row for row in dom.tables["source-tokens-table"] if row]) == 240


def test_the_bench_prints_time_and_size_against_the_targets(quickstart_ws, tmp_path):
    result = subprocess.run([sys.executable, REPO / "bench" / "report_scale.py", "--workspace", quickstart_ws[0],
                             "--copies", "2", "--workdir", tmp_path / "bench"], capture_output=True, text=True,
                            cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("10 sources written") and "ok" in lines[1]
    assert [line.split()[0] for line in lines[3:5]] == ["curation", "mixture"]
    assert lines[-1].startswith("worst ratio against the targets")
