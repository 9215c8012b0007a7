"""`loom mix rm`, `loom runs rm` and `loom gc` on the curated slice with one compiled mixture, a ladder's and a
search's mixtures and runs beside it (copies of it, marked as sweeps.compiling marks them; the runs are folders
with a run.json: removing one trains nothing): a held lock refused even with --force, a sweep's claim only without
it, a run's cooldown runs removed with it, a link removed as a link, and, after the sweeps' folders are removed and
the data is curated again, `loom gc --dry-run` listing exactly what `loom gc` removes. The same after a real toy
ladder: tests/sweeps/test_ladder.py (slow)."""

import json
import shutil
from pathlib import Path

import pytest

import loom
from base.errors import UserError
from base.lock import exclusive
from base.workspace import Workspace
from helpers import copy_curated, run_loom, training_spec, write_spec
from sweeps.ownership import mark


@pytest.fixture
def cleanup_ws(curated_slice, slice_tokenizer, tmp_path) -> Path:
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws")
    write_spec(ws, "mine", training_spec(4))
    loom.open(ws).mixtures.build("mine")
    (ws / "ladders" / "toy").mkdir(parents=True)
    (ws / "ladders" / "toy" / "ladder.toml").write_text('[[rung]]\nname = "r0"\n\n[[rung]]\nname = "r1"\n')
    (ws / "searches" / "s").mkdir(parents=True)
    (ws / "searches" / "s" / "search.toml").write_text('[[design]]\nname = "p01"\n')
    for sweep, kind, names in (("toy", "ladder", ("toy-r0", "toy-r1")), ("s", "search", ("s-p01",))):
        for name in names:
            shutil.copytree(ws / "mixtures" / "mine", ws / "mixtures" / name)
            (ws / "runs" / name).mkdir(parents=True)
            (ws / "runs" / name / "run.json").write_text(json.dumps({"run": name, "mixture": name}))
        mark(Workspace(ws), kind, sweep, names)
    cooldown = ws / "runs" / "toy-r0-cooldown-2"
    cooldown.mkdir()
    (cooldown / "run.json").write_text(json.dumps({"run": cooldown.name, "branch": {"run": "toy-r0", "step": 1}}))
    return ws


def test_a_held_lock_is_refused_even_with_force_and_a_sweep_s_claim_only_without(cleanup_ws, tmp_path):
    ws, api = cleanup_ws, loom.open(cleanup_ws)
    result = run_loom("-w", ws, "mix", "rm", "s-p01", check=False)
    assert result.returncode == 2 and result.stderr.startswith("error: mixture 's-p01' is needed by search 's'; ")
    assert len(result.stderr.splitlines()) == 1
    with pytest.raises(UserError, match="^run 'toy-r1' is needed by ladder 'toy'; "):
        api.remove_run("toy-r1")
    with held(ws, "run-toy-r1"), pytest.raises(UserError, match="^run 'toy-r1' is in use by pid "):
        api.remove_run("toy-r1", force=True)
    with held(ws, "mixture-toy-r1"), pytest.raises(UserError, match="^mixture 'toy-r1' is in use by pid "):
        api.remove_mixture("toy-r1", force=True)
    from mixtures import reading

    with reading(ws / "mixtures" / "mine"), pytest.raises(UserError, match="^mixture 'mine' is being read "):
        api.remove_mixture("mine", force=True)  # a reader's shared readers.lock of its build
    with held(ws, "run-toy-r0-cooldown-2"), pytest.raises(UserError, match="^run 'toy-r0-cooldown-2' is in use"):
        api.remove_run("toy-r0", force=True)  # its cooldown run goes with it, and is being trained
    assert (ws / "runs" / "toy-r0").is_dir() and (ws / "mixtures" / "mine").is_dir()

    shutil.rmtree(ws / "ladders" / "toy")
    with pytest.raises(UserError, match=r"^run 'toy-r0' has cooldown runs \(toy-r0-cooldown-2\), which go with it; "):
        api.remove_run("toy-r0")
    listed = api.remove_run("toy-r0", force=True, dry_run=True)
    assert [r.path.name for r in listed.removals] == ["toy-r0", "toy-r0-cooldown-2"]
    assert (ws / "runs" / "toy-r0").is_dir()
    assert [r.path for r in api.remove_run("toy-r0", force=True).removals] == [r.path for r in listed.removals]
    assert not (ws / "runs" / "toy-r0").exists() and not (ws / "runs" / "toy-r0-cooldown-2").exists()
    removed = run_loom("-w", ws, "mix", "rm", "mine").stdout.splitlines()
    assert removed[0].startswith("removed mixtures/mine/ (") and removed[1].startswith("removed mixtures/mine.toml (")
    assert removed[-1].startswith("Freed ") and not (ws / "mixtures" / "mine.toml").exists()

    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep.txt").write_text("not the workspace's")
    (ws / "runs" / "linked").symlink_to(tmp_path / "outside")
    assert [r.bytes for r in api.remove_run("linked").removals] == [0]  # the link goes, not what it points to
    assert (tmp_path / "outside" / "keep.txt").exists() and not (ws / "runs" / "linked").is_symlink()


