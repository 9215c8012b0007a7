"""The scaling ladder's page, built from a fit.json and rung metrics written in the trainer's own formats and opened
in a real headless Chromium: every rung's curve and final point drawn where its compute puts it, the fitted law
with its band, the held-out check and the target; names from data inert; a ladder half run still has a page."""

import json
import math

import pytest

from base.errors import UserError
from report_pages import chromium, needs_chromium, only_the_inline_script, open_page
from reports.ladder import ladder_report
from trainer.metrics import EVAL_LOSS_BY_SET, LOSS, STEP, TOKENS_SEEN, VAL_LOSS, VAL_LOSS_BY_SOURCE, MetricsLog

pytestmark = needs_chromium()
HOSTILE = "<script>alert(1)</script>"
SOURCES = {"web": 1.08, "code": 0.85, HOSTILE: 1.2}  # each source's loss as a multiple of the overall
EVAL_SETS = {"bofh": 1.15}
L_INF, A, ALPHA = 1.5, 323.0, 0.15
FLOPS = [3.8e12, 1.5e13, 6e13, 2.4e14]
STEPS, EVAL_EVERY = 60, 10
TARGET_FLOPS = 1e15


def law(flops: float, scale: float = 1.0) -> float:
    return scale * (L_INF + A * flops ** -ALPHA)


def rung(index: int, flops: float) -> dict:
    tokens = 2_000_000 * 4 ** index
    final = law(flops) + (0.01 if index % 2 else -0.01)
    return {"rung": f"r{index}", "run": f"ladder-toy-r{index}", "status": "finished",
            "d_model": 32 * 2 ** index, "n_layers": 1 + index, "n_heads": 2, "n_experts": 0, "top_k": 2,
            "parameters": 300_000 * 4 ** index, "active_parameters": 280_000 * 4 ** index, "tokens": tokens,
            "steps": STEPS, "flops_per_token": flops / tokens, "flops": flops, "tokens_per_parameter": 6.7,
            "lr": 3e-3 / (index + 1), "warmup_steps": 12,
            "final": {VAL_LOSS: final, VAL_LOSS_BY_SOURCE: {s: final * k for s, k in SOURCES.items()},
                      EVAL_LOSS_BY_SET: {e: final * k for e, k in EVAL_SETS.items()}}}


def fit_entry(label: str, scale: float, held: dict) -> dict:
    fit = {"l_inf": L_INF * scale, "a": A * scale, "alpha": ALPHA, "pinned": False, "n_points": 3, "dof": 0,
           "residual_scale": 0.003}
    curve = [10 ** (12.5 + i * 0.125) for i in range(21)]
    measured = held["final"][VAL_LOSS] * scale
    predicted = law(held["flops"], scale)
    return {"label": label, "fit": {**fit, "n_points": 4, "dof": 1},
            "held_out": {"rung": held["rung"], "fit": fit, "predicted": predicted, "measured": measured,
                         "relative_error": (predicted - measured) / measured,
                         "interval": [predicted - 0.1, predicted + 0.1], "inside": True},
            "target": {"predicted": law(TARGET_FLOPS, scale), "interval": [law(TARGET_FLOPS, scale) - 0.2,
                                                                          law(TARGET_FLOPS, scale) + 0.2]},
            "curve": [{"flops": c, "predicted": law(c, scale), "lower": law(c, scale) - 0.05 * (1 + math.log10(c / 3e12)),
                       "upper": law(c, scale) + 0.05 * (1 + math.log10(c / 3e12))} for c in curve]}


