"""The mixture search's page, built from a search.json and confirm runs' metrics written in the trainer's own format
and opened in a real headless Chromium: every proxy listed and drawn, the held-out scatter placed where the values
put it, the confirm curves ending at their final values, the chosen weights shown; names from data inert; a search
half run still has a page that says what is missing."""

import colorsys
import json
import re

import pytest

from base.errors import UserError
from report_pages import Dom, chromium, needs_chromium, only_the_inline_script, open_page
from reports.search import search_report
from trainer.metrics import LOSS, STEP, TOKENS_SEEN, VAL_LOSS, VAL_LOSS_BY_SOURCE, MetricsLog

HOSTILE = "<script>alert(1)</script>"
KEYS = ["web", "docs", "code", HOSTILE]
PRIOR = [0.31, 0.2, 0.4, 0.09]
PROXY_WEIGHTS = [[0.25, 0.25, 0.375, 0.125], [0.4, 0.1, 0.3, 0.2], [0.1, 0.5, 0.2, 0.2], [0.3, 0.3, 0.3, 0.1],
                 [0.2, 0.2, 0.5, 0.1], [0.5, 0.2, 0.2, 0.1]]
LOO_ERRORS = [0.02, -0.03, 0.05, -0.01, 0.0, 0.04]  # the surrogate's held-out miss on each proxy
CHOSEN = [0.28, 0.22, 0.42, 0.08]
EPOCHS = [1.2, 3.4, 0.8, 2.5]
CONFIRM = {"searched": 5.6, "proportional": 5.7, "uniform": 5.75, "unimax": 5.68}  # each run's final objective
STEPS, EVAL_EVERY = 60, 10


def per_key(values) -> dict:
    return {"pretrain": dict(zip(KEYS, values))}


def source_losses(weights, scale: float = 1.0) -> dict:
    """A source's loss falls as its share grows, less for each share more."""
    return {f"source:{k}": scale * (6.5 - 2 * w ** 0.5) for k, w in zip(KEYS, weights)}


def mean(values) -> float:
    return sum(values) / len(values)


def proxy(index: int, weights) -> dict:
    metrics = source_losses(weights)
    score = mean(list(metrics.values()))
    return {"name": f"p{index:02d}", "run": f"toy-p{index:02d}", "status": "finished", "weights": per_key(weights),
            "metrics": {VAL_LOSS: score + 0.1, **metrics, "eval:bofh": score + 1}, "objective": score,
            "loo_predicted": score + LOO_ERRORS[index]}


def confirm_metrics(final: float) -> dict:
    """Per-source losses whose mean is `final`."""
    offsets = [0.3, -0.2, -0.4, 0.3]
    return {VAL_LOSS: final, **{f"source:{k}": final + d for k, d in zip(KEYS, offsets)}}


def write_confirm_metrics(run_dir, final: dict) -> None:
    """A line per step; every EVAL_EVERY steps an evaluation whose per-source losses fall to the run's final ones."""
    log = MetricsLog(run_dir)
    for step in range(STEPS):
        record = {STEP: step, TOKENS_SEEN: 1000 * (step + 1), LOSS: 10.0 - step / STEPS}
        if step % EVAL_EVERY == EVAL_EVERY - 1:
            excess = 1 + 0.5 * (1 - (step + 1) / STEPS) ** 2
            record |= {VAL_LOSS: final[VAL_LOSS] * excess,
                       VAL_LOSS_BY_SOURCE: {k: final[f"source:{k}"] * excess for k in KEYS}}
        log.write(record)
    log.close()


def search_json() -> dict:
    proxies = [proxy(i, w) for i, w in enumerate(PROXY_WEIGHTS)]
    baselines = {"proportional": {"weights": per_key(PRIOR), "predicted": 6.02, "feasible": True},
                 "uniform": {"weights": per_key([0.25] * 4), "predicted": 6.0, "feasible": False,
                             "why": f"{HOSTILE} read 9.1 times"},
                 "unimax": {"weights": per_key([0.3, 0.25, 0.3, 0.15]), "predicted": 6.01, "feasible": True}}
    runs = [{"mixture": m, "run": f"toy-confirm-{m}", "status": "finished", "objective": v,
             "metrics": confirm_metrics(v)} for m, v in CONFIRM.items()]
    return {"search": "toy", "from": "sample", "design": "dirichlet", "seed": 0, "phases": ["pretrain"],
            "keys": {"pretrain": KEYS}, "prior": per_key(PRIOR), "prior_kind": "natural",
            "objective": {"text": "mean of per-source validation losses", "terms": {f"source:{k}": 1.0 for k in KEYS}},
            "proxy": {"rung": "r0", "d_model": 16, "n_layers": 1, "n_heads": 2, "n_experts": 0,
                      "active_parameters": 135000, "tokens": 409600, "steps": 50, "flops": 3.5e11},
            "proxies": proxies,
            "surrogate": {"model": "loglinear", "law": "L = c + exp(t . w)", "n_proxies": len(proxies),
                          "held_out": {"method": "leave-one-out", "spearman": 0.91, "mean_abs_error": 0.025},
                          "fits": {f"source:{k}": {"c": 4.1, "t": {f"pretrain/{j}": -0.9 if j == k else 0.1 for j in KEYS},
                                                   "residual_scale": 0.01} for k in KEYS}},
            "chosen": {"weights": per_key(CHOSEN), "predicted": 5.98, "interval": [5.95, 6.02], "confidence": 0.9,
                       "interval_method": "bootstrap over proxies", "kl_weight": 0.05, "kl_to_prior": 0.03,
                       "epochs": dict(zip(KEYS, EPOCHS))},
            "baselines": baselines, "confirm": {"rung": "r1", "tokens": 800000, "steps": STEPS, "runs": runs}}


