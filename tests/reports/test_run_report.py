"""A training run's report opened in headless Chromium: the settings it trained with, the planned LR beside the
actual one, a single validation point drawn, an x-axis that ends where the run did, the MoE load explained; and
the quickstart run's curves."""

import html
import json
import re
import shutil

import pytest

from helpers import TINY_MODEL, compiled, copy_curated, run_loom, training_spec, write_spec
from report_pages import chromium, needs_chromium, only_the_inline_script, open_page
from trainer.config import LRSchedule

pytestmark = needs_chromium()
STEPS = 40  # the mixture's; its mid-training starts near step 32, past the short run's end
QUIET = ["--eval-every", 1000, "--report-every", 1000, "--checkpoint-every", 1000]  # one validation, at the end
SHORT = [*TINY_MODEL, *QUIET, "--max-steps", 8, "--lr", 0.005, "--min-lr-ratio", 0.2, "--warmup-steps", 3,
         "--weight-decay", 0.05, "--seed", 7]


@pytest.fixture(scope="module")
def run_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    """A workspace with two runs of a 40-step mixture stopped early: a dense one with one validation point (at its
    last step) and a MoE one."""
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("runreport") / "ws")
    write_spec(ws, "runmix", training_spec(STEPS))
    run_loom("-w", ws, "mix", "build", "runmix")
    run_loom("-w", ws, "train", "--mixture", "runmix", "--run-name", "short", *SHORT)
    run_loom("-w", ws, "train", "--mixture", "runmix", "--run-name", "moe", *TINY_MODEL, *QUIET, "--model", "tiny-moe",
             "--max-steps", 4)
    return ws


def chart_data(text: str) -> dict[str, dict]:
    """Each line chart's data (its wrapper's data-chart attribute: the points as drawn, the plot's box), by id."""
    found = re.findall(r'<div class="linechart" data-chart="([^"]*)">.*?<svg class="chart" id="([^"]+)"', text, re.S)
    return {chart_id: json.loads(html.unescape(data)) for data, chart_id in found}


def series_of(chart: dict) -> dict[str, list]:
    return {s["name"]: s["points"] for s in chart["series"]}


def run_info(ws, run: str) -> dict:
    return json.loads((ws / "runs" / run / "run.json").read_text())


def test_the_run_report_shows_the_settings_the_run_trained_with(run_ws, tmp_path):
    report = run_ws / "runs" / "short" / "report.html"
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    info = run_info(run_ws, "short")
    config = info["config"]
    values = [float(cell) for table, rows in dom.tables.items() if table.startswith("config-")
              for row in rows for cell in row if cell is not None]
    for expected in (config["lr"], config["min_lr_ratio"], info["warmup_steps"], config["weight_decay"],
                     info["global_batch"], info["seq_len"], config["seed"], info["world_size"], info["steps"]):
        assert expected in values
    assert [0.005, 0.2, 3, 0.05, 7] == [config["lr"], config["min_lr_ratio"], info["warmup_steps"],
                                         config["weight_decay"], config["seed"]]  # what SHORT asked for
    text = report.read_text()
    only_the_inline_script(text, dom)
    build = json.loads((compiled(run_ws, "runmix") / "schedule.json").read_text())
    assert info["schedule_fingerprint"] in text and build["manifest_fingerprint"] in text
    shot = tmp_path / "run.png"
    chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 40_000


def test_the_planned_lr_is_drawn_beside_the_actual_over_the_whole_plan(run_ws):
    info = run_info(run_ws, "short")
    lr = series_of(chart_data((run_ws / "runs" / "short" / "report.html").read_text())["lr-chart"])
    planned = dict(lr["lr (planned)"])
    trainers = LRSchedule(info["config"]["lr"], info["steps"], info["warmup_steps"], info["decay_start"],
                          info["config"]["min_lr_ratio"])
    assert len(planned) == STEPS  # the whole plan, past the run's 8 steps
    for step in (0, 2, 5, info["decay_start"], STEPS - 1):
        assert planned[step] == pytest.approx(trainers(step), rel=1e-5)
    assert planned[STEPS - 1] == pytest.approx(0.005 * 0.2, rel=1e-5)
    actual = [json.loads(line)["lr"] for line in (run_ws / "runs" / "short" / "metrics.jsonl").read_text().splitlines()]
    assert [y for _, y in lr["lr (actual)"]] == pytest.approx(actual, rel=1e-5)


