"""`loom ladder`: a 3-rung toy ladder with two cooldowns a rung on the curated slice, trained through the real
`loom train`, its rungs' budgets, FLOPs and simulated epoching checked against the trainer's and compiler's own
figures, its fits on every (N, D) point written, queryable and drawn; the same runs fitted as a ladder without
cooldowns gives today's fit; a killed ladder resumed (slow); a wrong spec refused in one line before any compute."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import pyarrow.parquet as pq

from helpers import as_in_a_terminal, compiled, LOOM, TOY_LADDER as TOY, copy_curated, published, run_loom, training_spec, write_spec
from report_pages import needs_chromium, open_page, published_site
from base.errors import UserError
from base.lock import exclusive
from reports.run import run_report
from sweeps.spec import parse_ladder_spec
from trainer.metrics import run_lock_file

MIXTURE = "max_epochs = 64\n" + training_spec(10)  # the training tests' slice mixture, allowed to repeat
# each rung's own run and cooldowns at half and three quarters of its steps: 9 points (N, D), 8 of them fitted
TOY_COOLDOWNS = "cooldowns = [0.5, 0.75]\n" + TOY.replace("l_inf = 0.0\n", "")  # L(N, D) fits its E
BUDGETS = {"r0": (12, 18, 24), "r1": (20, 30, 40), "r2": (30, 45, 60)}  # steps
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}  # torch sees no GPU: the default preset is cpu


def ladder_ws(curated_slice, slice_tokenizer, folder: Path) -> Path:
    ws = copy_curated(curated_slice, slice_tokenizer, folder / "ws")
    write_spec(ws, "toymix", MIXTURE)
    (folder / "toy.toml").write_text(TOY_COOLDOWNS)
    return ws


@pytest.fixture(scope="module")
def toy_ladder(tmp_path_factory, curated_slice, slice_tokenizer):
    folder = tmp_path_factory.mktemp("ladder")
    ws = ladder_ws(curated_slice, slice_tokenizer, folder)
    # two rungs at a time, one thread each: the killed ladder of the slow test, one at a time, must end the same
    # captured to a pipe: not a terminal, so plain progress lines, every half second here (30 s by default)
    result = run_loom("-w", ws, "ladder", "toy", "--mixture", "toymix", "--spec", folder / "toy.toml", "--parallel", 2,
                      timeout=600, env={"LOOM_PROGRESS_SECONDS": "0.5"})
    return ws, result


def test_a_toy_ladder_trains_every_rung_and_its_cooldowns_and_fits_every_point(toy_ladder):
    ws, result = toy_ladder
    fit = json.loads((ws / "ladders" / "toy" / "fit.json").read_text())
    assert fit["design"] == "cooldowns" and fit["law"] == "L(N, D) = E + A/N^alpha + B/D^beta"
    assert [r["rung"] for r in fit["rungs"]] == ["r0", "r1", "r2"]
    for rung in fit["rungs"]:
        budgets = rung["budgets"]
        assert tuple(b["steps"] for b in budgets) == BUDGETS[rung["rung"]]
        assert [b["run"] for b in budgets] == [*(f"toy-{rung['rung']}-cooldown-{s}" for s in BUDGETS[rung["rung"]][:2]),
                                               f"toy-{rung['rung']}"]
        assert all(b["status"] == "finished" and b["final"]["val_loss"] > 0 for b in budgets)
        assert budgets[-1]["final"] == rung["final"] and budgets[-1]["tokens"] == rung["tokens"]
    validation = fit["fits"]["val_loss"]
    assert validation["n_points"] == 9 and validation["fit"]["n_points"] == 9
    assert fit["interval"]["method"] == "auto" and validation["fit"]["interval_method"] == "student-t"  # < 10 points
    held = validation["held_out"]  # the largest N at its largest D: the largest rung's own run, fitted on the rest
    assert held["run"] == "toy-r2" and held["measured"] == fit["rungs"][2]["final"]["val_loss"]
    assert held["fit"]["n_points"] == 8 and held["tokens"] == fit["rungs"][2]["tokens"]
    assert held["relative_error"] == pytest.approx((held["predicted"] - held["measured"]) / held["measured"])
    low, high = held["interval"]
    assert held["half_width"] == pytest.approx((high - low) / 2 / held["predicted"])
    assert held["inside"] == (low <= held["measured"] <= high)
    frontier = validation["frontier"]  # the law's, or why it has none (a size or data term the points do not show)
    assert validation["target"]["interval"] and (len(frontier.get("curve", ())) == 32
                                                 or frontier["error"].startswith("the fitted law has no "))
    assert [c["rung"] for c in validation["curves"]] == ["r0", "r1", "r2", "target"]
    sources = {k for k in fit["fits"] if k.startswith("source:")}
    assert sources == {"source:web", "source:docs", "source:code", "source:fortunes"}
    said = " ".join(result.stdout.split())  # the console wraps long lines
    assert "Honesty check: fitted without toy-r2 (the largest N at its largest D" in said
    assert re.search(r"error [+-]\d+\.\d\d%; (inside|OUTSIDE) the 90% interval \[[\d.]+, [\d.]+\] \(±\d+\.\d% of the "
                     r"prediction\)", said), said
    assert (ws / "ladders" / "toy" / "report.html").stat().st_size > 1000
    compare = ws / "reports" / "compare" / "ladder-toy.html"  # every run overlaid, linked from the ladder's page
    assert 'href="../../reports/compare/ladder-toy.html"' in (ws / "ladders" / "toy" / "report.html").read_text()
    assert all(f'>{b["run"]}</a>' in compare.read_text() for r in fit["rungs"] for b in r["budgets"])


@needs_chromium()
def test_the_published_site_of_a_ladder_holds_every_rung_s_page_and_metrics_and_each_link_resolves(toy_ladder,
                                                                                                  tmp_path):
    """`loom publish` after a ladder (report_pages.published_site: every link walked in Chromium, no console error,
    no external URL, the size stated): the ladder's page, each rung's and cooldown's run page with its metrics, the
    comparison of the rungs, the manifest's tables; a second publish of the same name replaces the first whole."""
    ws = toy_ladder[0]
    site, walked = published_site(ws, "ladder", tmp_path / "first")
    runs = sorted(p.name for p in (ws / "runs").iterdir())
    manifest = f"{published(ws).relative_to(ws).as_posix()}/manifest"
    assert {"index.html", "ladders/toy/report.html", f"{manifest}/documents.parquet", f"{manifest}/shards.parquet",
            *(f"runs/{r}/report.html" for r in runs), *(f"runs/{r}/metrics.jsonl" for r in runs)} <= set(walked["files"])
    assert any(f.startswith("reports/compare/") for f in walked["files"])
    assert {f"{manifest}/README.md", f"{manifest}/README.html"} <= set(walked["files"])  # the curated data's card
    assert (site / f"{manifest}/README.md").read_text().startswith("---\nlanguage:")
    assert (site / "runs/toy-r0/metrics.jsonl").read_bytes() == (ws / "runs/toy-r0/metrics.jsonl").read_bytes()
    documents = site / manifest / "documents.parquet"
    assert pq.read_table(documents).num_rows == pq.read_table(published(ws) / "manifest" / "documents").num_rows
    assert not (site / manifest / "removed.parquet").exists()  # the removed documents' text is data
    first, joined = site.stat().st_ino, documents.stat().st_ino
    run_loom("-w", ws, "publish", "ladder")
    assert site.stat().st_ino != first and sorted(os.listdir(ws / "sites")) == ["ladder"]  # swapped, nothing left
    assert documents.stat().st_ino == joined  # the same generation's table linked from the site it replaced


