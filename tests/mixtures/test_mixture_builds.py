"""A compiled mixture published as immutable builds (mixtures.builds): what a rebuild leaves a reader, and `loom
train` started while `loom mix build` rebuilds the same mixture, with real processes."""

import json
import threading

import pytest

from helpers import TINY_MODEL, copy_curated, run_loom, training_spec, write_spec
from base.errors import UserError
from mixtures import current_build, reading, schedule_fingerprint
from mixtures.builds import publish_build
from mixtures.compiled import CURRENT_FILE, SCHEDULE_FILE, SPEC_FILE


def writer(steps: int):
    """A stand-in compile: a schedule.json and one sequence file, as real files."""
    def write(root):
        root.mkdir(parents=True)
        meta = {"name": "m", "steps": steps}
        (root / SCHEDULE_FILE).write_text(json.dumps(meta))
        (root / "sequences").mkdir()
        (root / "sequences" / "component-000.parquet").write_bytes(bytes(steps))
        return meta
    return write


def files_of(root) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_a_rebuild_publishes_a_new_build_and_leaves_a_held_one_as_it_was(tmp_path):
    folder = tmp_path / "mixtures" / "m"
    first, _ = publish_build(folder, writer(10))
    assert current_build(folder) == first and first.root.parent == folder / "builds"
    before = files_of(first.root)
    with reading(folder) as held:
        assert held == first
        second, _ = publish_build(folder, writer(20))
        third, _ = publish_build(folder, writer(30))
        assert json.loads((folder / CURRENT_FILE).read_text())["build"] == third.id == current_build(folder).id
        assert files_of(first.root) == before  # held: kept, not a byte or a time changed
        assert not second.root.exists()  # no reader held it
    publish_build(folder, writer(40))
    assert not first.root.exists()  # let go: removed by the next build
    assert sorted(p.name for p in (folder / "builds").iterdir()) == [current_build(folder).id]


def test_a_rebuild_of_the_same_schedule_keeps_the_current_build(tmp_path):
    folder = tmp_path / "mixtures" / "m"
    first, meta = publish_build(folder, writer(10))
    again, same = publish_build(folder, writer(10))
    assert again == first == current_build(folder) and schedule_fingerprint(same) == schedule_fingerprint(meta)
    assert [p.name for p in (folder / "builds").iterdir()] == [first.id]


def test_a_folder_compiled_before_builds_is_read_as_it_is_until_rebuilt(tmp_path):
    folder = tmp_path / "mixtures" / "m"
    writer(10)(folder)
    with reading(folder) as build:
        assert build.id == "" and build.root == folder and json.loads(build.schedule.read_text())["steps"] == 10
    new, _ = publish_build(folder, writer(20))
    assert current_build(folder) == new and not (folder / SCHEDULE_FILE).exists() and not (folder / "sequences").exists()


def test_a_folder_compiled_before_builds_is_kept_while_a_reader_holds_it(tmp_path):
    folder = tmp_path / "mixtures" / "m"
    writer(10)(folder)
    with reading(folder) as old:
        publish_build(folder, writer(20))
        assert json.loads(old.schedule.read_text())["steps"] == 10  # its files are still there
        assert (folder / "sequences" / "component-000.parquet").exists()
    publish_build(folder, writer(30))
    assert not (folder / SCHEDULE_FILE).exists() and not (folder / "sequences").exists()


def test_a_build_without_its_readers_lock_is_read_and_a_missing_build_is_one_line(tmp_path):
    """A build copied from a store has no readers.lock: it is made. A pointer to a build that is not there is one
    line, not a reader resolving it for ever."""
    folder = tmp_path / "mixtures" / "m"
    build, _ = publish_build(folder, writer(10))
    build.readers_lock.unlink()
    with reading(folder) as held:
        assert held == build and build.readers_lock.exists()
    (folder / CURRENT_FILE).write_text(json.dumps({"build": "b-gone"}))
    with pytest.raises(UserError, match="names build b-gone, which is missing; run `loom mix build m` again"):
        with reading(folder):
            pass


def test_a_rebuild_of_the_same_schedule_from_another_spec_is_a_new_build(tmp_path):
    """What a sweep compares its spec with is the build's mixture.toml: a spec setting that binds nothing
    (max_epochs looser) still publishes it."""
    folder = tmp_path / "mixtures" / "m"

    def with_spec(text):
        def write(root):
            meta = writer(10)(root)
            (root / SPEC_FILE).write_text(text)
            return meta
        return write
    first, _ = publish_build(folder, with_spec("max_epochs = 4\n"))
    second, _ = publish_build(folder, with_spec("max_epochs = 8\n"))
    assert second != first and current_build(folder) == second and second.spec.read_text() == "max_epochs = 8\n"


def test_a_refused_build_leaves_nothing(tmp_path):
    folder = tmp_path / "mixtures" / "m"

    def refused(root):
        writer(10)(root)
        raise ValueError("refused")
    try:
        publish_build(folder, refused)
    except ValueError:
        pass
    assert current_build(folder) is None and list((folder / "builds").iterdir()) == []


# ---- real processes ----------------------------------------------------------------------------------------

VARIANTS = [training_spec(12), training_spec(12).replace("seq_len = 32", "seq_len = 24").replace("web = 0.3", "web = 0.6")]


@pytest.mark.slow  # a loop of rebuilds while trainings start (~30 s)
def test_trains_started_during_rebuilds_each_read_one_build_whole(curated_slice, slice_tokenizer, tmp_path):
    """`loom mix build` rebuilds the mixture over and over (two specs in turn: other sequence lengths, other
    shares) while `loom train` runs start: each run trains on one build that existed, whole, or is refused in
    one line; never a traceback."""
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws")
    builds = {}  # id -> schedule.json of every build published
    write_spec(ws, "race", VARIANTS[0])
    run_loom("-w", ws, "mix", "build", "race")
    builds[current_build(ws / "mixtures" / "race").id] = json.loads(current_build(ws / "mixtures" / "race").schedule.read_text())
    stop, rebuilt = threading.Event(), []

    def rebuild():
        turn = 1
        while not stop.is_set():
            write_spec(ws, "race", VARIANTS[turn % 2])
            run_loom("-w", ws, "mix", "build", "race")
            build = current_build(ws / "mixtures" / "race")  # this thread is its only writer: still current
            builds[build.id] = json.loads(build.schedule.read_text())
            rebuilt.append(build.id)
            turn += 1

    rebuilding = threading.Thread(target=rebuild)
    rebuilding.start()
    trained, statuses = [], []
    try:
        for i in range(3):
            trained.append(run_loom("-w", ws, "train", "--mixture", "race", "--run-name", f"r{i}", *TINY_MODEL,
                                    "--max-steps", 2, "--eval-every", 1, "--checkpoint-every", 100, check=False))
            statuses += [run_loom("-w", ws, "status", check=False) for _ in range(3)]  # short readers race too
    finally:
        stop.set()
        rebuilding.join()
    assert len(rebuilt) >= 2, "the mixture was rebuilt during the trains"
    for status in statuses:
        assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    assert any(result.returncode == 0 for result in trained), "no train ran: the race was not tried"
    for i, result in enumerate(trained):
        assert "Traceback" not in result.stderr, result.stderr
        if result.returncode:
            assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
            continue
        run = json.loads((ws / "runs" / f"r{i}" / "run.json").read_text())
        assert run["status"] == "stopped" and run["build"] in builds
        meta = builds[run["build"]]
        assert run["schedule_fingerprint"] == schedule_fingerprint(meta) and run["seq_len"] == meta["seq_len"]
