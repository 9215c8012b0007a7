"""`loom status`, `loom mix list` and `loom report open` on a curated workspace: what is curated, whether
sources.toml changed since, which mixtures are current or stale (a mixture built from a path too), runs, and a
page not written yet suggesting a command that writes it."""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from curation.manifest import source_summary
from helpers import LOOM, TINY_MODEL, compiled, copy_curated, run_loom, training_spec, write_spec
from base.workspace import Workspace


@pytest.fixture(scope="module")
def built_ws(tmp_path_factory, curated_slice, slice_tokenizer, slice_sources) -> Path:
    """The curated slice with its sources.toml, `tinymix` built from the workspace's spec and `pathmix` from a
    path, and a short run on tinymix."""
    tmp_path = tmp_path_factory.mktemp("status")
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path / "ws")
    text = slice_sources.read_text(encoding="utf-8")
    (ws / "sources.toml").write_text(f'root = "{slice_sources.parent}"\n{text}', encoding="utf-8")
    os.utime(ws / "sources.toml", (1, 1))  # written before the curation was published
    write_spec(ws, "tinymix", training_spec(4))
    elsewhere = tmp_path / "specs" / "pathmix.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(f'name = "pathmix"\n{training_spec(4)}')
    run_loom("-w", ws, "mix", "build", "tinymix")
    run_loom("-w", ws, "mix", "build", elsewhere)
    run_loom("-w", ws, "train", "--mixture", "tinymix", "--run-name", "first", *TINY_MODEL, "--eval-every", 2)
    return ws


@pytest.fixture
def ws(built_ws, tmp_path) -> Path:
    """A copy of it for a test that changes it (modification times kept)."""
    return Path(shutil.copytree(built_ws, tmp_path / "ws"))


def publish_again(ws: Path) -> str:
    """The same curated data published as a new generation: what a re-curation leaves the mixtures on."""
    generation = Workspace(ws).published().id
    shutil.copytree(ws / "generations" / generation, ws / "generations" / "g-newer")
    (ws / "published.json").write_text(json.dumps({"generation": "g-newer", "published": time.time()}))
    return "g-newer"


def test_status_says_what_is_curated_compiled_and_trained_and_what_is_stale(ws):
    out = run_loom("status", "-w", ws).stdout
    gen = Workspace(ws).published()
    assert f"Curated data: generation {gen.id}, published " in out
    for row in source_summary(gen):
        cells = (row["source"], f"{row['docs_in']:,}", f"{row['kept']:,}", f"{row['tokens']:,}")
        assert re.search("│ " + " +│ +".join(cells) + " │", out), row
    assert "sources.toml: the same sources, not modified since this curation" in out
    assert re.search(r"│ tinymix +│ current +│", out) and re.search(r"│ pathmix +│ current +│", out)
    assert re.search(r"│ first +│ tinymix +│ finished +│ +4 of 4 │", out)
    assert "Ladders and searches: none yet" in out

    sources = ws / "sources.toml"
    sources.write_text(sources.read_text().replace('name = "code"', 'name = "code2"'))
    publish_again(ws)
    out = run_loom("status", "-w", ws).stdout
    assert "sources.toml changed since this curation (adds code2; drops code)" in out
    assert re.search(r"│ tinymix +│ stale \(curated since\) +│", out)


def test_status_of_a_touched_sources_toml_says_it_was_modified_after(ws):
    (ws / "sources.toml").touch()
    assert "sources.toml was modified after this curation" in run_loom("status", "-w", ws).stdout



def test_a_rebuild_that_changes_the_schedule_names_the_runs_it_orphans_and_status_says_so(ws):
    write_spec(ws, "tinymix", training_spec(6))
    rebuilt = run_loom("-w", ws, "mix", "build", "tinymix", env={"COLUMNS": "300"}).stdout
    assert "runs first trained on the build of mixture 'tinymix' this one replaces" in rebuilt
    assert re.search(r"│ first +│ tinymix +│ finished \(the mixture was rebuilt since: not resumable\) +│",
                     run_loom("status", "-w", ws, env={"COLUMNS": "300"}).stdout)
    again = run_loom("-w", ws, "mix", "build", "tinymix").stdout
    assert "runs first" not in again  # the same schedule again: nothing is orphaned by it

