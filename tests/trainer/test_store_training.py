"""`loom train` with the workspace on a real S3 server (SeaweedFS on loopback, tests/s3server.py). The curated
slice and a compiled mixture are built locally once and uploaded (the thing under test is training): trained
there == trained locally, stopped and resumed there == straight, killed -9 and rerun == straight, two ranks
through torchrun, and one line for each way the store refuses."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import LOOM, TINY_MODEL, copy_curated, run_loom, write_spec
from test_trainer import SPEC

from base.atomic_files import write_text
from base.store import as_path
from base.workspace import Workspace
from mixtures import compiled_mixtures
from mixtures.compiled import mixture_build
from trainer.metrics import INTERRUPTED, run_status

STEPS = ["--checkpoint-every", 4, "--eval-every", 4, "--report-every", 4, "--warmup-steps", 2]
SMALL = [*TINY_MODEL, *STEPS]
SAME = ("loss", "lr", "grad_norm", "loss_by_source", "grad_norm_by_group", "update_norm_by_group", "tokens_seen",
        "tokens_by_source")
LAST = "checkpoints/step-0000012"


def upload_workspace(local: Path, url: str) -> None:
    """What training reads (published.json, the generation, the tokenizer, the compiled mixtures) put on the store,
    with the `_SUCCESS` marker a generation, and a mixture's build, published on a store has."""
    target = as_path(url)
    for part in ("generations", "models", "mixtures"):
        target.fs.put(f"{local / part}/", f"{target.path}/{part}/", recursive=True)
    target.fs.put_file(str(local / "published.json"), f"{target.path}/published.json")
    gen = Workspace(target).generation(Workspace(local).published().id)
    write_text(gen.id + "\n", gen.success_marker)
    for name, build in compiled_mixtures(local / "mixtures").items():
        write_text(build.id + "\n", mixture_build(target / "mixtures" / name, build.id).success_marker)


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory, curated_slice, slice_tokenizer, s3_server):
    """A local workspace with tinymix compiled and trained straight for 12 steps (the reference), and its copy on S3."""
    local = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("storetrain") / "ws")
    write_spec(local, "tinymix", SPEC)
    run_loom("-w", local, "mix", "build", "tinymix")
    url = s3_server.url("ws-train")
    upload_workspace(local, url)
    train(local, "straight")
    return local, url


def train(ws, run: str, *args, **kwargs):
    return run_loom("-w", ws, "train", "--mixture", "tinymix", "--run-name", run, *SMALL, *args, **kwargs)


def run_folder(ws) -> object:
    return as_path(str(ws)) / "runs"


def metrics(ws, run: str) -> list[dict]:
    return [json.loads(line) for line in (run_folder(ws) / run / "metrics.jsonl").read_text().splitlines()]


def objects(url: str, run: str) -> list[str]:
    folder = run_folder(url) / run
    return sorted(name[len(folder.path) + 1:] for name in folder.fs.find(folder.path))


def assert_same_run(a: list[dict], b: list[dict]) -> None:
    assert [r["step"] for r in a] == [r["step"] for r in b] == list(range(12))  # each step once
    for key in SAME:
        assert [r[key] for r in a] == [r[key] for r in b], key
    assert a[-1]["val_loss_by_source"] == b[-1]["val_loss_by_source"]


def final_weights(ws, run: str) -> bytes:
    """Rank 0's part of the last checkpoint: every weight and optimizer moment of a one-rank run, as DCP wrote it."""
    return (run_folder(ws) / run / LAST / "__0_0.distcp").read_bytes()


@pytest.mark.slow  # three `loom train` runs besides the fixture's (~25 s each on 2 cores)
def test_training_on_s3_equals_training_locally_and_resumes_bitwise(workspaces, s3_server):
    local, url = workspaces
    result = train(url, "straight")
    assert f"Run report: {url}/runs/straight/report.html" in result.stdout
    assert_same_run(metrics(url, "straight"), metrics(local, "straight"))
    assert final_weights(url, "straight") == final_weights(local, "straight")
    # checkpoints at 4, 8 and 12: the oldest removed once a newer one committed, each with its state file; the
    # run's record of its inputs (trainer.recorded_inputs) on the store too
    assert objects(url, "straight") == [
        "checkpoints/step-0000008/.metadata", "checkpoints/step-0000008/__0_0.distcp",
        "checkpoints/step-0000008/trainer_state.json", f"{LAST}/.metadata", f"{LAST}/__0_0.distcp",
        f"{LAST}/trainer_state.json", "inputs.json", "metrics.jsonl", "report.html", "run.json"]
    assert json.loads((run_folder(url) / "straight" / "run.json").read_text())["status"] == "finished"
    assert not (as_path(url) / "locks" / "run-straight.lock").exists()
    assert s3_server.secret_key not in result.stdout + result.stderr

    train(url, "resumed", "--max-steps", 6)
    assert [r["step"] for r in metrics(url, "resumed")] == list(range(6))  # the store's copy, uploaded at the end
    resumed = train(url, "resumed", "--resume")
    assert "steps 6..12 of 12" in resumed.stdout  # from the checkpoint a stopped run writes at its last step
    assert_same_run(metrics(url, "resumed"), metrics(local, "straight"))
    assert final_weights(url, "resumed") == final_weights(local, "straight")


