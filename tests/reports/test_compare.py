"""`loom report compare`: two runs of different lengths and settings on one page, opened in headless Chromium: a
loss series per run in one colour each, per-source validation charts, the settings that differ marked; bad input
as one line."""

import json
import re
import shutil

import pytest

from helpers import TINY_MODEL, copy_curated, run_loom, training_spec, write_spec
from base.names import check_name
from report_pages import chromium, needs_chromium, only_the_inline_script, open_page
from reports.compare import default_name

QUIET = ["--report-every", 1000, "--checkpoint-every", 1000, "--eval-every", 4]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, curated_slice, slice_tokenizer):
    """A 24-step mixture trained for 8 steps (`base`), and `other`: a copy of it edited into a 4-step run with
    another LR and seed and a higher loss (a second training would add ~10 s to the default run)."""
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("compare") / "ws")
    write_spec(ws, "cmpmix", training_spec(24))
    run_loom("-w", ws, "mix", "build", "cmpmix")
    run_loom("-w", ws, "train", "--mixture", "cmpmix", "--run-name", "base", *TINY_MODEL, *QUIET, "--max-steps", 8)
    other = ws / "runs" / "other"
    shutil.copytree(ws / "runs" / "base", other, ignore=shutil.ignore_patterns("checkpoints", "report.html"))
    info = json.loads((other / "run.json").read_text())
    config = {**info["config"], "lr": 0.01, "seed": 3, "max_steps": 4, "run_name": "other"}
    (other / "run.json").write_text(json.dumps({**info, "run": "other", "end_step": 4, "config": config}))
    records = [json.loads(line) for line in (other / "metrics.jsonl").read_text().splitlines()[:4]]
    lines = [json.dumps({**r, "loss": r["loss"] + 0.1}) for r in records]
    (other / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    return ws


def differing_settings(text: str) -> list[str]:
    """The names of the settings table's rows marked as differing between the runs."""
    rows = re.findall(r'<tr class="differs"><td><span class="mark"[^>]*>[^<]*</span>([^<]+)</td>', text)
    return [name.strip() for name in rows]


@needs_chromium()
def test_two_runs_are_overlaid_a_colour_each_with_their_differing_settings_marked(two_runs, tmp_path):
    out = run_loom("-w", two_runs, "report", "compare", "base", "other").stdout
    report = two_runs / "reports" / "compare" / "base-vs-other.html"
    assert out.strip() == f"Report: {report}"
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    loss = [a for tag, a in dom.shapes["loss-chart"] if "series" in a.get("class", "")]
    assert sorted(a["data-name"] for a in loss) == ["base", "other"]  # one loss series per run
    colours = {a["data-name"]: a["stroke"] for a in loss}
    assert colours["base"] != colours["other"]
    sources = [chart for chart in dom.charts if chart.startswith("source-val-")]
    assert sources and all({a["data-name"] for _, a in dom.shapes[c] if "series" in a.get("class", "")}
                           == {"base", "other"} for c in sources)
    for chart in ["val-chart", *sources]:  # the same colour for a run on every chart of the page
        assert {a["data-name"]: a.get("stroke") or a.get("fill") for _, a in dom.shapes[chart]
                if "series" in a.get("class", "")} == colours
    text = report.read_text()
    only_the_inline_script(text, dom)
    differing = differing_settings(text)
    assert {"peak LR", "final LR", "seed", "end step (--max-steps)"} <= set(differing)
    assert not {"seq len", "mixture", "d_model", "weight decay"} & set(differing)
    assert [len(r) for r in dom.tables["runs-table"] if r] == [8, 8]
    shot = tmp_path / "compare.png"
    chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 40_000


def test_a_named_comparison_is_written_under_its_name(two_runs):
    out = run_loom("-w", two_runs, "report", "compare", "other", "base", "--name", "lr-sweep").stdout
    assert out.strip() == f"Report: {two_runs / 'reports' / 'compare' / 'lr-sweep.html'}"


def test_default_names_are_valid_short_and_distinct():
    assert default_name(["base", "other"]) == "base-vs-other"
    many = [f"lr-{i:02d}" for i in range(12)]
    names = [default_name(many), default_name(many[:-1]), default_name(["x" * 64, "y" * 64])]
    assert names[0].startswith("lr-00-vs-lr-01-and-10-more-") and len(set(names)) == 3
    assert all(check_name("comparison", name) and len(name) <= 64 for name in names)


@pytest.mark.parametrize("args, says", [
    (["base"], "compare needs two runs or more, got 1"),
    (["base", "base"], "compare needs two runs or more, got 1"),
    (["base", "nosuch"], "no run 'base' in"),
    (["base", "other", "--name", "../outside"], "comparison name '../outside' is invalid"),
    (["base", "../other"], "run name '../other' is invalid"),
])
def test_bad_input_is_one_line(tmp_path, args, says):
    result = run_loom("-w", tmp_path, "report", "compare", *args, check=False)
    assert result.returncode == 2 and says in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "reports").exists()
