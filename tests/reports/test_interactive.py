"""The reports' inline script in a real headless Chromium: real mouse events on line charts (hover values, legend
toggles, zoom, smoothing, log y, a token x-axis), sortable and filterable tables, no console errors on any kind of
page, and pages that still read without it."""

import json
import math
import re
from pathlib import Path

import pytest

from report_pages import Dom, needs_chromium, open_page, run_in_page
from reports.html import SCRIPT, line_chart, page, stacked_bars, table

pytestmark = needs_chromium()
EVIL = "<img src=x onerror=\"document.title='pwned'\"></pre><script>document.title='pwned'</script>"
STEPS = range(0, 200, 2)
TRAIN = [(s, 6 * math.exp(-s / 60) + 2 + 0.2 * math.sin(s / 3)) for s in STEPS]
VAL = [(s, 6 * math.exp(-s / 60) + 2.3) for s in range(0, 200, 25)]
TOKENS_PER_STEP = 8 * 1024
# Helpers for the scripts run in a page: pixels of a rendered series, mouse events at chart coordinates, findings.
PRELUDE = """
const out = {};
const chart = id => document.getElementById(id);
const pixels = el => el.getAttribute('points').trim().split(' ').map(p => p.split(',').map(Number));
const fire = (svg, type, x, y) => { const r = svg.getBoundingClientRect();
  svg.dispatchEvent(new MouseEvent(type, {clientX: r.left + x, clientY: r.top + y, bubbles: true, button: 0})); };
const texts = (root, sel) => Array.from(root.querySelectorAll(sel)).map(e => e.textContent);
const series = (svg, i) => svg.querySelector('.series[data-i="' + i + '"]');
const tip = svg => Array.from(svg.parentNode.querySelector('.tip').querySelectorAll('.tip-row')).map(r => r.textContent);
function report() { const pre = document.createElement('pre'); pre.id = 'test-result';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre); }
"""


def chart_page(tmp_path: Path) -> Path:
    body = [line_chart([("train", TRAIN), ("validation", VAL), (EVIL, [(100, 3.0)])], "loss-chart", "loss",
                       markers=[(120, "midtrain from step 120"), (300, "LR decay from step 300")],
                       flags=[(TRAIN[30][0], TRAIN[30][1], EVIL)],
                       alt_x=("tokens", [(s, s * TOKENS_PER_STEP) for s in range(200)])),
            table(["source", "documents"], [["web", 2], ["docs", 10], ["code", None], ["fortunes", 3]], "sources",
                  sortable=True)]
    path = tmp_path / "charts.html"
    path.write_text(page("charts", body), encoding="utf-8")
    return path


def scripted(tmp_path: Path, script: str) -> dict:
    dom, console = run_in_page(chart_page(tmp_path), tmp_path, PRELUDE + script + "\nreport();")
    assert console == "", console
    assert dom.title == "charts" and not [tag for tag, _ in dom.tags if tag == "img"]  # the payload stayed text
    return json.loads(dom.pre["test-result"])


def tip_values(rows: list[str]) -> dict[str, float]:
    return {name: float(value.split()[0].replace(",", "")) for name, value in (r.rsplit(": ", 1) for r in rows)}


def test_hovering_a_line_chart_shows_each_series_value_at_the_nearest_step(tmp_path):
    found = scripted(tmp_path, """
const svg = chart('loss-chart'), [x, y] = pixels(series(svg, 0))[40];
fire(svg, 'mousemove', x + 0.4, y);
out.rows = tip(svg); out.head = svg.parentNode.querySelector('.tip b').textContent;
out.guide = svg.querySelector('.guide').getAttribute('class'); out.guideX = Number(svg.querySelector('.guide').getAttribute('x1'));
out.x = x;""")
    step, loss = TRAIN[40]
    assert found["head"] == f"step {step} \u00b7 tokens {step * TOKENS_PER_STEP:,}"
    values = tip_values(found["rows"])
    assert values["train"] == pytest.approx(loss, rel=1e-3)
    nearest_val = min(VAL, key=lambda p: abs(p[0] - step))
    assert values["validation"] == pytest.approx(nearest_val[1], rel=1e-3)
    assert values[EVIL] == 3.0  # the one-point series, by its name as text
    assert "hidden" not in found["guide"] and found["guideX"] == pytest.approx(found["x"], abs=0.2)


def test_clicking_a_legend_entry_hides_its_series_and_clicking_again_shows_it(tmp_path):
    found = scripted(tmp_path, """
const svg = chart('loss-chart'), key = svg.parentNode.querySelectorAll('.legend span')[1];
key.click(); out.hidden = series(svg, 1).getAttribute('class'); out.key = key.className;
const [x, y] = pixels(series(svg, 0))[40]; fire(svg, 'mousemove', x, y); out.rows = tip(svg);
key.click(); out.shown = series(svg, 1).getAttribute('class');""")
    assert "hidden" in found["hidden"].split() and "off" in found["key"]
    assert "validation" not in tip_values(found["rows"])  # a hidden series is left out of the hover values
    assert "hidden" not in found["shown"].split()


