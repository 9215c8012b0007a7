"""What a newcomer meets first: `loom --version`, `loom init`, `-w` after the command as before it, a Ctrl-C while
the command is still being imported, and the message of a path that matches nothing."""

import re
import subprocess
import sys

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from curation.config import SourceConfig, load_config
from curation.readers import reader_for
from curation.readers.inputs import source_inputs
from helpers import EXAMPLES, REPO, as_in_a_terminal, run_loom
from base.errors import EXIT_INTERRUPTED, INTERRUPTED, UserError


def test_version_names_the_package_version_and_the_checkout_commit():
    line = run_loom("--version").stdout.strip()
    assert re.fullmatch(r"loom \d+\.\d+\.\d+(\S*)( \(git [0-9a-f]{7,}( \+ changes)? in .+\))?", line), line
    if (REPO / ".git").exists():
        commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        assert f"(git {commit.stdout.strip()}" in line and str(REPO) in line


def test_every_command_takes_the_workspace_after_its_name():
    from loom.cli.commands import cli

    def commands(group, prefix):
        for name, command in group.commands.items():
            yield f"{prefix} {name}", command
            yield from commands(command, f"{prefix} {name}") if hasattr(command, "commands") else ()

    without = [name for name, command in commands(cli, "loom")
               if not any("-w" in p.opts and "--workspace" in p.opts for p in command.params)]
    assert not without, f"no -w/--workspace: {without}"


def test_the_workspace_after_the_command_is_the_one_used(tmp_path):
    ws, other = tmp_path / "ws", tmp_path / "other"
    run_loom("init", "-w", ws)
    assert (ws / "sources.toml").is_file()
    assert f"Workspace {ws}\n" in run_loom("-w", other, "status", "--workspace", ws).stdout  # the last one given
    # curation reads that workspace: its missing tokenizer stops it (before any cluster starts)
    curate = run_loom("curate", "-w", ws, check=False)
    assert curate.returncode == 2 and f"no tokenizer at {ws / 'models' / 'tokenizer.json'}" in curate.stderr


def test_curate_where_there_is_no_workspace_says_so_and_leaves_nothing_behind(tmp_path):
    curate = run_loom("curate", check=False, cwd=tmp_path, env={"LOOM_WORKSPACE": ""})
    assert curate.returncode == 2
    assert curate.stderr == (f"error: no workspace at {tmp_path / 'loom-work'} (no sources.toml): run `loom init` to "
                             "create a workspace here, or pass --sources FILE\n")
    assert list(tmp_path.iterdir()) == []
    named = run_loom("curate", "--sources", "mine.toml", check=False, cwd=tmp_path, env={"LOOM_WORKSPACE": ""})
    assert named.returncode == 2 and named.stderr.startswith("error: no sources file at mine.toml")  # its own line


def test_a_store_is_checked_once_the_command_has_its_last_workspace(tmp_path):
    refused = run_loom("quality", "train", "-w", "s3://bucket/ws", check=False)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: `loom quality` cannot use a workspace on object storage yet")
    local = run_loom("status", "-w", tmp_path, env={"LOOM_WORKSPACE": "s3://no-such-bucket/ws"})
    assert f"Workspace {tmp_path}" in local.stdout


def test_init_writes_a_sources_toml_that_curation_reads(tmp_path):
    ws = tmp_path / "new ws"
    result = run_loom("-w", ws, "init")
    assert (ws / "models").is_dir() and (ws / "mixtures").is_dir()
    assert f"loom -w '{ws}' tokenizer train" in result.stdout  # the next commands, naming this workspace
    (source,) = load_config(ws / "sources.toml").sources
    inputs = [path for path, _ in source_inputs(source, reader_for(source.format))]
    assert inputs == sorted(str(p) for p in (EXAMPLES / "corpora" / "docs").glob("*.jsonl.gz")) and inputs

    again = run_loom("-w", ws, "init", check=False)
    assert again.returncode == 2
    assert again.stderr == (f"error: {ws / 'sources.toml'} exists: this workspace is set up already; edit it, or "
                            "give another folder with `loom init -w DIR`\n")


def test_init_copies_a_tokenizer_it_can_curate_with_and_refuses_one_it_cannot(tmp_path):
    good = tmp_path / "tokenizer.json"
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel()
    tokenizer.train_from_iterator(["a tiny corpus"] * 10, trainers.BpeTrainer(special_tokens=["<|endoftext|>"]))
    tokenizer.save(str(good))
    bad = tmp_path / "bad.json"
    bad.write_text("{}")

    refused = run_loom("-w", tmp_path / "ws1", "init", "--tokenizer", bad, check=False)
    assert refused.returncode == 2 and "is not a tokenizer.json" in refused.stderr
    assert not (tmp_path / "ws1" / "sources.toml").exists()  # nothing written
    run_loom("-w", tmp_path / "ws2", "init", "--tokenizer", good)
    assert (tmp_path / "ws2" / "models" / "tokenizer.json").read_bytes() == good.read_bytes()


def test_a_ctrl_c_while_the_command_is_imported_is_one_line_and_exit_130():
    """A real SIGINT to a real process, sent while `loom`'s entry point imports the commands' modules."""
    script = """
import os, signal, sys

class SigintOnImport:  # a Ctrl-C that lands while Python imports loom.cli.curate (heavy imports: rich, click, ...)
    def find_spec(self, name, path=None, target=None):
        if name == "loom.cli.curate":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, SigintOnImport())
from loom.cli import main
main(["status"])
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60,
                            preexec_fn=as_in_a_terminal)
    assert (result.returncode, result.stderr, result.stdout) == (EXIT_INTERRUPTED, INTERRUPTED + "\n", "")


@pytest.mark.parametrize("relative", [True, False])
def test_a_path_that_matches_nothing_says_where_it_looked_only_when_relative(tmp_path, relative):
    pattern = "missing/*.jsonl" if relative else str(tmp_path / "missing" / "*.jsonl")
    source = SourceConfig(name="web", format="jsonl", paths=(pattern,), base_dir=str(tmp_path))
    with pytest.raises(UserError) as err:
        source_inputs(source, reader_for(source.format))
    assert f"path '{pattern}' matches no file" in str(err.value)
    assert (f"(looked in {tmp_path})" in str(err.value)) == relative