def write_rung_metrics(run_dir, rung: dict) -> None:
    """A line per step; every EVAL_EVERY steps and at the end an evaluation whose values fall to the rung's final."""
    log = MetricsLog(run_dir)
    for step in range(STEPS):
        record = {STEP: step, TOKENS_SEEN: rung["tokens"] * (step + 1) // STEPS, LOSS: 10.0 - step / STEPS}
        if step % EVAL_EVERY == EVAL_EVERY - 1:
            excess = 1 + 0.8 * (1 - (step + 1) / STEPS) ** 2
            final = rung["final"]
            record |= {VAL_LOSS: final[VAL_LOSS] * excess,
                       VAL_LOSS_BY_SOURCE: {s: v * excess for s, v in final[VAL_LOSS_BY_SOURCE].items()},
                       EVAL_LOSS_BY_SET: {e: v * excess for e, v in final[EVAL_LOSS_BY_SET].items()}}
        log.write(record)
    log.close()


@pytest.fixture
def ladder_dir(tmp_path):
    """WORKSPACE/ladders/toy/fit.json and WORKSPACE/runs/ladder-toy-rN/metrics.jsonl, as a ladder leaves them."""
    rungs = [rung(i, flops) for i, flops in enumerate(FLOPS)]
    for r in rungs:
        (tmp_path / "ws" / "runs" / r["run"]).mkdir(parents=True)
        write_rung_metrics(tmp_path / "ws" / "runs" / r["run"], r)
    fits = {"val_loss": fit_entry("validation loss (all sources)", 1.0, rungs[3])}
    fits |= {f"source:{s}": fit_entry(f"validation loss of source {s}", k, rungs[3]) for s, k in SOURCES.items()}
    fits |= {f"eval:{e}": fit_entry(f"loss on eval set {e}", k, rungs[3]) for e, k in EVAL_SETS.items()}
    ladder = {"ladder": "toy", "mixture": "sample", "law": "L(C) = L_inf + A * C^-alpha",
              "interval": {"method": "student-t", "confidence": 0.9}, "rungs": rungs,
              "target": {"flops": TARGET_FLOPS, "tokens": 1e8, "parameters": 5e6,
                         "shape": {"d_model": 256, "n_layers": 4, "n_heads": 4}},
              "fits": fits,
              "chinchilla": {"skipped": "the rungs lie on one tokens-per-parameter line; vary N and D independently"}}
    folder = tmp_path / "ws" / "ladders" / "toy"
    folder.mkdir(parents=True)
    (folder / "fit.json").write_text(json.dumps(ladder))
    return folder


def rewrite(folder, change) -> None:
    ladder = json.loads((folder / "fit.json").read_text())
    change(ladder)
    (folder / "fit.json").write_text(json.dumps(ladder))


def drawn(dom, chart: str, css_class: str) -> list[dict]:
    return [attrs for _, attrs in dom.shapes.get(chart, []) if attrs.get("class") == css_class]


def test_the_page_draws_each_rung_the_fit_its_band_the_held_out_check_and_the_target(ladder_dir, tmp_path):
    with (ladder_dir.parent.parent / "runs" / "ladder-toy-r0" / "metrics.jsonl").open("a") as fh:
        fh.write('{"step": 60, "val_loss": 3.')  # an evaluation being written right now
    report = ladder_report(ladder_dir)
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert dom.title == "Loom ladder toy"
    curves = drawn(dom, "ladder-chart", "rung-curve")
    assert [c["data-name"] for c in curves] == ["r0", "r1", "r2", "r3"]
    assert all(len(c["points"].split()) == STEPS // EVAL_EVERY for c in curves)  # one point per evaluation
    finals = drawn(dom, "ladder-chart", "rung-final")
    assert [f["data-name"].split(":")[0] for f in finals] == ["r0", "r1", "r2"]
    assert [h["data-name"].split(":")[0] for h in drawn(dom, "ladder-chart", "held-out")] == ["r3 (held out)"]
    circles = [a for tag, a in dom.shapes["ladder-chart"] if tag == "circle"]
    for curve, marker in zip(curves, circles):  # a curve ends at its final point: x = FLOPs/token x tokens seen
        assert curve["points"].split()[-1] == f"{marker['cx']},{marker['cy']}"
    assert len(drawn(dom, "ladder-chart", "fit-line")[0]["points"].split()) == 21
    assert len(drawn(dom, "ladder-chart", "fit-band")) == 1
    assert len(drawn(dom, "ladder-chart", "target")) == len(drawn(dom, "ladder-chart", "held-out-prediction")) == 1
    for panel in ("source-chart-0", "source-chart-1", "source-chart-2", "eval-chart-0"):
        assert len(drawn(dom, panel, "rung-curve")) == 4 and len(drawn(dom, panel, "fit-band")) == 1

    ladder = json.loads((ladder_dir / "fit.json").read_text())
    rows = [r for r in dom.tables["rung-table"] if r]
    assert [float(r[11]) for r in rows] == pytest.approx([r["final"][VAL_LOSS] for r in ladder["rungs"]])
    assert [float(r[12]) for r in rows] == pytest.approx([law(f) for f in FLOPS])
    assert len([r for r in dom.tables["fits-table"] if r]) == 5
    text = report.read_text()
    held = ladder["fits"]["val_loss"]["held_out"]
    assert (f"held-out rung r3: predicted {held['predicted']:.3f}, measured {held['measured']:.3f}, error "
            f"{held['relative_error']:+.2%}, inside the 90% interval") in text
    assert ">1e13</text>" in text and ">1e14</text>" in text  # readable compute ticks
    assert 'href="../../runs/ladder-toy-r0/report.html"' in text and "http" not in text
    only_the_inline_script(text, dom)

    shot = tmp_path / "ladder.png"
    result = chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,2600", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.stat().st_size > 20_000


def test_names_from_data_render_as_text(ladder_dir, tmp_path):
    def hostile(ladder):
        ladder["ladder"] = ladder["rungs"][1]["rung"] = ladder["mixture"] = HOSTILE
    rewrite(ladder_dir, hostile)
    report = ladder_report(ladder_dir)
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert dom.title == f"Loom ladder {HOSTILE}"
    only_the_inline_script(report.read_text(), dom)
    assert HOSTILE in [c["data-name"] for c in drawn(dom, "ladder-chart", "rung-curve")]  # drawn, as text
    assert report.read_text().count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 6  # ladder, mixture, rung, source


def test_a_ladder_with_a_pending_rung_and_no_intervals_still_has_a_page(ladder_dir, tmp_path):
    def half_run(ladder):
        last = ladder["rungs"][3]
        last["status"] = "pending"
        del last["final"]
        ladder["interval"] = None
        for entry in ladder["fits"].values():
            entry["held_out"] = entry["target"] = None
            entry["curve"] = [{**p, "lower": None, "upper": None} for p in entry["curve"]]
    rewrite(ladder_dir, half_run)
    (ladder_dir.parent.parent / "runs" / "ladder-toy-r3" / "metrics.jsonl").unlink()
    report = ladder_report(ladder_dir)
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert len(drawn(dom, "ladder-chart", "rung-final")) == 3 and not drawn(dom, "ladder-chart", "fit-band")
    assert not drawn(dom, "ladder-chart", "target") and not drawn(dom, "ladder-chart", "held-out")
    text = report.read_text()
    assert "No held-out check" in text and "r3 (pending): no metrics yet" in text and "No prediction for" in text

    rewrite(ladder_dir, lambda ladder: ladder.update(fits={}))  # no rung finished yet: nothing fitted
    assert "No fit yet" in ladder_report(ladder_dir).read_text()


def test_a_folder_without_fit_json_is_one_clear_error(tmp_path):
    with pytest.raises(UserError, match="no fit.json in .*; run `loom ladder NAME --mixture MIX` first"):
        ladder_report(tmp_path)