def test_a_single_validation_point_is_a_marker_and_the_axis_ends_at_the_last_step(run_ws, tmp_path):
    report = run_ws / "runs" / "short" / "report.html"
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    loss = {a["data-name"]: (tag, a) for tag, a in dom.shapes["loss-chart"] if "series" in a.get("class", "")}
    assert loss["validation (held out)"][0] == "circle"  # its one point, drawn
    train = [float(p.split(",")[0]) for p in loss["train"][1]["points"].split()]
    right = chart_data(report.read_text())["loss-chart"]["box"][2]
    assert max(train) == pytest.approx(right, abs=1)  # the last step at the plot's right edge
    switch = run_info(run_ws, "short")["phases"][1]["start_step"]
    assert switch > 8 and not [a for tag, a in dom.shapes["loss-chart"] if a.get("class") == "marker"]
    assert f"midtrain from step {switch}: not reached" in report.read_text()


def test_a_moe_runs_report_explains_the_load_bounds(run_ws, tmp_path):
    report = run_ws / "runs" / "moe" / "report.html"
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    text = report.read_text()
    assert 'id="expert-load-bounds"' in text and "0 is perfectly balanced" in text
    assert "1 is the worst possible</b> (n_experts / top_k - 1 = 4 / 2 - 1)" in text  # tiny-moe: 4 experts, top 2
    assert {"expert-violation-chart", "expert-load-layers-0-ffn", "expert-load-layers-1-ffn"} <= dom.charts.keys()
    shot = tmp_path / "moe.png"
    chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 40_000


def test_at_many_sources_the_charts_draw_the_top_ten_and_a_table_lists_every_one(run_ws):
    run = run_ws / "runs" / "many"  # the short run, copied with 12 more sources, each with fewer tokens
    shutil.copytree(run_ws / "runs" / "short", run, ignore=shutil.ignore_patterns("checkpoints", "report.html"))
    extra = {f"extra-{i:02d}": i + 1 for i in range(12)}
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for r in records:
        r["tokens_by_source"].update(extra)
        r["loss_by_source"].update({name: r["loss"] for name in extra})
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    from reports.run import run_report

    text = run_report(run).read_text()
    drawn = [s["name"] for s in chart_data(text)["source-loss-chart"]["series"]]
    real = list(records[0]["loss_by_source"].keys() - extra.keys())
    assert len(drawn) == 10 and set(real) <= set(drawn) and {"extra-11", "extra-10"} <= set(drawn)
    assert "extra-00" not in drawn  # the fewest tokens
    listed = re.findall(r"<tr><td>([a-z0-9-]+)</td>", text.split('id="sources-table"')[1].split("</table>")[0])
    assert sorted(listed) == sorted([*real, *extra])


def test_the_run_report_draws_the_quickstart_runs_curves(quickstart_ws, tmp_path):
    ws, _ = quickstart_ws
    report = ws / "runs" / "quickstart" / "report.html"
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert dom.title == "Loom run quickstart"
    records = [json.loads(line) for line in (ws / "runs" / "quickstart" / "metrics.jsonl").read_text().splitlines()]
    lines = {chart: [a for tag, a in shapes if tag == "polyline"] for chart, shapes in dom.shapes.items()}
    train_line = lines["loss-chart"][0]["points"].split()
    assert len(train_line) == len(records) == 60  # one point per step
    sources = {s for r in records for s in r["loss_by_source"]}
    assert {a["data-name"] for a in lines["source-loss-chart"]} == sources
    switch = next(p for p in json.loads((compiled(ws, "sample") / "schedule.json").read_text())["phases"]
                  if p["name"] == "midtrain")["start_step"]
    markers = [a for tag, a in dom.shapes["lr-chart"] if tag == "line" and a.get("class") == "marker"]
    assert len(markers) == 1 and f"from step {switch}" in report.read_text()  # the LR chart spans the plan
    assert {"throughput-chart", "grad-chart", "update-chart", "source-val-chart"} <= lines.keys()
    only_the_inline_script(report.read_text(), dom)
    assert 'http-equiv="refresh"' not in report.read_text()  # finished


def test_a_running_runs_report_reloads_itself(quickstart_ws, tmp_path):
    """While a process holds the run's lock; once none does, the run was killed: `interrupted`, no reload."""
    from base.lock import exclusive
    from reports.run import run_report
    from trainer.metrics import run_lock_file

    run = tmp_path / "runs" / "run"
    shutil.copytree(quickstart_ws[0] / "runs" / "quickstart", run, ignore=shutil.ignore_patterns("checkpoints"))
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "status": "running"}))
    with (run / "metrics.jsonl").open("a") as fh:
        fh.write('{"step": 60, "lo')  # the line the trainer is writing right now
    with exclusive(run_lock_file(run), "the run"):
        text = run_report(run).read_text()
    assert '<meta http-equiv="refresh" content="15">' in text and "<b>running</b>" in text
    text = run_report(run).read_text()
    assert 'http-equiv="refresh"' not in text and "<b>interrupted</b>" in text
