"""docs/tutorial.md, run as written: every command of its ```console blocks (the `$ ` lines) and every ```bash
block, in order, in an empty folder, each output checked against the lines the page shows for it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO

TUTORIAL = REPO / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(console|bash)\n(.*?)^```$", re.M | re.S)
ELIDED = "..."


def tutorial_steps(markdown: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines the page shows for it), in page order; a bash block is one command."""
    steps = []
    for kind, body in BLOCK.findall(markdown):
        if kind == "bash":
            steps.append((body, []))
            continue
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
    return steps


def shown_line_pattern(line: str) -> re.Pattern:
    """A shown output line as a pattern for one printed line: `...` inside it stands for anything."""
    return re.compile(".*".join(re.escape(part) for part in line.rstrip().split(ELIDED)))


def assert_shows(command: str, shown: list[str], printed: str) -> None:
    """Every shown line (but `...` lines) is a printed line, in the same order; with no `...` anywhere the
    shown lines are the whole output."""
    lines = [line.rstrip() for line in printed.splitlines()]
    if shown and not any(ELIDED in line for line in shown):
        assert [s.rstrip() for s in shown] == lines, f"$ {command}\nprinted:\n{printed}"
        return
    at = 0
    for want in (s for s in shown if s.strip() != ELIDED):
        pattern = shown_line_pattern(want)
        found = next((i for i in range(at, len(lines)) if pattern.fullmatch(lines[i])), None)
        assert found is not None, f"$ {command}\nshould print (in order):\n{want}\nprinted:\n{printed}"
        at = found + 1


def test_the_extraction_finds_every_step_of_the_tutorial():
    commands = [command.split()[:3] for command, _ in tutorial_steps(TUTORIAL.read_text(encoding="utf-8"))]
    assert ["loom", "init"] in commands and ["loom", "train", "--mixture"] in commands
    assert sum(c[:2] == ["loom", "curate"] for c in commands) == 2


@pytest.mark.slow
def test_the_tutorial_runs_as_written(short_tmp_path):
    tmp_path = short_tmp_path
    env = {**os.environ, "LOOM_SRC": str(REPO), "COLUMNS": "160", "PYTHONPATH": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("LOOM_WORKSPACE", None)
    for command, shown in tutorial_steps(TUTORIAL.read_text(encoding="utf-8")):
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
        assert done.returncode == 0, f"$ {command}\nexit {done.returncode}:\n{done.stdout}"
        assert_shows(command, shown, done.stdout)
    assert (tmp_path / "loom-work" / "runs" / "first" / "metrics.jsonl").read_text().count("\n") >= 20