def test_gc_s_dry_run_lists_exactly_what_gc_then_removes(cleanup_ws):
    from mixtures import reading

    ws, api = cleanup_ws, loom.open(cleanup_ws)
    with reading(ws / "mixtures" / "mine") as old:  # read while rebuilt: the rebuild leaves the old build
        api.mixtures.build("mine", steps=5)
    listed = api.gc(dry_run=True)  # no reader holds it now
    assert [(r.path, r.what) for r in listed.removals] == [(old.root, "old build of mixture 'mine'")]
    assert api.gc().removals == listed.removals and not old.root.exists() and api.gc(dry_run=True).removals == []
    published = json.loads((ws / "published.json").read_text())  # the data curated again: a new generation
    shutil.copytree(ws / "generations" / published["generation"], ws / "generations" / "g-again")
    (ws / "published.json").write_text(json.dumps({**published, "generation": "g-again"}))
    (ws / "runs" / "toy-r1" / ".run.json.tmp-999999999").write_text("a killed writer's")
    (ws / "mixtures" / ".mine.toml.tmp-999999999").write_text("a killed writer's")
    before = run_loom("-w", ws, "gc", "--dry-run").stdout  # the ladder and the search are still there
    assert "would remove mixtures/mine/ (" in before
    assert "kept mixtures/toy-r1/: stale, but ladder 'toy' needs it" in before
    assert "would remove mixtures/toy-" not in before and "would remove runs/toy-r1/ (" not in before
    shutil.rmtree(ws / "ladders" / "toy")
    shutil.rmtree(ws / "searches" / "s")
    listed = run_loom("-w", ws, "gc", "--dry-run").stdout
    with held(ws, "run-toy-r1"):  # kept, and said which process holds it
        training = api.gc(dry_run=True)
    assert len(training.kept) == 1 and training.kept[0].startswith("runs/toy-r1/: run 'toy-r1' is in use by pid ")
    assert ws / "runs" / "toy-r1" not in [r.path for r in training.removals]
    done = run_loom("-w", ws, "gc").stdout
    assert listed.replace("would remove", "removed").splitlines()[:-1] == done.splitlines()[:-1], (listed, done)
    removed = sorted(line.split(" (")[0].removeprefix("removed ") for line in done.splitlines()[:-1])
    assert set(removed) == {"mixtures/.mine.toml.tmp-999999999", "mixtures/mine/", "mixtures/s-p01/",
                            "mixtures/toy-r0/", "mixtures/toy-r1/", "runs/s-p01/", "runs/toy-r0/",
                            "runs/toy-r0-cooldown-2/", "runs/toy-r1/"}, done
    assert done.splitlines()[-1].startswith("Freed ") and (ws / "mixtures" / "mine.toml").exists()
    assert run_loom("-w", ws, "gc").stdout.strip() == "Nothing to remove"



def held(ws: Path, target: str):
    """The lock of `target` taken by this process, as a live writer would."""
    return exclusive(ws / "locks" / f"{target}.lock", target)