@pytest.fixture
def search_dir(tmp_path):
    """WORKSPACE/searches/toy/search.json and WORKSPACE/runs/toy-confirm-*/metrics.jsonl, as a search leaves them."""
    search = search_json()
    for run in search["confirm"]["runs"]:
        (tmp_path / "ws" / "runs" / run["run"]).mkdir(parents=True)
        write_confirm_metrics(tmp_path / "ws" / "runs" / run["run"], run["metrics"])
    folder = tmp_path / "ws" / "searches" / "toy"
    folder.mkdir(parents=True)
    (folder / "search.json").write_text(json.dumps(search))
    return folder


def rewrite(folder, change) -> None:
    search = json.loads((folder / "search.json").read_text())
    change(search)
    (folder / "search.json").write_text(json.dumps(search))


def drawn(dom, chart: str, css_class: str) -> list[dict]:
    return [attrs for _, attrs in dom.shapes.get(chart, []) if attrs.get("class") == css_class]


def points(polyline: dict) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in polyline["points"].split()]


def affine(values: list[float], pixels: list[float]):
    """The map value -> pixel through the pairs of the lowest and highest value (so the pixels' rounding to 0.1
    moves it least); every pair must lie on it."""
    lo, hi = values.index(min(values)), values.index(max(values))
    slope = (pixels[hi] - pixels[lo]) / (values[hi] - values[lo])
    place = lambda v: pixels[lo] + slope * (v - values[lo])  # noqa: E731
    assert [place(v) for v in values] == pytest.approx(pixels, abs=0.15)
    return place, slope