def test_publish_watch_republishes_a_live_run_as_it_trains_and_stops_whole_on_ctrl_c(toy_ladder, tmp_path):
    """A live run (run.json says running, its lock held): its page and the site's index reload themselves in the
    published copy; a metrics line appended is published at the next poll, with one line saying why; Ctrl-C
    stops with exit 130, the site whole and no staging folder left."""
    ws = tmp_path / "ws"
    run = ws / "runs" / "toy-r0"
    shutil.copytree(toy_ladder[0] / "runs" / "toy-r0", run, ignore=shutil.ignore_patterns("checkpoints", "branches"))
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "status": "running"}))
    lines = (run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join(lines[:5]))
    published_metrics = ws / "sites" / "live" / "runs" / "toy-r0" / "metrics.jsonl"

    said = tmp_path / "said.txt"  # a file, not a pipe: read while it runs, to wait for a publish's line

    def wait_for(expected: str, lines_said: int, watch: subprocess.Popen) -> None:
        """Until the published metrics are `expected` and the watch has said its line about them (it publishes, then
        says so: stopped between the two, it would not)."""
        deadline = time.time() + 60
        while not (published_metrics.exists() and published_metrics.read_text() == expected
                   and len(said.read_text().splitlines()) == lines_said):
            assert watch.poll() is None and time.time() < deadline, (said.read_text(), watch.communicate())
            time.sleep(0.05)

    with exclusive(run_lock_file(run), "run 'toy-r0'"), said.open("w") as out:
        run_report(run)
        watch = subprocess.Popen([*map(str, LOOM), "-w", str(ws), "publish", "live", "--watch", "--every", "0.2"],
                                 stdout=out, stderr=subprocess.PIPE, text=True, preexec_fn=as_in_a_terminal)
        wait_for("".join(lines[:5]), 1, watch)
        for page in ("runs/toy-r0/report.html", "index.html"):
            assert '<meta http-equiv="refresh"' in (ws / "sites" / "live" / page).read_text()
        with (run / "metrics.jsonl").open("a") as metrics:
            metrics.write(lines[5] + '{"step": 6, "lo')  # a line being written is not published until whole
        wait_for("".join(lines[:6]), 2, watch)
        watch.send_signal(signal.SIGINT)
        _, err = watch.communicate(timeout=30)
    assert watch.returncode == 130, (said.read_text(), err)
    assert err.strip() == f"stopped watching; {ws / 'sites' / 'live'} holds the last site published, whole"
    first, second = said.read_text().splitlines()
    assert [" published: " in first, " republished after runs/toy-r0/metrics.jsonl: " in second] == [True, True]
    assert sorted(os.listdir(ws / "sites")) == ["live"] and (ws / "sites" / "live" / "index.html").exists()


