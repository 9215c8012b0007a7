"""`loom ladder`: a 3-rung toy ladder on the curated slice, trained through the real `loom train`, its rungs'
budgets, FLOPs and simulated epoching checked against the trainer's and compiler's own figures, its fits written
and queryable; a killed ladder resumed (slow); a wrong spec refused in one line before any compute."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import compiled, LOOM, TOY_LADDER as TOY, copy_curated, run_loom, training_spec, write_spec
from base.errors import UserError
from sweeps.spec import parse_ladder_spec

MIXTURE = "max_epochs = 64\n" + training_spec(10)  # the training tests' slice mixture, allowed to repeat
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}  # torch sees no GPU: the default preset is cpu


def ladder_ws(curated_slice, slice_tokenizer, folder: Path) -> Path:
    ws = copy_curated(curated_slice, slice_tokenizer, folder / "ws")
    write_spec(ws, "toymix", MIXTURE)
    (folder / "toy.toml").write_text(TOY)
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


def test_a_toy_ladder_trains_every_rung_and_fits_them(toy_ladder):
    ws, result = toy_ladder
    fit = json.loads((ws / "ladders" / "toy" / "fit.json").read_text())
    assert [r["rung"] for r in fit["rungs"]] == ["r0", "r1", "r2"]
    assert all(r["status"] == "finished" and r["final"]["val_loss"] > 0 for r in fit["rungs"])
    losses = [r["final"]["val_loss"] for r in fit["rungs"]]
    assert losses[0] > losses[-1], f"more compute should lower the loss: {losses}"
    validation = fit["fits"]["val_loss"]
    assert validation["fit"]["n_points"] == 3 and validation["fit"]["alpha"] > 0
    held = validation["held_out"]
    assert held["rung"] == "r2" and held["measured"] == losses[2]
    assert held["relative_error"] == pytest.approx((held["predicted"] - held["measured"]) / held["measured"])
    assert validation["target"]["predicted"] < losses[2]  # the target has more compute than any rung
    sources = {k for k in fit["fits"] if k.startswith("source:")}
    assert sources == {"source:web", "source:docs", "source:code", "source:fortunes"}
    assert "Honesty check: fitted without rung r2" in result.stdout
    assert (ws / "ladders" / "toy" / "report.html").stat().st_size > 1000
    compare = ws / "reports" / "compare" / "ladder-toy.html"  # the rungs overlaid, linked from the ladder's page
    assert 'href="../../reports/compare/ladder-toy.html"' in (ws / "ladders" / "toy" / "report.html").read_text()
    assert all(f'>{r["run"]}</a>' in compare.read_text() for r in fit["rungs"])


def test_a_ladder_not_on_a_terminal_prints_plain_progress_lines(toy_ladder):
    _, result = toy_ladder
    assert re.search(r"^rung r\d: step \d+/(24|40|60) \(\d+%\), loss \d+\.\d{3}(, ETA \w+)?; ladder \d+% of FLOPs",
                     result.stdout, re.M), result.stdout
    for rung, steps in (("r0", 24), ("r1", 40), ("r2", 60)):
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
    from trainer.model import flops_per_token as trainer_flops

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


def test_the_ladder_view_of_loom_sql(toy_ladder):
    ws, _ = toy_ladder
    result = run_loom("-w", ws, "sql", "--format", "json",
                      "SELECT rung, flops, loss, held_out FROM ladder WHERE metric = 'val_loss' ORDER BY flops")
    rows = json.loads(result.stdout)
    assert [r["rung"] for r in rows] == ["r0", "r1", "r2"] and [r["held_out"] for r in rows] == [False, False, True]
    fit = json.loads((ws / "ladders" / "toy" / "fit.json").read_text())
    assert [r["loss"] for r in rows] == [r["final"]["val_loss"] for r in fit["rungs"]]


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


@pytest.mark.slow  # a second toy ladder, killed and resumed (~1 min)
def test_a_killed_ladder_resumes_only_its_unfinished_rungs(toy_ladder, curated_slice, slice_tokenizer, tmp_path):
    """SIGKILL to the whole process group (a closed terminal, a scheduler's kill) in the middle of the last rung;
    the rerun keeps r0 and r1, resumes r2 from its checkpoint, and ends where an unbroken ladder ends."""
    ws = ladder_ws(curated_slice, slice_tokenizer, tmp_path)
    command = [*LOOM, "-w", ws, "ladder", "toy", "--mixture", "toymix", "--spec", tmp_path / "toy.toml"]
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
    for ours, theirs in zip(resumed["rungs"], unbroken["rungs"]):
        assert ours["final"]["val_loss"] == pytest.approx(theirs["final"]["val_loss"], rel=1e-4), ours["rung"]


def test_a_ladder_killed_with_kill_9_takes_every_rung_process_with_it(toy_ladder, tmp_path):
    """kill -9 of the ladder alone (not its group) while a rung trains on 2 ranks: `loom train`, torchrun and both
    ranks end with it (base.procs), the rung reads `interrupted` in `loom status`, and the same ladder rerun at
    once goes on (no "in use by pid N"). `loom mix search` starts its runs through the same sweeps.runner._start. The
    trained toy ladder with its last rung taken away, so that only that rung trains (twice)."""
    import psutil

    ws = Path(shutil.copytree(toy_ladder[0], tmp_path / "ws"))
    shutil.rmtree(ws / "runs" / "toy-r2")
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
    assert "rung r2: finished 60 steps in" in result.stdout


@pytest.mark.parametrize("change, message", [
    (lambda t: t.split("[[rung]]", 2)[0] + "[[rung]]" + t.split("[[rung]]", 2)[1] + t[t.index("[target]"):],
     r"at least 3 \[\[rung\]\]"),
    (lambda t: t.replace("n_heads = 2\ntokens = 6_144", "n_heads = 3\ntokens = 6_144"), "heads of even width"),
    (lambda t: t.replace("[target]", "[target]\nflops = 1e15"), "exactly one of them"),
    (lambda t: t.replace("[fit]", "[fit]\ninterval = \"jackknife\""), "use one of student-t, bootstrap"),
    (lambda t: t.replace("[train]", "[train]\nlr = 0.1"), "unknown key 'lr'"),
    (lambda t: t.replace("base = 1e-2", "base = -1"), "must be a finite number >= 0"),
    (lambda t: t.replace("base = 1e-2", "base = 0"), "`base` must be positive"),
])
def test_a_wrong_ladder_spec_is_one_clear_line(change, message):
    import tomllib

    with pytest.raises(UserError, match=message):
        parse_ladder_spec(tomllib.loads(change(TOY)), "toy.toml")


def test_a_rung_too_small_for_ten_steps_is_refused_before_training(curated_slice, slice_tokenizer, tmp_path):
    ws = ladder_ws(curated_slice, slice_tokenizer, tmp_path)
    (tmp_path / "toy.toml").write_text(TOY.replace("tokens = 6_144", "tokens = 1_000"))
    result = run_loom("-w", ws, "ladder", "toy", "--mixture", "toymix", "--spec", tmp_path / "toy.toml", check=False)
    assert result.returncode == 2 and "rung 'r0' gets 4 steps" in result.stderr
    assert not (ws / "runs").exists()


def test_without_a_spec_and_a_gpu_the_ladder_plans_the_cpu_preset_4_rungs_over_10x(curated_slice, slice_tokenizer, tmp_path):
    """A ladder named without --spec on a machine without a GPU takes the cpu preset and plans at least 4 rungs at
    least 10x apart in compute; --dry-run trains nothing. How well the cpu preset predicts its held-out rung at its
    size is a measurement: bench/cpu_presets.py, figures in bench/README.md."""
    ws = ladder_ws(curated_slice, slice_tokenizer, tmp_path)
    result = run_loom("-w", ws, "ladder", "cpu", "--mixture", "toymix", "--dry-run", env=NO_GPU)
    assert "Ladder cpu (cpu) on mixture toymix" in result.stdout
    rungs = re.findall(r"^│ (r\d+) ", result.stdout, re.MULTILINE)
    span = float(re.search(r"rungs span ([\d.]+)x in compute", result.stdout).group(1))
    assert len(rungs) >= 4 and span >= 10, result.stdout
    assert not (ws / "runs").exists() and not (ws / "ladders" / "cpu" / "fit.json").exists()


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
    refused = run_loom("-w", ws, "runs", "rm", "toy-r0", check=False)
    assert refused.returncode == 2 and refused.stderr.startswith("error: run 'toy-r0' is needed by ladder 'toy'; ")
    shutil.rmtree(ws / "ladders" / "toy")
    listed = run_loom("-w", ws, "gc", "--dry-run").stdout
    done = run_loom("-w", ws, "gc").stdout
    assert listed.replace("would remove", "removed").splitlines()[:-1] == done.splitlines()[:-1], (listed, done)
    assert {line.split(" (")[0] for line in done.splitlines()[:-1]} == {
        f"removed {kind}/toy-{rung}/" for kind in ("mixtures", "runs") for rung in ("r0", "r1", "r2")}
    assert os.listdir(ws / "runs") == [] and (ws / "mixtures" / "toymix.toml").exists()