def test_dragging_across_the_plot_zooms_the_x_range_and_a_double_click_resets_it(tmp_path):
    found = scripted(tmp_path, """
const svg = chart('loss-chart'), pts = pixels(series(svg, 0));
out.before = texts(svg, '.xtick').map(t => Number(t.replace(/,/g, '')));
fire(svg, 'mousedown', pts[25][0], 50); fire(svg, 'mousemove', pts[50][0], 60); fire(svg, 'mouseup', pts[50][0], 60);
out.zoomed = texts(svg, '.xtick').map(t => Number(t.replace(/,/g, '')));
out.points = pixels(series(svg, 0)).length;
svg.dispatchEvent(new MouseEvent('dblclick', {bubbles: true}));
out.reset = texts(svg, '.xtick').map(t => Number(t.replace(/,/g, '')));""")
    assert max(found["before"]) - min(found["before"]) >= 150
    assert TRAIN[25][0] <= min(found["zoomed"]) and max(found["zoomed"]) <= TRAIN[50][0]
    assert max(found["zoomed"]) - min(found["zoomed"]) < 60
    assert found["reset"] == found["before"]


def ema(values: list[float], weight: float) -> list[float]:
    last, out = 0.0, []
    for i, value in enumerate(values):
        last = last * weight + (1 - weight) * value
        out.append(last / (1 - weight ** (i + 1)))
    return out


def test_smoothing_and_log_y_redraw_the_lines_from_the_data(tmp_path):
    found = scripted(tmp_path, """
const svg = chart('loss-chart'), bar = svg.parentNode.querySelector('.chart-controls');
out.raw = series(svg, 0).getAttribute('points');
const slider = bar.querySelector('input.smoothing'); slider.value = '0.9'; slider.dispatchEvent(new Event('input'));
out.smooth = series(svg, 0).getAttribute('points');
const [x, y] = pixels(series(svg, 0))[60]; fire(svg, 'mousemove', x, y); out.rows = tip(svg);
slider.value = '0'; slider.dispatchEvent(new Event('input'));
out.unsmoothed = series(svg, 0).getAttribute('points');
bar.querySelector('input.log-y').click();
out.log = series(svg, 0).getAttribute('points'); out.logTicks = texts(svg, '.ytick');""")
    assert found["smooth"] != found["raw"] and found["unsmoothed"] == found["raw"]
    shown = found["rows"][0]
    assert float(shown.split(": ")[1].split()[0]) == pytest.approx(ema([y for _, y in TRAIN], 0.9)[60], rel=1e-3)
    assert f"(raw {TRAIN[60][1]:.4g})" in shown
    assert found["log"] != found["raw"]
    assert {"2", "3", "4", "5", "6"} & set(found["logTicks"])  # 1-2-5 (or finer) steps of a log axis


def test_the_x_axis_switches_to_tokens(tmp_path):
    found = scripted(tmp_path, """
const svg = chart('loss-chart'), pick = svg.parentNode.querySelector('select.x-axis');
out.steps = texts(svg, '.xtick'); pick.value = '1'; pick.dispatchEvent(new Event('change'));
out.tokens = texts(svg, '.xtick'); out.label = svg.querySelector('.xlabel').textContent;""")
    tokens = [int(t.replace(",", "")) for t in found["tokens"]]
    assert found["label"] == "tokens" and found["steps"] != found["tokens"]
    assert max(tokens) <= max(s for s, _ in TRAIN) * TOKENS_PER_STEP and max(tokens) >= 100 * TOKENS_PER_STEP


def test_a_sortable_table_sorts_numerically_and_filters_rows(tmp_path):
    found = scripted(tmp_path, """
const t = document.getElementById('sources'), head = t.querySelectorAll('th');
const col = c => Array.from(t.tBodies[0].rows).map(r => r.cells[c].textContent);
head[1].click(); out.up = col(0); head[1].click(); out.down = col(0); head[0].click(); out.names = col(0);
const box = t.previousElementSibling; box.value = 'o'; box.dispatchEvent(new Event('input'));
out.visible = Array.from(t.tBodies[0].rows).filter(r => !r.classList.contains('hidden')).map(r => r.cells[0].textContent);""")
    assert found["up"] == ["web", "fortunes", "docs", "code"]  # 2 < 3 < 10, the empty cell last
    assert found["down"] == ["docs", "fortunes", "web", "code"]
    assert found["names"] == ["code", "docs", "fortunes", "web"]
    assert found["visible"] == ["code", "docs", "fortunes"]