@needs_chromium()
def test_the_page_shows_every_proxy_the_held_out_scatter_the_chosen_weights_and_the_confirm_curves(search_dir, tmp_path):
    report = search_report(search_dir)
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert dom.title == "Loom search toy"
    search = json.loads((search_dir / "search.json").read_text())
    proxies = search["proxies"]
    text = report.read_text()

    rows = [r for r in dom.tables["proxy-table"] if r]  # best objective first
    assert [float(r[7]) for r in rows] == sorted(p["objective"] for p in proxies)
    assert all(f"<td>{p['name']}</td>" in text for p in proxies)
    assert dom.charts["proxy-weights-0"] == len(proxies) * len(KEYS)  # a segment per proxy and component

    circles = [a for tag, a in dom.shapes["loo-chart"] if tag == "circle"]
    assert len(drawn(dom, "loo-chart", "proxy-dot")) == len(circles) == len(proxies)
    x_of, x_slope = affine([p["objective"] for p in proxies], [float(c["cx"]) for c in circles])
    y_of, y_slope = affine([p["loo_predicted"] for p in proxies], [float(c["cy"]) for c in circles])
    assert x_slope > 0 > y_slope  # higher measured further right, higher predicted further up
    values = [v for p in proxies for v in (p["objective"], p["loo_predicted"])]
    (diagonal,) = drawn(dom, "loo-chart", "diagonal")
    ends = [c for v in (min(values), max(values)) for c in (x_of(v), y_of(v))]
    assert [c for p in points(diagonal) for c in p] == pytest.approx(ends, abs=0.15)  # y = x where the dots say
    assert "Spearman 0.91 over 6 proxies, mean absolute error 0.0250" in text

    weights = [r for r in dom.tables["weights-0"] if r]  # component, prior, searched, 3 baselines, epochs
    assert [float(r[2]) for r in weights] == CHOSEN and [float(r[1]) for r in weights] == PRIOR
    assert [float(r[6]) for r in weights] == EPOCHS
    assert dom.charts["mixture-weights-0"] == 5 * len(KEYS)
    assert [float(r[1]) for r in dom.tables["mixtures-table"] if r] == [5.98, 6.02, 6.0, 6.01]

    curves = drawn(dom, "confirm-chart", "confirm-curve")
    assert [c["data-name"] for c in curves] == list(CONFIRM)
    assert all(len(points(c)) == STEPS // EVAL_EVERY for c in curves)
    finals = drawn(dom, "confirm-chart", "confirm-final")
    ends = [(float(a["cx"]), float(a["cy"])) for tag, a in dom.shapes["confirm-chart"] if tag == "circle"]
    assert [f["data-name"] for f in finals] == [f"{m}: {v:.3f} at step {STEPS - 1}" for m, v in CONFIRM.items()]
    assert ends == [points(c)[-1] for c in curves]  # each curve ends at its final value
    confirm = [r for r in dom.tables["confirm-table"] if r]
    assert [float(r[3]) for r in confirm] == list(CONFIRM.values())
    assert [float(r[4]) for r in confirm] == pytest.approx([v - CONFIRM["searched"] for v in CONFIRM.values()])
    assert [float(r[5]) for r in confirm] == list(CONFIRM.values())  # val_loss, first of the per-metric columns
    assert "The searched mixture is best (lowest objective)." in text
    assert ("Predicted objective of the searched mixture at the proxy scale (rung r0): 5.980, 90% interval 5.950–6.020 "
            "(baselines predicted: "
            "proportional 6.020, uniform 6.000, unimax 6.010).") in text

    only_the_inline_script(text, dom)
    assert text.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5  # columns, legends, table rows, a reason
    assert not re.search(r"(src|href)=\"(https?:)?//", text) and "http" not in text
    assert 'href="../../runs/toy-confirm-searched/report.html"' in text

    shot = tmp_path / "search.png"
    result = chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,3400", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.stat().st_size > 20_000


def test_a_baseline_that_measures_lower_is_said_to_beat_the_search(search_dir):
    def proportional_wins(search):
        search["confirm"]["runs"][1]["objective"] = 5.55
    rewrite(search_dir, proportional_wins)
    text = search_report(search_dir).read_text()
    assert "The searched mixture is NOT best: proportional is lower by 0.050." in text
    assert '<div id="headline-best-at-confirm">best at confirm<b>proportional</b></div>' in text


@needs_chromium()
def test_a_search_half_run_still_has_a_page_that_says_what_is_missing(search_dir, tmp_path):
    def half_run(search):
        for p in search["proxies"][3:]:
            p.update(status="pending", metrics=None, objective=None, loo_predicted=None)
        for p in search["proxies"][:3]:
            p["loo_predicted"] = None
        search["surrogate"] = search["chosen"] = search["baselines"] = None
        del search["confirm"]
    rewrite(search_dir, half_run)
    report = search_report(search_dir)
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    assert len([r for r in dom.tables["proxy-table"] if r]) == 6 and "loo-chart" not in dom.charts
    text = report.read_text()
    for said in ("No surrogate yet", "No chosen mixture yet", "Not confirmed", "No held-out predictions yet",
                 "No chosen weights yet", "proxy p03 (pending); proxy p04 (pending); proxy p05 (pending); "
                 "no surrogate fit; no chosen mixture"):
        assert said in text, said

    def confirm_under_way(search):
        search["confirm"] = {"rung": "r1", "runs": [{"mixture": "searched", "run": "toy-confirm-searched",
                                                     "status": "running"},
                                                    {"mixture": "uniform", "run": "toy-confirm-none", "status": "pending"}]}
    rewrite(search_dir, confirm_under_way)
    text = search_report(search_dir).read_text()  # the searched run's objective comes from its metrics.jsonl
    assert f"Measured at rung r1: searched {CONFIRM['searched']:.3f}. The searched mixture is best, but no" in text
    assert "confirm run uniform (pending): no evaluations yet" in text

    (search_dir / "search.json").write_text(json.dumps({"search": "bare", "proxies": None}))
    assert "Not there yet: no proxies yet; no surrogate fit; no chosen mixture." in search_report(search_dir).read_text()


def test_each_searched_phase_has_its_columns_bars_and_weights(search_dir):
    def two_phases(search):
        search["phases"] = ["pretrain", "midtrain"]
        search["keys"]["midtrain"], search["prior"]["midtrain"] = ["web", "math"], {"web": 0.5, "math": 0.5}
        for i, p in enumerate(search["proxies"]):
            p["weights"]["midtrain"] = {"web": i / 10, "math": 1 - i / 10}
        search["chosen"]["weights"]["midtrain"] = {"web": 0.35, "math": 0.65}
    rewrite(search_dir, two_phases)
    report = search_report(search_dir)
    text, dom = report.read_text(), Dom(report.read_text())
    assert "<th>pretrain/web</th>" in text and "<th>midtrain/math</th>" in text
    rows = [r for r in dom.tables["proxy-table"] if r]
    assert sorted(float(r[7]) for r in rows) == [i / 10 for i in range(6)]  # midtrain/web: after proxy, run, status, 4 pretrain
    assert dom.charts["proxy-weights-1"] == 2 * 6 - 1  # p00's midtrain web share is 0: no segment
    assert [float(r[2]) for r in dom.tables["weights-1"] if r] == [0.35, 0.65]


def test_a_folder_without_search_json_is_one_clear_error(tmp_path):
    with pytest.raises(UserError, match="no search.json in .*; run `loom mix search NAME --from MIX` first"):
        search_report(tmp_path)


CELLS = [f"web:domain={d},quality_bucket={b}" for d in range(8) for b in range(3)]  # a search --over of one source


def over_cells(search):
    """The search as one `--over domain,quality_bucket` leaves it: 24 cells, domain 3 named."""
    share = [(i % 5 + 1) / sum(j % 5 + 1 for j in range(len(CELLS))) for i in range(len(CELLS))]
    cells = lambda values: {"pretrain": dict(zip(CELLS, values))}  # noqa: E731
    search["keys"], search["prior"], search["domain_names"] = {"pretrain": CELLS}, cells(share), {"3": "math"}
    for i, p in enumerate(search["proxies"]):
        p["weights"] = cells([share[(j + i) % len(CELLS)] for j in range(len(CELLS))])
    search["chosen"]["weights"] = cells([2 * s if "domain=3" in k else s for k, s in zip(CELLS, share)])
    search["chosen"]["epochs"] = dict(zip(CELLS, [0.5] * len(CELLS)))
    for b in search["baselines"].values():
        b["weights"] = cells(share)
    search["surrogate"]["fits"] = {"source:web": {"c": 3.0, "t": {f"pretrain/{k}": -0.01 * i for i, k in
                                                                  enumerate(CELLS)}, "residual_scale": 0.01}}


def texts(page: str, table_id: str) -> list[str]:
    """The text cells (those without a data-value) of a table of the page, row by row."""
    body = page[page.index(f'id="{table_id}"'):]
    return re.findall(r"<td>([^<]*)</td>", body[:body.index("</table>")])


@needs_chromium()
def test_tens_of_cells_are_rows_grouped_by_domain_not_columns(search_dir, tmp_path):
    rewrite(search_dir, over_cells)
    report = search_report(search_dir)
    dom, console = open_page(report, tmp_path)
    assert console == "", console
    proxies = [r for r in dom.tables["proxy-table"] if r]  # proxy, run, status, heaviest three, objective, LOO
    assert len(proxies) == 6 and all(len(r) == 6 for r in proxies)
    assert re.search(r"web:domain=\d,quality_bucket=\d 0\.\d{3}; ", report.read_text())
    text = report.read_text()
    ranges = [r for r in dom.tables["proxy-ranges"] if r]  # group, component, prior, lowest, mean, highest
    assert len(ranges) == len(CELLS) and all(float(r[3]) <= float(r[4]) <= float(r[5]) for r in ranges)
    assert texts(text, "proxy-ranges")[1::2] == CELLS
    assert texts(text, "proxy-ranges")[6:8] == ["web:domain=1", CELLS[3]]
    assert texts(text, "proxy-ranges")[18:20] == ["web:domain=3 (math)", CELLS[9]]
    weights = [r for r in dom.tables["weights-0"] if r]  # group, component, prior, searched, 3 baselines, epochs, ratio
    assert texts(text, "weights-0")[1::2] == CELLS
    assert [round(float(r[8]), 6) for r in weights] == [2.0 if "domain=3" in k else 1.0 for k in CELLS]
    assert texts(text, "fits-table") == [f"pretrain/{k}" for k in CELLS] + ["c", "residual scale"]
    assert dom.charts["proxy-weights-0"] == 6 * len(CELLS)
    shot = tmp_path / "cells.png"
    result = chromium(report.as_uri(), tmp_path, "--hide-scrollbars", "--window-size=1200,3400", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.stat().st_size > 20_000


def test_a_domain_s_cells_are_shades_of_one_colour_and_the_next_domain_another():
    from reports.search_wide import grouped_colors

    colors = grouped_colors(CELLS)
    hue = lambda color: colorsys.rgb_to_hls(*(int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)))[0]  # noqa: E731
    assert len(set(colors)) == len(CELLS)
    assert hue(colors[0]) == pytest.approx(hue(colors[1]), abs=0.02) == pytest.approx(hue(colors[2]), abs=0.02)
    assert abs(hue(colors[0]) - hue(colors[3])) > 0.05
