"""`loom mix search`: a toy search on the curated slice, its proxies and confirm runs trained through the real
`loom train`; each proxy's compiled mixture is its design (whole sequences of a batch, pools cut for the target
run); the objective recomputed from the runs' own metrics; the chosen mixture written as a spec that compiles to
the chosen shares within the epoch caps; a rerun trains nothing; a wrong option is one line before any compute."""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from base.errors import UserError
from base.workspace import Workspace
from helpers import compiled, LOOM, TOY_LADDER, as_in_a_terminal, copy_curated, run_loom, training_spec, write_spec
from report_pages import needs_chromium, published_site
from trainer.metrics import read_metrics, read_run

MIXTURE = "max_epochs = 64\n" + training_spec(10)  # the slice's training mixture (pretrain: web docs code fortunes)
KEYS = ["web", "docs", "code", "fortunes"]
TARGET_TOKENS = 61_440
PROXIES = 7  # the log-linear law of 4 weights needs 6 points; leave-one-out one more


def search_ws(curated_slice, slice_tokenizer, folder: Path) -> Path:
    ws = copy_curated(curated_slice, slice_tokenizer, folder / "ws")
    write_spec(ws, "toymix", MIXTURE)
    (folder / "toy.toml").write_text(TOY_LADDER)  # proxies: r0, 24 steps; confirm runs: r1, 40
    return ws


def search_args(folder: Path, *more) -> list:
    return ["mix", "search", "toys", "--from", "toymix", "--ladder", folder / "toy.toml", "--proxies", PROXIES,
            "--target-tokens", TARGET_TOKENS, *more]


@pytest.fixture(scope="module")
def toy_search(tmp_path_factory, curated_slice, slice_tokenizer):
    folder = tmp_path_factory.mktemp("search")
    ws = search_ws(curated_slice, slice_tokenizer, folder)
    result = run_loom("-w", ws, *search_args(folder, "--confirm", "--parallel", 2), timeout=900)
    return ws, folder, result, json.loads((ws / "searches" / "toys" / "search.json").read_text())


def last_evaluation(run_dir: Path) -> dict:
    return [r for r in read_metrics(run_dir) if r.get("val_loss") is not None][-1]


def test_every_proxy_trains_its_design_and_is_scored_from_its_own_metrics(toy_search):
    ws, _, _, search = toy_search
    assert [p["name"] for p in search["proxies"]] == [f"p{i:02d}" for i in range(1, PROXIES + 1)]
    designs = set()
    for proxy in search["proxies"]:
        assert proxy["status"] == "finished"
        weights = proxy["weights"]["pretrain"]
        designs.add(tuple(weights.values()))
        assert sum(weights.values()) == pytest.approx(1) and all((w * 8).is_integer() for w in weights.values())
        plan = pq.read_table(compiled(ws, proxy["run"]) / "plan.parquet").to_pylist()
        realized = {r["component"]: r["realized_share"] for r in plan if r["phase"] == "pretrain"}
        assert realized == {k: w for k, w in weights.items() if w > 0}
        # the objective: the mean of the per-source validation losses at the run's last evaluation
        by_source = last_evaluation(ws / "runs" / proxy["run"])["val_loss_by_source"]
        assert proxy["objective"] == pytest.approx(sum(by_source.values()) / len(by_source))
        assert read_run(ws / "runs" / proxy["run"])["steps"] == 24
    assert len(designs) == PROXIES