@needs_chromium()
def test_the_page_of_a_ladder_with_cooldowns_draws_every_point_the_law_and_the_frontier(toy_ladder, tmp_path):
    ws, _ = toy_ladder
    dom, console = open_page(ws / "ladders" / "toy" / "report.html", tmp_path)
    assert console == "", console
    shapes = lambda chart, css: [a for _, a in dom.shapes.get(chart, []) if a.get("class") == css]  # noqa: E731
    lines = shapes("tokens-chart", "rung-points")
    assert [line["data-name"] for line in lines] == ["r0", "r1", "r2"]
    assert all(len(line["points"].split()) == 3 for line in lines)  # through each rung's 3 budgets
    assert len(shapes("tokens-chart", "budget-final")) == 8
    assert [h["data-name"].split(":")[0] for h in shapes("tokens-chart", "held-out")] == ["toy-r2 (held out)"]
    assert len(shapes("tokens-chart", "rung-fit")) == 3 and len(shapes("tokens-chart", "target-fit")) == 1
    assert len(shapes("tokens-chart", "held-out-prediction")) == 1 and len(shapes("tokens-chart", "target")) == 1
    fit = json.loads((ws / "ladders" / "toy" / "fit.json").read_text())
    has_frontier = "curve" in fit["fits"]["val_loss"]["frontier"]
    assert len(shapes("frontier-chart", "frontier-point")) == 9
    assert len(shapes("frontier-chart", "frontier")) == has_frontier
    assert len([row for row in dom.tables["budget-table"] if row]) == 9  # a row per point, below the header