def test_pages_without_charts_with_no_data_or_reloading_have_no_console_errors(tmp_path):
    pages = {"plain": page("plain", ["<p>nothing to draw</p>"]),
             "empty": page("empty", [line_chart([], "a"), line_chart([("x", [(1, None)])], "b"), table(["a"], [], "t",
                                                                                                     sortable=True)]),
             "live": page("live", [line_chart([("loss", TRAIN[:3])], "c")], refresh_seconds=15)}
    for name, text in pages.items():
        path = tmp_path / f"{name}.html"
        path.write_text(text, encoding="utf-8")
        dom, console = open_page(path, tmp_path)
        assert console == "" and dom.title == name, (name, console)


def test_the_page_reads_without_javascript_and_inlines_its_one_script(tmp_path):
    text = chart_page(tmp_path).read_text(encoding="utf-8")
    served = Dom(text)  # as served: no script has run
    lines = [a for tag, a in served.shapes["loss-chart"] if tag == "polyline"]
    assert [a["data-name"] for a in lines] == ["train", "validation"]
    assert len(lines[0]["points"].split()) == len(TRAIN)
    assert [a for tag, a in served.shapes["loss-chart"] if tag == "circle" and "point" in a.get("class", "")]
    assert text.count("<script") == 1 and SCRIPT in text
    assert not re.search(r"<(?:script|img|link)[^>]*\s(?:src|href)\s*=", text, flags=re.IGNORECASE)
    assert len(SCRIPT.encode()) < 12 * 1024


def test_a_long_series_is_downsampled_keeping_its_extremes():
    long = [(s, 3.0 + (50.0 if s == 12_345 else 0.0) - s * 1e-5) for s in range(50_000)]
    wrapper = line_chart([("loss", long)], "long")
    data = json.loads(re.search(r'data-chart="([^"]*)"', wrapper).group(1).replace("&quot;", '"'))
    kept = data["series"][0]["points"]
    assert len(kept) <= 2000 and max(kept, key=lambda p: p[1]) == [12_345, pytest.approx(max(y for _, y in long))]
    assert kept[0][0] == 0 and kept[-1][1] == pytest.approx(min(y for _, y in long))


def test_the_x_range_is_the_datas_and_a_marker_beyond_it_is_a_note():
    chart = line_chart([("loss", [(s, 1.0 / (s + 1)) for s in range(30)])], "short", markers=[(195, "midtrain from step 195")])
    ticks = [float(t.replace(",", "")) for t in re.findall(r'class="xtick"[^>]*>([^<]*)<', chart)]
    assert max(ticks) <= 29 and 'class="marker"' not in chart
    assert "midtrain from step 195: not reached" in chart


def test_each_series_takes_its_colour_in_the_lines_and_the_legend():
    chart = line_chart([("web", [(0, 1), (1, 2)]), ("docs", [(0, 2), (1, 1)]), ("code", [(1, 1.5)])], "c",
                       colors=["#112233", "#445566", "#778899"])
    assert re.findall(r'stroke="(#\w+)" stroke-width="1.5"', chart) == ["#112233", "#445566"]
    assert 'fill="#778899"' in chart  # the one-point series: a marker
    assert re.findall(r"background:(#\w+)", chart) == ["#112233", "#445566", "#778899"]
    bars = stacked_bars([("pretrain", [3, 1])], ["web", "docs"], "bars", colors=["#112233", "#445566"])
    assert re.findall(r'fill="(#\w+)"', bars) == ["#112233", "#445566"]
    assert re.findall(r"background:(#\w+)", bars) == ["#112233", "#445566"]


def test_the_quickstart_runs_page_hovers_with_its_own_numbers(quickstart_ws, tmp_path):
    from reports.run import run_report

    ws, _ = quickstart_ws
    run = ws / "runs" / "quickstart"
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    dom, console = run_in_page(run_report(run), tmp_path, PRELUDE + """
const svg = chart('loss-chart'), [x, y] = pixels(series(svg, 0))[20];
fire(svg, 'mousemove', x, y); out.rows = tip(svg); out.head = svg.parentNode.querySelector('.tip b').textContent;
const key = svg.parentNode.querySelector('.legend span'); key.click(); out.hidden = series(svg, 0).getAttribute('class');
out.charts = document.querySelectorAll('.linechart .chart-controls').length; report();""")
    assert console == "", console
    found = json.loads(dom.pre["test-result"])
    assert found["head"].startswith(f"step {records[20]['step']}")
    assert tip_values(found["rows"])["train"] == pytest.approx(records[20]["loss"], rel=1e-3)
    assert "hidden" in found["hidden"] and found["charts"] >= 6