def test_each_proxy_reads_its_components_as_often_as_the_target_run_would(toy_search):
    ws, _, _, search = toy_search
    for proxy in search["proxies"]:
        meta = json.loads((compiled(ws, proxy["run"]) / "schedule.json").read_text())
        for component in meta["components"]:
            assert component["pool_sequences"] == max(1, component["available_sequences"] * 6_144 // TARGET_TOKENS)


def test_the_surrogate_is_checked_on_proxies_it_did_not_see(toy_search):
    _, _, result, search = toy_search
    surrogate = search["surrogate"]
    assert surrogate["n_proxies"] == PROXIES and surrogate["held_out"]["method"] == "leave-one-out"
    assert -1 <= surrogate["held_out"]["spearman"] <= 1
    errors = [abs(p["loo_predicted"] - p["objective"]) for p in search["proxies"]]
    assert surrogate["held_out"]["mean_abs_error"] == pytest.approx(sum(errors) / len(errors))
    assert "leave-one-out Spearman" in result.stdout


def test_the_chosen_mixture_is_a_spec_that_compiles_to_its_weights_within_the_caps(toy_search):
    ws, _, _, search = toy_search
    chosen = search["chosen"]
    weights = chosen["weights"]["pretrain"]
    assert sum(weights.values()) == pytest.approx(1) and all((w * 8).is_integer() for w in weights.values())
    low, high = chosen["interval"]
    assert low <= chosen["predicted"] <= high
    assert all(epochs <= 64 for epochs in chosen["epochs"].values())
    spec = (ws / "mixtures" / "toys.toml").read_text()
    assert spec.startswith("# as resolved by `loom mix search toys`") and f"total_tokens = {TARGET_TOKENS}" in spec
    run_loom("-w", ws, "mix", "build", "toys")
    plan = pq.read_table(compiled(ws, "toys") / "plan.parquet").to_pylist()
    realized = {r["component"]: r["realized_share"] for r in plan if r["phase"] == "pretrain"}
    assert realized == {k: w for k, w in weights.items() if w > 0}
    midtrain = {r["component"]: r["target_share"] for r in plan if r["phase"] == "midtrain"}
    assert midtrain == {"docs": 0.6, "code": 0.4}  # the phase not searched is the mixture's own


def test_the_unregularized_optimum_is_offered_as_a_spec_that_builds(toy_search):
    """Beside the choice, the optimum of the predicted objective alone (--kl 0, the same caps), as a spec of its own
    that builds to its weights (in this process, through loom.api as `loom mix build` does)."""
    from loom.api.workspace import Workspace as ApiWorkspace

    ws, _, result, search = toy_search
    optimum = search["unregularized"]
    assert optimum["kl_weight"] == 0 and optimum["mixture"] == "toys-unregularized"
    assert optimum["predicted"] <= search["chosen"]["predicted"] + 1e-9
    assert optimum["interval"][0] <= optimum["predicted"] <= optimum["interval"][1]
    assert all(epochs <= 64 for epochs in optimum["epochs"].values())
    assert "Unregularized (--kl 0): " in result.stdout and "mixtures/toys-unregularized.toml" in result.stdout
    spec = (ws / "mixtures" / "toys-unregularized.toml").read_text()
    assert spec.startswith("# as resolved by `loom mix search toys`")
    ApiWorkspace(Workspace(ws)).mixtures.build("toys-unregularized")
    plan = pq.read_table(compiled(ws, "toys-unregularized") / "plan.parquet").to_pylist()
    realized = {r["component"]: r["realized_share"] for r in plan if r["phase"] == "pretrain"}
    assert realized == {k: w for k, w in optimum["weights"]["pretrain"].items() if w > 0}


def test_confirm_trains_the_chosen_mixture_and_the_baselines_alike(toy_search):
    ws, _, result, search = toy_search
    confirm = search["confirm"]
    trained = [r["mixture"] for r in confirm["runs"]]
    assert trained[0] == "searched" and set(trained) | set(confirm["skipped"]) == {
        "searched", "proportional", "uniform", "unimax", "stratified", "no-mixing"}
    assert confirm["skipped"]["stratified"] == "the same mixture as uniform"  # every component is its own source
    single = search["baselines"]["no-mixing"]
    assert single["weights"]["pretrain"][single["source"]] == 1.0
    assert single["predicted"] == min(single["candidates"].values())
    # each confirm mixture at the proxies' rung too: its order there against the confirm rung's
    assert [r["mixture"] for r in confirm["at_proxy_scale"]] == trained
    for run in confirm["at_proxy_scale"]:
        assert run["status"] == "finished" and read_run(ws / "runs" / run["run"])["steps"] == 24
    decisions = confirm["decision_accuracy"]
    pairs = len(trained) * (len(trained) - 1) // 2
    assert decisions["measured"]["pairs"] == decisions["predicted"]["pairs"] == pairs
    assert f"Decision accuracy, measured at rung r0: {decisions['measured']['agree']} of {pairs} pairs" in result.stdout
    for run in confirm["runs"]:
        record = read_run(ws / "runs" / run["run"])
        assert run["status"] == "finished" and record["steps"] == 40 and record["model"]["d_model"] == 24
        by_source = last_evaluation(ws / "runs" / run["run"])["val_loss_by_source"]
        assert run["objective"] == pytest.approx(sum(by_source.values()) / len(by_source))
    best = min(confirm["runs"], key=lambda r: r["objective"])["mixture"]
    assert confirm["best"] == best and f"Best measured: {best}" in result.stdout
    searched = json.loads((compiled(ws, "toys-searched") / "schedule.json").read_text())
    assert searched["seed"] == json.loads((compiled(ws, "toys-proportional") / "schedule.json").read_text())["seed"]
    page = (ws / "searches" / "toys" / "report.html").read_text()
    assert 'id="decision-accuracy"' in page and f"{decisions['measured']['agree']} of {pairs} pairs" in page
    for kind in ("proxies", "confirm"):  # the search's runs overlaid, linked from its page
        assert f'href="../../reports/compare/search-toys-{kind}.html"' in page
        assert (ws / "reports" / "compare" / f"search-toys-{kind}.html").is_file()
    assert all(f'>{r["run"]}</a>' in (ws / "reports" / "compare" / "search-toys-confirm.html").read_text()
               for r in confirm["runs"])


@needs_chromium()
def test_the_published_site_of_a_search_holds_its_page_its_runs_and_their_comparisons(toy_search, tmp_path):
    """`loom publish` after a search (report_pages.published_site: every link walked in Chromium, no console error,
    no external URL, the size stated): the search's page, each proxy's and confirm run's page and metrics, the
    comparisons its page links, every mixture's page."""
    ws, _, _, search = toy_search
    _, walked = published_site(ws, "search", tmp_path)
    runs = [p["run"] for p in search["proxies"]] + [r["run"] for r in search["confirm"]["runs"]]
    assert {"searches/toys/report.html", "reports/compare/search-toys-proxies.html",
            "reports/compare/search-toys-confirm.html", *(f"runs/{r}/metrics.jsonl" for r in runs),
            *(f"mixtures/{m.name}/report.html" for m in (ws / "mixtures").iterdir() if m.is_dir())} <= set(walked["files"])


def test_a_rerun_trains_nothing_and_another_kl_pull_only_refits(toy_search):
    ws, folder, _, search = toy_search
    metrics = ws / "runs" / "toys-p07" / "metrics.jsonl"
    before = metrics.stat().st_mtime_ns
    again = run_loom("-w", ws, *search_args(folder, "--confirm"))
    at_proxy = [r for r in search["confirm"]["at_proxy_scale"] if not re.search(r"-p\d\d$", r["run"])]  # a proxy
    confirm_runs = len(search["confirm"]["runs"]) + len(at_proxy)
    assert again.stdout.count("finished already") == PROXIES + confirm_runs
    assert "compiled" not in again.stdout and metrics.stat().st_mtime_ns == before
    assert json.loads((ws / "searches" / "toys" / "search.json").read_text())["chosen"] == search["chosen"]
    pulled = run_loom("-w", ws, *search_args(folder, "--kl", "100"))
    assert pulled.stdout.count("finished already") == PROXIES and metrics.stat().st_mtime_ns == before
    chosen = json.loads((ws / "searches" / "toys" / "search.json").read_text())["chosen"]
    prior = search["prior"]["pretrain"]
    assert chosen["kl_to_prior"] <= search["chosen"]["kl_to_prior"]
    assert max(abs(chosen["weights"]["pretrain"][k] - prior[k]) for k in KEYS) <= 1 / 8
    # pulled this hard, a baseline is predicted better; the search says which and why, with the numbers
    explanation = json.loads((ws / "searches" / "toys" / "search.json").read_text())["explanation"]
    assert explanation["beaten_by"] and "note: predicted better than the chosen mixture: " in pulled.stdout
    kl = next(r for r in explanation["reasons"] if r["kind"] == "kl")
    assert kl["share"] > 0 and kl["given_up"] > 0 and kl["text"].startswith("the KL pull toward the prior (--kl 100)")
    assert kl["text"][:60] in pulled.stdout
    page = (ws / "searches" / "toys" / "report.html").read_text()
    assert "Predicted better than the chosen mixture: " in page and "the KL pull toward the prior (--kl 100)" in page


def test_a_search_with_other_designs_is_refused(toy_search):
    ws, folder, _, _ = toy_search
    result = run_loom("-w", ws, *search_args(folder, "--seed", 1), check=False)
    assert result.returncode == 2 and "was started with other options" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("more, message", [
    (["--phase", "cooldown"], "has the phases pretrain, midtrain"),
    (["--objective", "perplexity"], "'perplexity' is not a term"),
    (["--objective", "eval:bofh"], "no evaluation set 'bofh'"),
    (["--design", "grid"], "use one of dirichlet, spacefill"),
    (["--rung", "r9"], "the ladder spec's rungs are r0, r1, r2"),
    (["--proxies", 6], "a loglinear surrogate of 4 weights needs at least 7 proxies"),
    (["--target-tokens", 4_096], "not fewer than the target run's"),
    (["--kl", "nan"], "--kl is a finite number >= 0"),
    (["--over", "topic"], "--over topic: 'topic' is not an axis to search; use domain, quality_bucket"),
    (["--over", "domain"], "the curated data has no domains; add a [domains] table to sources.toml"),
    (["--over", "quality_bucket"], "--over quality_bucket: no source of phase 'pretrain' has quality_bucket values; "
                                   "curate with a quality model"),
])
def test_a_wrong_option_is_one_line_before_any_compute(curated_slice, slice_tokenizer, tmp_path, more, message):
    ws = search_ws(curated_slice, slice_tokenizer, tmp_path)
    result = run_loom("-w", ws, *search_args(tmp_path, *more), check=False)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (ws / "runs").exists()


def test_a_spec_the_search_did_not_write_is_never_overwritten(curated_slice, slice_tokenizer, tmp_path):
    ws = search_ws(curated_slice, slice_tokenizer, tmp_path)
    mine = write_spec(ws, "toys", MIXTURE)
    result = run_loom("-w", ws, *search_args(tmp_path), check=False)
    assert result.returncode == 2 and "is not this search's" in result.stderr
    assert mine.read_text() == 'name = "toys"\n' + MIXTURE and not (ws / "runs").exists()


def test_a_dry_run_prints_the_designs_and_trains_nothing(curated_slice, slice_tokenizer, tmp_path):
    ws = search_ws(curated_slice, slice_tokenizer, tmp_path)
    result = run_loom("-w", ws, *search_args(tmp_path, "--dry-run"))
    assert all(f"p{i:02d}" in result.stdout for i in range(1, PROXIES + 1)) and "unimax" in result.stdout
    assert not (ws / "runs").exists() and not (ws / "searches").exists()
    both = run_loom("-w", ws, *search_args(tmp_path, "--dry-run", "--phase", "all", "--proxies", 12))
    assert "phases pretrain, midtrain" in both.stdout
    assert "pretrain/web" in both.stdout and "midtrain/docs" in both.stdout


def with_cells(ws: Path) -> None:
    """The curated slice as if curated with `[domains] k = 3` on web and code and a quality model of 2 buckets:
    its manifest's documents get a domain and a bucket by row (the slice has neither), curation.json its domains."""
    gen = Workspace(ws).published()
    for part in sorted(gen.manifest_table("documents").glob("*.parquet")):
        table = pq.read_table(part)
        rows = range(table.num_rows)
        sources = table["source"].to_pylist()
        domains = [i % 3 if s in ("web", "code") else None for i, s in zip(rows, sources)]
        for name, values in (("domain", domains), ("quality_bucket", [i // 3 % 2 for i in rows])):
            column = pa.array(values, type=table.schema.field(name).type)
            table = table.set_column(table.schema.get_field_index(name), name, column)
        pq.write_table(table, part)
    info = json.loads(gen.curation_info.read_text())
    info["domains"] = {"k": 3, "sources": ["web", "code"], "names": {"1": "fortran"}, "model_digest": "test"}
    gen.curation_info.write_text(json.dumps(info))


def test_over_domain_and_quality_bucket_plans_a_search_of_the_cells(curated_slice, slice_tokenizer, tmp_path):
    """--over replaces the searched phase's sources by their non-empty cells (a source without domains by its
    buckets alone), the prior their natural shares; with tens of cells the plan lists a row per cell."""
    ws = search_ws(curated_slice, slice_tokenizer, tmp_path)
    with_cells(ws)
    # a batch of 8 sequences, fewer than the cells: the search weighs every cell itself (mix build would leave out
    # those whose natural share is under one sequence per batch)
    write_spec(ws, "toymix", MIXTURE)
    (tmp_path / "cells.toml").write_text(TOY_LADDER)
    result = run_loom("-w", ws, "mix", "search", "cells", "--from", "toymix", "--ladder", tmp_path / "cells.toml",
                      "--target-tokens", TARGET_TOKENS, "--over", "domain,quality_bucket", "--proxies", 12,
                      "--dry-run")
    rows = re.findall(r"^\W*(\w+:[\w=,]+)[^│]*│\s*([\d.]+)", result.stdout, re.M)
    keys = [key for key, _ in rows]
    assert len(keys) == len(set(keys)) >= 14, result.stdout
    assert "web:domain=1,quality_bucket=0" in keys and "code:domain=2,quality_bucket=1" in keys
    assert "web:domain=1,quality_bucket=0 (fortran)" in result.stdout  # a domain's name beside its number
    assert "docs:quality_bucket=0" in keys and "fortunes:quality_bucket=1" in keys
    assert sum(float(prior) for _, prior in rows) == pytest.approx(1.0, abs=0.01)  # the natural shares
    assert "p01..p12" in result.stdout and "designs min" in result.stdout
    assert not (ws / "runs").exists() and not (ws / "searches").exists()


def test_over_picks_the_ridge_surrogate_and_dirichlet_designs_unless_given():
    from sweeps.search_cells import defaults, with_wildcards
    from mixtures.spec import parse_spec

    assert defaults((), None, None) == ("spacefill", "loglinear")
    assert defaults(("domain",), None, None) == ("dirichlet", "ridge")
    assert defaults(("domain",), "spacefill", "loglinear") == ("spacefill", "loglinear")
    spec = parse_spec({"name": "m", "total_tokens": 1000, "weights": {"web": 0.5, "web:lang=en": 0.3, "docs": 0.2},
                       "midtrain": {"web": 1.0}}, "m")
    axes = {"web": ("domain", "quality_bucket"), "docs": ("quality_bucket",)}  # domains fitted on web only
    over = with_wildcards(spec, ["pretrain"], ("domain", "quality_bucket"), axes)
    assert [k for k, _ in over.phases[0].weights] == ["web:domain=*,quality_bucket=*",
                                                       "web:lang=en,domain=*,quality_bucket=*",
                                                       "docs:quality_bucket=*"]
    assert over.phases[1].weights == spec.phases[1].weights
    with pytest.raises(UserError, match="no source of phase 'pretrain' has domain values; list the sources in"):
        with_wildcards(spec, ["pretrain"], ("domain",), {"web": (), "docs": ()})
    celled = parse_spec({"name": "m", "total_tokens": 1000, "weights": {"web:domain=*": 0.6, "web:domain=2": 0.4}},
                        "m")  # the user's own wildcard over the axis is searched as it is
    assert with_wildcards(celled, ["pretrain"], ("domain",), axes).phases == celled.phases


def test_a_small_cell_s_cap_is_the_tighter_of_the_target_run_s_and_the_proxy_s_whole_sequence_pool():
    """A pool of a few sequences rounds down by more than the designs' 5% margin: 20 sequences cut to 24 of 100
    steps is a pool of 4, not 4.8; the cap must be the proxy's, or its compile refuses the design."""
    from types import SimpleNamespace

    from mixtures.spec import parse_spec
    from sweeps.search_plan import CAP_MARGIN, SearchOptions, build_space

    spec = parse_spec({"name": "m", "seq_len": 32, "global_batch": 64, "steps": 100, "max_epochs": 4,
                       "weights": {"small": 0.5, "large": 0.5}}, "m")
    stats = {"small": {"tokens": 20 * 33, "available_sequences": 20},
             "large": {"tokens": 1000 * 33, "available_sequences": 1000}}
    target = 100 * 64 * 32
    target_only = build_space(spec, SearchOptions(), stats, target)
    with_proxy = build_space(spec, SearchOptions(), stats, target, [SimpleNamespace(steps=24)])
    assert target_only.capacity["small"] == pytest.approx(CAP_MARGIN * 4 * 20 * 33 / target)
    assert with_proxy.capacity["small"] == pytest.approx(CAP_MARGIN * 4 * 4 / (24 * 64))
    assert with_proxy.capacity["large"] == pytest.approx(target_only.capacity["large"], rel=0.05)


def test_the_objective_shares_sources_and_evals_out_as_means():
    from sweeps.objective import parse_objective, resolve_objective, score

    terms = parse_objective("sources=1, evals=1, source:web=0.5")
    weights = resolve_objective(terms, ["web", "code"], ["bofh"])
    assert weights == {"source:web": 1.0, "source:code": 0.5, "eval:bofh": 1.0}
    values = {"source:web": 6.0, "source:code": 4.0, "eval:bofh": 8.0, "val_loss": 5.0}
    assert score(values, weights) == pytest.approx((6.0 + 2.0 + 8.0) / 2.5)
    assert score({"source:web": 6.0}, weights) is None  # a term without a value: no objective yet
    assert resolve_objective(parse_objective("val_loss"), ["web"], []) == {"val_loss": 1.0}


def wait_for_finished(search: subprocess.Popen, run_files: list[Path]) -> None:
    deadline = time.time() + 300
    while not all(f.exists() and read_run(f.parent)["status"] == "finished" for f in run_files):
        assert search.poll() is None and time.time() < deadline, search.stderr.read().decode()
        time.sleep(0.05)


@pytest.mark.slow  # a second toy search, interrupted and resumed (~1 min)
def test_an_interrupted_search_resumes_with_the_proxies_not_yet_trained(curated_slice, slice_tokenizer, tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) once two proxies have finished; the rerun keeps
    them and trains the rest; a second search of the same NAME meanwhile is refused."""
    ws = search_ws(curated_slice, slice_tokenizer, tmp_path)
    command = [*LOOM, "-w", ws, *search_args(tmp_path)]
    search = subprocess.Popen([*map(str, command)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True, preexec_fn=as_in_a_terminal)
    finished = [ws / "runs" / f"toys-p0{i}" / "run.json" for i in (1, 2)]
    wait_for_finished(search, finished[:1])
    twice = run_loom(*command[len(LOOM):], check=False)  # while the first proxies train
    assert twice.returncode != 0 and "search 'toys'" in twice.stderr
    wait_for_finished(search, finished)
    os.killpg(search.pid, signal.SIGINT)  # at once: five proxies of a few seconds each are left
    _, stderr = search.communicate(timeout=120)
    assert search.returncode != 0 and "run the same command again to resume" in stderr.decode()
    assert len(stderr.decode().strip().splitlines()) <= 2  # no traceback
    kept = {f: f.stat().st_mtime_ns for f in finished}
    result = run_loom(*command[len(LOOM):], timeout=600)
    assert "proxy p01: finished already" in result.stdout and "proxy p02: finished already" in result.stdout
    assert "proxy p07: started" in result.stdout  # the interruption left proxies to train
    assert kept == {f: f.stat().st_mtime_ns for f in finished}
    search_json = json.loads((ws / "searches" / "toys" / "search.json").read_text())
    assert all(p["status"] == "finished" for p in search_json["proxies"]) and search_json["chosen"]


def test_without_a_ladder_and_a_gpu_a_search_plans_12_proxies_of_the_cpu_preset_s_r0(curated_slice, slice_tokenizer,
                                                                                         tmp_path):
    """Without --ladder and --proxies, on a machine without a GPU, a search plans 12 proxies of the cpu preset's
    smallest rung. Whether the searched mixture beats the natural one at that size is a measurement:
    bench/cpu_presets.py, figures in bench/README.md."""
    ws = search_ws(curated_slice, slice_tokenizer, tmp_path)
    result = run_loom("-w", ws, "mix", "search", "best", "--from", "toymix", "--target-tokens", 2_000_000, "--confirm",
                      "--dry-run", env={"CUDA_VISIBLE_DEVICES": ""})  # torch sees no GPU: the cpu preset
    assert "Proxies: 12 runs of rung r0 (d_model 16," in result.stdout, result.stdout
    assert all(f"p{i:02d}" in result.stdout for i in range(1, 13)) and "proportional" in result.stdout
    assert not (ws / "runs").exists() and not (ws / "searches").exists()


def cells_plan(capacity: dict[str, float]):
    """A search of one phase over two cells of web, code and docs (natural shares 0.3 0.3 0.1 0.3, a batch of 12),
    its caps as given; pure: no proxy, no ladder."""
    import numpy as np

    from mixtures.spec import parse_spec
    from sweeps.search_baselines import single_sources
    from sweeps.search_plan import SearchPlan
    from sweeps.search_space import SearchSpace

    keys = ("web:domain=0", "web:domain=1", "code:domain=0", "docs")
    natural = (0.3, 0.3, 0.1, 0.3)
    space = SearchSpace(("pretrain",), (1.0,), (keys,), (natural,), (natural,), capacity, {k: 0.0 for k in keys}, 12)
    base = parse_spec({"name": "m", "total_tokens": 1000, "max_epochs": 1, "weights": dict(zip(keys, natural))}, "m")
    available = {k: int(capacity.get(k, 1.0) * 1000) for k in keys}  # max_epochs 1: a key's cap is its tokens
    return SearchPlan("s", base, 1000, space, available, np.zeros((0, 4)), None, None, {}, "r0", "r1", {}, "",
                      single_sources=single_sources(space))


def test_stratified_is_equal_per_source_split_by_tokens_and_no_mixing_the_best_single_source_within_the_caps():
    """Aioli's stratified baseline gives each source the same share, each cell its tokens' share of its source's
    (uniform gives each cell the same); no-mixing is the source alone the surrogate predicts best of those within
    the caps, and says so where none is."""
    import numpy as np

    from sweeps.search_baselines import stratified
    from sweeps.search_results import pick_single_source
    from sweeps.search_space import uniform

    plan = cells_plan({"web:domain=0": 1.0, "web:domain=1": 1.0, "code:domain=0": 0.5, "docs": 1.0})
    assert list(stratified(plan.space)) == pytest.approx([1 / 6, 1 / 6, 1 / 3, 1 / 3])
    assert list(uniform(plan.space)) == pytest.approx([0.25] * 4)
    assert {s: list(x) for s, x in plan.single_sources.items()} == {
        "web": [0.5, 0.5, 0, 0], "code": [0, 0, 1, 0], "docs": [0, 0, 0, 1]}
    predict = lambda x: float(np.dot(x, [3.0, 3.0, 1.0, 2.0]))  # noqa: E731  code alone is best, but over its cap
    record = {}
    assert list(pick_single_source(plan, predict, record)) == [0, 0, 0, 1]
    assert record["source"] == "docs" and record["feasible"] and record["predicted"] == 2.0
    nothing_fits = cells_plan({k: 0.4 for k in plan.space.keys[0]})
    record = {}
    pick_single_source(nothing_fits, predict, record)
    assert record["source"] == "code" and not record["feasible"]
    assert record["why"].startswith("no source alone is within the caps: the best predicted, code:")


def test_decision_accuracy_is_the_share_of_pairs_in_the_large_scale_s_order():
    from sweeps.decision_accuracy import decision_accuracy, swapped_text

    small = {"searched": 6.0, "uniform": 6.2, "unimax": 6.1, "stratified": None}
    large = {"searched": 5.0, "uniform": 5.1, "unimax": 5.3, "stratified": 4.0}
    found = decision_accuracy(small, large)
    assert (found["pairs"], found["agree"], found["accuracy"]) == (3, 2, pytest.approx(2 / 3))
    assert found["disagree"] == [{"pair": ["uniform", "unimax"], "small": [6.2, 6.1], "large": [5.1, 5.3]}]
    assert swapped_text(found) == "uniform vs unimax: 6.200 > 6.100 small, 5.100 < 5.300 large"
    assert decision_accuracy({"searched": 6.0}, large) is None


def test_a_baseline_predicted_better_than_the_choice_is_explained_with_each_reason_s_number():
    """The issue's case: the choice predicted 6.350, uniform 6.346 in its own table. The KL pull, a cap that binds,
    the low Spearman and uniform outside the weights the proxies tried are each said, with their numbers."""
    import numpy as np

    from sweeps.search_explain import explain

    plan = cells_plan({"web:domain=0": 1.0, "web:domain=1": 1.0, "code:domain=0": 0.5, "docs": 1.0})
    results = {"chosen": {"predicted": 6.350, "vector": [0.1, 0.1, 0.5, 0.3], "kl_weight": 0.05, "kl_to_prior": 0.4},
               "unregularized": {"predicted": 6.340, "vector": [0.0, 0.2, 0.5, 0.3]},
               "baselines": {"uniform": {"predicted": 6.346, "feasible": True},
                             "proportional": {"predicted": 6.360, "feasible": True}},
               "surrogate": {"held_out": {"spearman": 0.37}}}
    tried = np.array([[0.1, 0.1, 0.5, 0.3], [0.2, 0.2, 0.4, 0.2], [0.0, 0.1, 0.2, 0.7]])
    vectors = {"uniform": np.full(4, 0.25), "proportional": np.array([0.3, 0.3, 0.1, 0.3])}
    found = explain(plan, results, tried, vectors)
    assert found["beaten_by"] == [{"baseline": "uniform", "predicted": 6.346, "feasible": True}]
    kl, *caps, spearman, extrapolated = found["reasons"]
    assert kl["share"] == pytest.approx(0.02 / 6.37) and kl["given_up"] == pytest.approx(0.010)
    assert kl["text"].startswith("the KL pull toward the prior (--kl 0.05) is 0.3% of the chosen mixture's penalized "
                                 "objective (6.3500 + 0.0200); it gives up 0.0100 of predicted objective")
    assert [c["at"] for c in caps] == ["the chosen mixture", "the unregularized optimum"]
    assert caps[0]["text"].startswith("a cap binds at the chosen mixture: 'code:domain=0' (1.00 epochs) at its cap")
    assert spearman["text"].startswith("the surrogate ranks proxies it did not see poorly (leave-one-out Spearman 0.37")
    assert extrapolated["text"].startswith("uniform lies outside the weights the proxies tried (web:domain=0 0.250 "
                                           "(tried 0.000-0.200), web:domain=1 0.250 (tried 0.100-0.200)): its "
                                           "prediction is an extrapolation")
    results["chosen"]["predicted"] = 6.3
    assert explain(plan, results, tried, vectors) is None  # predicted better than every baseline: nothing to say