def test_a_ladder_not_on_a_terminal_prints_plain_progress_lines(toy_ladder):
    ws, result = toy_ladder

    def to_train(rung: str, steps: int) -> int:  # its run's steps and each cooldown's own, from its branch on
        cooldowns = json.loads((ws / "runs" / f"toy-{rung}" / "run.json").read_text())["cooldowns"]
        return steps + sum(c["steps"] - c["branch_step"] for c in cooldowns)

    totals = {rung: to_train(rung, steps) for rung, steps in (("r0", 24), ("r1", 40), ("r2", 60))}
    assert all(totals[r] > steps for r, steps in (("r0", 24), ("r1", 40), ("r2", 60)))
    alternatives = "|".join(map(str, totals.values()))
    assert re.search(rf"^rung r\d: step \d+/({alternatives}) \(\d+%\), loss \d+\.\d{{3}}(, ETA \w+)?; ladder \d+% of "
                     "FLOPs", result.stdout, re.M), result.stdout
    for rung, steps in totals.items():
        assert re.search(rf"^rung {rung}: finished {steps} steps in \w+, val loss \d+\.\d{{4}}$", result.stdout, re.M)
    assert "(GFLOPs)" not in result.stdout and "r2 (steps)" not in result.stdout  # no bars drawn into a log


def test_each_rung_trains_its_budget_with_the_trainer_s_flops_and_lr_rule(toy_ladder):
    from trainer.metrics import read_run

    ws, _ = toy_ladder
    fit = json.loads((ws / "ladders" / "toy" / "fit.json").read_text())
    for rung, steps, width in zip(fit["rungs"], (24, 40, 60), (16, 24, 32)):
        run = read_run(ws / "runs" / f"toy-{rung['rung']}")
        assert run["steps"] == steps == rung["steps"] and rung["tokens"] == steps * 8 * 32
        assert run["model"]["d_model"] == width and run["config"]["lr"] == pytest.approx(1e-2 * 32 / width)
        assert run["warmup_steps"] == max(1, round(0.05 * steps))
        assert run["active_parameters"] == rung["active_parameters"]
        # the trainer's FLOPs per token (6N plus attention) times the tokens trained
        assert rung["flops"] == pytest.approx(flops_per_token(run) * rung["tokens"])
        assert rung["tokens_per_parameter"] == pytest.approx(rung["tokens"] / rung["active_parameters"])


def flops_per_token(run: dict) -> float:
    from trainer.config import ModelConfig
    from trainer.config import flops_per_token as trainer_flops

    return trainer_flops(ModelConfig(**run["model"]), run["seq_len"])