def test_a_run_killed_with_kill_9_reads_interrupted_where_its_status_is_shown(ws):
    """A `loom train` killed with SIGKILL (no handler runs) leaves run.json saying running; every reader shows it
    `interrupted`, from its lock no process holds, and writes nothing; the finished run stays `finished`."""
    write_spec(ws, "longmix", "max_epochs = 64\n" + training_spec(400))  # a run that is still training when killed
    run_loom("-w", ws, "mix", "build", "longmix")
    run_file = ws / "runs" / "killed" / "run.json"
    command = [*LOOM, "-w", ws, "train", "--mixture", "longmix", "--run-name", "killed", *TINY_MODEL]
    train = subprocess.Popen([*map(str, command)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not (run_file.exists() and json.loads(run_file.read_text())["status"] == "running"):
            assert train.poll() is None and time.time() < deadline
            time.sleep(0.02)
    finally:
        train.kill()
        train.wait()
    out = run_loom("status", "-w", ws).stdout
    assert re.search(r"│ killed +│ longmix +│ interrupted +│", out)
    assert re.search(r"│ first +│ tinymix +│ finished +│", out)
    run_loom("report", "run", "killed", "-w", ws)
    page = (run_file.parent / "report.html").read_text()
    assert "interrupted</b>" in page and 'http-equiv="refresh"' not in page  # it does not reload for ever
    run_loom("report", "-w", ws)
    assert "<td>interrupted</td>" in (ws / "index.html").read_text()
    assert json.loads(run_file.read_text())["status"] == "running"  # readers write nothing


def test_status_of_a_missing_or_empty_workspace_says_what_to_run_first(tmp_path):
    missing = run_loom("status", "-w", tmp_path / "none")
    assert missing.stdout == (f"No workspace at {tmp_path / 'none'} yet: `loom init` starts one (or `loom quickstart` "
                              "curates the bundled sample corpora)\n")
    out = run_loom("status", "-w", tmp_path).stdout
    assert "Nothing curated yet: `loom init` writes a starter sources.toml" in out and "Runs: none yet" in out


def test_mix_list_shows_mixtures_built_from_a_path_and_the_stale_ones(ws):
    listed = run_loom("mix", "list", "-w", ws).stdout
    resolved_spec = re.escape(str(compiled(ws, "pathmix").relative_to(ws) / "mixture.toml"))
    assert re.search(rf"│ pathmix +│ {resolved_spec} +│ yes +│", listed), listed
    assert re.search(r"│ sample +│ .+sample\.toml +│ no +│", listed)
    publish_again(ws)
    listed = run_loom("mix", "list", "-w", ws).stdout
    assert re.search(r"│ tinymix +│ .+ +│ stale \(curated since\) +│", listed)
    assert re.search(r"│ pathmix +│ .+ +│ stale \(curated since\) +│", listed)


@pytest.mark.parametrize("kind, name", [("run", "first"), ("mixture", "tinymix")])
def test_report_open_of_a_page_not_written_suggests_commands_that_work(ws, kind, name):
    folder = ws / ("runs" if kind == "run" else "mixtures") / name
    (folder / "report.html").unlink()
    missing = run_loom("report", "open", name, "-w", ws, check=False)
    write = f"loom -w {ws} report {kind} {name}"
    assert missing.returncode == 2 and missing.stderr == (f"error: {kind} '{name}' has no page yet: write it with "
                                                          f"`{write}`, then `loom -w {ws} report open {name}`\n")
    run_loom(*write.split()[1:])
    assert run_loom("-w", ws, "report", "open", name).stdout == f"{folder / 'report.html'}\n"