@pytest.mark.slow
def test_a_run_killed_9_on_s3_resumes_from_its_last_complete_checkpoint(workspaces):
    local, url = workspaces
    # a report (and an upload of metrics.jsonl) every step, so the run is still going when the first checkpoint lands
    args = [*LOOM, "-w", url, "train", "--mixture", "tinymix", "--run-name", "killed", *map(str, SMALL),
            "--report-every", "1"]
    job = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    checkpoints = run_folder(url) / "killed" / "checkpoints"
    deadline = time.monotonic() + 240
    while not (checkpoints / "step-0000004" / "trainer_state.json").exists():
        assert job.poll() is None and time.monotonic() < deadline, "training ended before its first checkpoint"
        time.sleep(0.05)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    assert not (checkpoints / "step-0000012" / "trainer_state.json").exists(), "killed too late to test anything"
    complete = sorted(p.parent.name for p in checkpoints.glob("step-*/trainer_state.json"))
    seen = [r["step"] for r in metrics(url, "killed")]
    assert seen == list(range(len(seen))) and len(seen) >= 4  # the store's copy holds every step before it
    # its lock object is left behind, naming a pid of this host that is gone
    assert run_status(run_folder(url) / "killed") == INTERRUPTED
    rerun = run_loom(*args[len(LOOM):-2], "--resume")
    assert "took over the lock of run 'killed'" in rerun.stdout
    assert f"steps {int(complete[-1].split('-')[1])}..12 of 12" in rerun.stdout
    assert_same_run(metrics(url, "killed"), metrics(local, "straight"))
    assert final_weights(url, "killed") == final_weights(local, "straight")


@pytest.mark.slow
def test_two_ranks_through_torchrun_train_on_s3(workspaces):
    local, url = workspaces
    train(url, "ranks", "--nproc", 2, "--max-steps", 4)
    straight = metrics(local, "straight")
    for a, b in zip(metrics(url, "ranks"), straight[:4], strict=True):  # not bitwise: two ranks sum in another order
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
    assert {"checkpoints/step-0000004/__0_0.distcp", "checkpoints/step-0000004/__1_0.distcp",
            "checkpoints/step-0000004/trainer_state.json"} <= set(objects(url, "ranks"))


def test_a_store_that_refuses_is_one_line(s3_server):
    missing = run_loom("-w", "s3://no-such-bucket/ws", "train", "--mixture", "tinymix", check=False)
    assert missing.returncode == 2
    assert missing.stderr.strip() == ("error: cannot use s3://no-such-bucket/ws: The specified bucket does not "
                                      "exist; create the bucket, or fix the URL")
    wrong_key = subprocess.run([*LOOM, "-w", s3_server.url("ws-empty"), "train", "--mixture", "tinymix"],
                               capture_output=True, text=True, timeout=300,
                               env={**os.environ, "AWS_SECRET_ACCESS_KEY": "not-the-secret"})
    lines = wrong_key.stderr.strip().splitlines()
    assert wrong_key.returncode == 2 and len(lines) == 1
    assert lines[0].startswith(f"error: cannot use {s3_server.url('ws-empty')}: access denied (")
    assert "AWS_SECRET_ACCESS_KEY" in lines[0] and s3_server.secret_key not in lines[0]
    no_mixture = run_loom("-w", s3_server.url("ws-empty"), "train", "--mixture", "tinymix", check=False)
    assert no_mixture.returncode == 2
    assert no_mixture.stderr.strip() == (f"error: mixture 'tinymix' is not compiled in {s3_server.url('ws-empty')}; "
                                         "run `loom mix build tinymix` first")