def test_every_rung_reads_each_component_as_often_as_the_target_would(toy_ladder):
    """Simulated epoching: each rung's pools are its share of the target's tokens, so epochs match the target's."""
    ws, _ = toy_ladder
    target_tokens = 61_440
    for rung, tokens in (("r0", 6_144), ("r1", 10_240), ("r2", 15_360)):
        meta = json.loads((compiled(ws, f"toy-{rung}") / "schedule.json").read_text())
        for component in meta["components"]:
            expected = max(1, component["available_sequences"] * tokens // target_tokens)
            assert component["pool_sequences"] == expected, (rung, component["key"])


def test_the_ladder_view_of_loom_sql_has_a_row_per_point(toy_ladder):
    ws, _ = toy_ladder
    result = run_loom("-w", ws, "sql", "--format", "json", "SELECT rung, run, budget, steps, loss, held_out FROM "
                      "ladder WHERE metric = 'val_loss' ORDER BY rung, steps")
    rows = json.loads(result.stdout)
    assert [(r["rung"], r["steps"]) for r in rows] == [(k, s) for k, steps in BUDGETS.items() for s in steps]
    assert [r["budget"] for r in rows[:3]] == [0.5, 0.75, 1.0]
    assert [r["run"] for r in rows if r["held_out"]] == ["toy-r2"]
    fit = json.loads((ws / "ladders" / "toy" / "fit.json").read_text())
    assert [r["loss"] for r in rows] == [b["final"]["val_loss"] for r in fit["rungs"] for b in r["budgets"]]


def test_the_same_runs_fitted_as_a_ladder_without_cooldowns_give_today_s_fit(toy_ladder):
    """An old spec (no `cooldowns`): the rungs' final points and L(C), with the keys fit.json has always had."""
    import tomllib

    from mixtures import load_spec
    from sweeps.ladder import plan
    from sweeps.results import ladder_results
    from sweeps.spec import parse_ladder_spec

    ws, _ = toy_ladder
    spec = parse_ladder_spec(tomllib.loads(TOY), "toy.toml")
    assert spec.cooldowns == () and spec.fit.interval == "student-t"
    from base.workspace import Workspace

    results = ladder_results(ws, plan(Workspace(ws), "toy", spec, load_spec(ws / "mixtures" / "toymix.toml")), spec.fit)
    assert set(results) == {"ladder", "mixture", "law", "interval", "rungs", "target", "fits", "chinchilla"}
    assert results["law"] == "L(C) = L_inf + A * C^-alpha" and "budgets" not in results["rungs"][0]
    validation = results["fits"]["val_loss"]
    assert set(validation) == {"label", "fit", "held_out", "target", "curve"}
    assert validation["fit"]["n_points"] == 3 and validation["held_out"]["rung"] == "r2"


def test_a_rerun_of_a_finished_ladder_trains_nothing_and_refits(toy_ladder):
    ws, _ = toy_ladder
    metrics = ws / "runs" / "toy-r2" / "metrics.jsonl"
    before = metrics.stat().st_mtime_ns
    result = run_loom("-w", ws, "ladder", "toy", "--mixture", "toymix")  # the spec is the ladder's own
    assert result.stdout.count("finished already") == 3 and "compiled" not in result.stdout
    assert metrics.stat().st_mtime_ns == before


def test_a_ladder_started_with_another_spec_is_refused(toy_ladder, tmp_path):
    ws, _ = toy_ladder
    other = tmp_path / "other.toml"
    other.write_text(TOY.replace("tokens = 15_360", "tokens = 20_480"))
    result = run_loom("-w", ws, "ladder", "toy", "--mixture", "toymix", "--spec", other, check=False)
    assert result.returncode == 2 and "was started with another spec" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def without_its_last_rung(toy_ladder, folder: Path) -> Path:
    """A copy of the trained toy ladder's workspace without r2's runs (its own and its cooldowns) and without the fit
    they were in: rerun, the ladder trains r2 alone and fits again."""
    ws = Path(shutil.copytree(toy_ladder[0], folder / "ws"))
    for run in (ws / "runs").glob("toy-r2*"):
        shutil.rmtree(run)
    (ws / "ladders" / "toy" / "fit.json").unlink()
    return ws


@pytest.mark.slow  # the toy ladder's last rung, killed and resumed (~15 s)
def test_a_killed_ladder_resumes_only_its_unfinished_rungs(toy_ladder, tmp_path):
    """SIGKILL to the whole process group (a closed terminal, a scheduler's kill) in the middle of the last rung;
    the rerun keeps r0 and r1 (and their cooldowns), resumes r2 from its checkpoint, trains its cooldowns, and ends
    where an unbroken ladder ends. The trained toy ladder with its last rung and its fit taken away, so that the
    killed ladder finds r0 and r1 finished, as it would have left them."""
    ws = without_its_last_rung(toy_ladder, tmp_path)
    command = [*LOOM, "-w", ws, "ladder", "toy", "--mixture", "toymix"]  # the spec is the ladder's own
    ladder = subprocess.Popen([*map(str, command)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True)
    last_rung = ws / "runs" / "toy-r2" / "metrics.jsonl"
    deadline = time.time() + 300
    while not (last_rung.exists() and len(last_rung.read_text().splitlines()) >= 12):
        assert ladder.poll() is None and time.time() < deadline, ladder.stdout.read().decode()
        time.sleep(0.05)
    os.killpg(ladder.pid, signal.SIGKILL)
    ladder.wait()
    kept = {r: (ws / "runs" / f"toy-{r}" / "metrics.jsonl").stat().st_mtime_ns for r in ("r0", "r1")}
    result = run_loom(*command[len(LOOM):], timeout=600)
    assert "rung r0: finished already" in result.stdout and "rung r1: finished already" in result.stdout
    assert "rung r2: resumed at step" in result.stdout
    assert kept == {r: (ws / "runs" / f"toy-{r}" / "metrics.jsonl").stat().st_mtime_ns for r in ("r0", "r1")}
    resumed = json.loads((ws / "ladders" / "toy" / "fit.json").read_text())
    unbroken = json.loads((toy_ladder[0] / "ladders" / "toy" / "fit.json").read_text())
    # the same losses up to the order of float sums: the unbroken ladder ran its rungs two at once, one thread each
    for ours, theirs in zip(resumed["rungs"], unbroken["rungs"]):  # every budget: r2's cooldowns branched after
        for mine, other in zip(ours["budgets"], theirs["budgets"]):
            assert mine["final"]["val_loss"] == pytest.approx(other["final"]["val_loss"], rel=1e-4), mine["run"]


def test_a_ladder_killed_with_kill_9_takes_every_rung_process_with_it(toy_ladder, tmp_path):
    """kill -9 of the ladder alone (not its group) while a rung trains on 2 ranks: `loom train`, torchrun and both
    ranks end with it (base.procs), the rung reads `interrupted` in `loom status`, and the same ladder rerun at
    once goes on (no "in use by pid N"). `loom mix search` starts its runs through the same sweeps.runner._start. The
    trained toy ladder with its last rung taken away, so that only that rung trains (twice)."""
    import psutil

    ws = without_its_last_rung(toy_ladder, tmp_path)
    command = [*LOOM, "-w", ws, "ladder", "toy", "--mixture", "toymix"]  # the spec is the ladder's own
    ladder = subprocess.Popen([*map(str, command), "--nproc", "2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    metrics, lock = ws / "runs" / "toy-r2" / "metrics.jsonl", ws / "locks" / "run-toy-r2.lock"
    children = []
    try:
        deadline = time.time() + 120
        while not (metrics.exists() and lock.exists() and lock.read_text()):  # training, its lock held
            assert ladder.poll() is None and time.time() < deadline, ladder.stdout.read().decode()
            time.sleep(0.05)
        children = psutil.Process(ladder.pid).children(recursive=True)
        ranks = [c for c in children if (line := c.cmdline())[line.index("-m") + 1] == "trainer"]
        assert len(ranks) == 2 and len(children) >= 4, [c.cmdline() for c in children]  # loom train, torchrun, ranks
        os.kill(ladder.pid, signal.SIGKILL)
        ladder.wait()
        _, alive = psutil.wait_procs(children, timeout=3)
        assert not alive, f"left running after the ladder was killed: {[c.cmdline() for c in alive]}"
    finally:
        for orphan in children:  # only before the fix: the test must not leave them training
            try:
                orphan.kill()
            except psutil.NoSuchProcess:
                pass
        if ladder.poll() is None:
            ladder.kill()
        ladder.stdout.close()
    status = run_loom("-w", ws, "status").stdout
    assert re.search(r"│ toy-r2 +│ toy-r2 +│ interrupted +│", status), status
    result = run_loom(*command[len(LOOM):])
    assert re.search(r"rung r2: (resumed at step|started)", result.stdout)
    assert re.search(r"^rung r2: finished \d+ steps in", result.stdout, re.M)  # its run's 60 and its cooldowns'


@pytest.mark.parametrize("change, message", [
    (lambda t: t.split("[[rung]]", 2)[0] + "[[rung]]" + t.split("[[rung]]", 2)[1] + t[t.index("[target]"):],
     r"at least 3 \[\[rung\]\]"),
    (lambda t: t.replace("n_heads = 2\ntokens = 6_144", "n_heads = 3\ntokens = 6_144"), "heads of even width"),
    (lambda t: t.replace("[target]", "[target]\nflops = 1e15"), "exactly one of them"),
    (lambda t: t.replace("[fit]", "[fit]\ninterval = \"jackknife\""), "use one of student-t, bootstrap"),
    (lambda t: t.replace("[train]", "[train]\nlr = 0.1"), "unknown key 'lr'"),
    (lambda t: t.replace("base = 1e-2", "base = -1"), "must be a finite number >= 0"),
    (lambda t: t.replace("base = 1e-2", "base = 0"), "`base` must be positive"),
    (lambda t: "cooldowns = [0.5, 1.5]\n" + t, r"^toy.toml: `cooldowns`: 1.5: each cooldown is a fraction"),
    (lambda t: "cooldowns = [0.5, 0.5]\n" + t, r"^toy.toml: `cooldowns`: 0.5,0.5 repeats a budget"),
    (lambda t: "cooldowns = 0.5\n" + t, r"^toy.toml: `cooldowns` = 0.5; give a list of fractions"),
    (lambda t: "decay_fraction = 1\n" + t, r"^toy.toml: `decay_fraction` = 1; give the share"),
    (lambda t: "cooldowns = [0.5]\n" + t, r"^toy.toml: \[fit\]: `l_inf` = 0.0 pins the power law of final points"),
    (lambda t: t.replace("[fit]", "[fit]\ninterval = \"auto\""), r"use one of student-t, bootstrap \(auto needs"),
])
def test_a_wrong_ladder_spec_is_one_clear_line(change, message):
    import tomllib

    with pytest.raises(UserError, match=message):
        parse_ladder_spec(tomllib.loads(change(TOY)), "toy.toml")


@pytest.mark.parametrize("change, message", [
    (lambda t: t.replace("[0.5, 0.75]", "[0.25, 0.75]"), r"^rung 'r0': its cooldown at 0.25 of 24 steps gets 6 "
                                                         "steps; at least 10 are needed: raise the smallest"),
    (lambda t: "decay_fraction = 0.95\n" + t, r"^rung 'r0': a cooldown at step 12 with decay fraction 0.95 branches "
                                              "before its warmup"),
])
def test_a_cooldown_too_short_is_refused_by_the_plan(change, message):
    import tomllib

    from mixtures.spec import parse_spec
    from sweeps.plan import plan_ladder

    spec = parse_ladder_spec(tomllib.loads(change(TOY_COOLDOWNS)), "toy.toml")
    with pytest.raises(UserError, match=message):
        plan_ladder(spec, "toy", parse_spec({"name": "toymix", **tomllib.loads(MIXTURE)}, "toymix"), 300)


def test_a_rung_too_small_for_ten_steps_is_refused_before_training(curated_slice, slice_tokenizer, tmp_path):
    ws = ladder_ws(curated_slice, slice_tokenizer, tmp_path)
    (tmp_path / "toy.toml").write_text(TOY_COOLDOWNS.replace("tokens = 6_144", "tokens = 1_000"))
    result = run_loom("-w", ws, "ladder", "toy", "--mixture", "toymix", "--spec", tmp_path / "toy.toml", check=False)
    assert result.returncode == 2 and "rung 'r0' gets 4 steps" in result.stderr
    assert not (ws / "runs").exists()


def test_without_a_spec_and_a_gpu_the_ladder_plans_the_cpu_preset_4_rungs_with_cooldowns(curated_slice, slice_tokenizer,
                                                                                         tmp_path):
    """A ladder named without --spec on a machine without a GPU takes the cpu preset: at least 4 rungs, each with
    cooldowns, whose points span at least 10x in compute; --dry-run trains nothing. The quick preset plans fewer,
    smaller rungs whose target is the cpu preset's largest rung. How well the presets predict their held-out point
    at their size is a measurement: bench/cpu_presets.py, figures in bench/README.md."""
    from base.workspace import Workspace
    from loom.cli.ladder import builtin_ladders
    from mixtures import load_spec
    from sweeps.ladder import plan
    from sweeps.spec import find_ladder_spec, load_ladder_spec

    ws = ladder_ws(curated_slice, slice_tokenizer, tmp_path)
    result = run_loom("-w", ws, "ladder", "cpu", "--mixture", "toymix", "--dry-run", env=NO_GPU)
    assert "Ladder cpu (cpu) on mixture toymix" in result.stdout
    rungs = re.findall(r"^│ (r\d+) ", result.stdout, re.MULTILINE)
    points, budgets = map(int, re.search(r"Points: (\d+) \(\d+ rungs x (\d+) budgets\)", result.stdout).groups())
    assert len(rungs) >= 4 and budgets >= 3 and points == len(rungs) * budgets, result.stdout
    assert not (ws / "runs").exists() and not (ws / "ladders" / "cpu" / "fit.json").exists()
    mixture = load_spec(ws / "mixtures" / "toymix.toml")
    cpu, quick = (plan(Workspace(ws), name, load_ladder_spec(find_ladder_spec(name, builtin_ladders())), mixture)
                  for name in ("cpu", "quick"))
    assert cpu.rungs[-1].flops / cpu.rungs[0].budgets[0].flops >= 10
    assert sum(len(r.budgets) for r in quick.rungs) >= 7 and quick.target.shape == cpu.rungs[-1].shape


@pytest.mark.parametrize("content", [b'name = "unclosed\n', b"\xff\xfe not text"])
def test_a_spec_file_that_is_not_toml_is_one_line(tmp_path, content):
    """The one reader of every TOML config (ladder, mixture and sources specs): base.small_files.read_toml."""
    from mixtures import load_spec
    from sweeps.spec import load_ladder_spec

    path = tmp_path / "spec.toml"
    path.write_bytes(content)
    for load in (load_ladder_spec, load_spec):
        with pytest.raises(UserError, match=r"spec.toml: not valid TOML \(.*\); fix the syntax"):
            load(path)



def test_gc_removes_what_a_removed_ladder_left_as_its_dry_run_lists(toy_ladder, tmp_path):
    """The marks a real ladder writes: its runs refused while it is there, and once its folder is removed, `loom
    gc --dry-run` lists exactly what `loom gc` removes: every rung's mixture and run (tests/cli/test_cleanup.py
    has the rest, on a workspace that trains nothing)."""
    ws = Path(shutil.copytree(toy_ladder[0], tmp_path / "ws", symlinks=True))
    runs = sorted(os.listdir(ws / "runs"))
    assert len(runs) == 9 and all(r.startswith("toy-r") for r in runs)  # every rung's run and its two cooldowns
    refused = run_loom("-w", ws, "runs", "rm", "toy-r0", check=False)
    assert refused.returncode == 2 and refused.stderr.startswith("error: run 'toy-r0' is needed by ladder 'toy'; ")
    shutil.rmtree(ws / "ladders" / "toy")
    listed = run_loom("-w", ws, "gc", "--dry-run").stdout
    done = run_loom("-w", ws, "gc").stdout
    assert listed.replace("would remove", "removed").splitlines()[:-1] == done.splitlines()[:-1], (listed, done)
    assert {line.split(" (")[0] for line in done.splitlines()[:-1]} == {
        *(f"removed mixtures/toy-{rung}/" for rung in ("r0", "r1", "r2")), *(f"removed runs/{run}/" for run in runs)}
    assert os.listdir(ws / "runs") == [] and (ws / "mixtures" / "toymix.toml").exists()
