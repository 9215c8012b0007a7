"""README.md's "From Python" block and docs/api.md's examples, run as written in a folder whose `loom-work` is
the docs pages' workspace (the curated slice, its tokenizer and a `sample` mixture of its sources:
tests/test_docs_pages.py). The README's results are checked against the CLI's on the same workspace: the funnel
against `loom curate --limit`'s, the query's rows against `loom sql --format json`'s, the build's plan against the
plan.parquet `loom mix build` writes, the run's last loss against its metrics.jsonl."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from helpers import REPO, compiled, run_loom
from test_docs_pages import docs_workspace

# each example curates a sample and trains a few steps (~25 s apiece); tests/api/ covers the API by default
pytestmark = pytest.mark.slow

PYTHON_BLOCK = re.compile(r"^## From Python\n.*?^```python\n(.*?)^```$", re.M | re.S)
PYTHON_BLOCKS = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)
RESULTS = """
if __name__ == "__main__":
    import json as _json
    _json.dump({"funnel": funnel, "fates": fates.to_pylist(), "plan": build.plan, "build": build.id,
                "run": str(run.folder), "loss": run.metrics["loss"]}, open("results.json", "w"), default=str)
"""  # what the block computed, for the comparison (its own prints are for the reader)


def readme_block() -> str:
    found = PYTHON_BLOCK.search((REPO / "README.md").read_text(encoding="utf-8"))
    assert found, "README.md has no ```python block under `## From Python`"
    return found.group(1)


def funnel_rows(printed: str) -> dict[str, list[int]]:
    """The CLI funnel's counts per source (docs in ... tokens, not the kept share), read from its table's first line
    of each row."""
    rows = {}
    for line in printed.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")] if line.startswith("│") else []
        if len(cells) > 2 and cells[0] and cells[1].replace(",", "").isdigit():
            rows[cells[0]] = [int(cell.replace(",", "")) for cell in cells[1:-1] if not cell.endswith("%")]
    return rows


def run_python(code: str, folder: Path) -> subprocess.CompletedProcess:
    """`code` run as a script file in `folder` (as a user runs it: Dask's workers import it)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LOOM_WORKSPACE", None)
    script = folder / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, script.name], cwd=folder, env=env, text=True, capture_output=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def docs_folder(tmp_path_factory, curated_slice, slice_tokenizer, slice_sources) -> Path:
    """A folder whose loom-work is the docs pages' workspace, shared by the README's and the API page's examples
    (each curates a sample of its own first)."""
    folder = tmp_path_factory.mktemp("python")
    docs_workspace(folder, curated_slice, slice_tokenizer, slice_sources)
    return folder


def test_the_readme_python_example_runs_and_equals_the_cli(docs_folder):
    folder, ws = docs_folder, docs_folder / "loom-work"
    done = run_python(readme_block() + RESULTS, folder)
    assert done.stdout and "note:" not in done.stdout  # the block prints what it prints, and Loom nothing
    got = json.loads((folder / "results.json").read_text())

    limit = re.search(r"ws\.curate\(limit=(\d+)\)", readme_block()).group(1)
    assert max(row["docs_in"] for row in got["funnel"]) == int(limit)  # the sample is smaller than the slice
    cli = run_loom("-w", ws, "curate", "--limit", limit, "--workers", 2)
    counts = ("docs_in", "malformed", "filtered", "duplicate", "low_quality", "contaminated", "kept", "tokens")
    assert {row["source"]: [row[c] for c in counts] for row in got["funnel"]} == funnel_rows(cli.stdout)

    query = re.search(r'ws\.sql\("(.*?)"\)', readme_block()).group(1)
    assert got["fates"] == json.loads(run_loom("-w", ws, "sql", "--format", "json", query).stdout)

    run_loom("-w", ws, "mix", "build", "sample")
    plan = pq.read_table(compiled(ws, "sample") / "plan.parquet").to_pylist()
    assert json.loads(json.dumps(plan, default=str)) == got["plan"]

    metrics = [json.loads(line) for line in (Path(got["run"]) / "metrics.jsonl").read_text().splitlines()]
    assert got["loss"] == metrics[-1]["loss"] and metrics[-1]["step"] == 4  # max_steps=5: steps 0 to 4


def test_the_api_pages_examples_run_in_order(docs_folder):
    blocks = PYTHON_BLOCKS.findall((REPO / "docs" / "api.md").read_text(encoding="utf-8"))
    assert len(blocks) == 11  # open, curate, sql, mixtures.build, mixtures.export, train, show, status, card, gc,
                              # publish
    body = "\n".join(blocks)  # the page's cells, as a notebook runs them: a script puts them under the guard
    done = run_python('if __name__ == "__main__":\n' + "".join(f"    {line}\n" for line in body.splitlines()),
                      docs_folder)
    printed = done.stdout.splitlines()
    assert "limit 0: give a whole number of records per source, 1 or more" in done.stdout
    assert "train has no option 'max_step'" in done.stdout
    assert printed[-6].startswith("200 [")  # status: the sample's limit, then the sources
    assert printed[-3] == "README.md ---"  # card: the mixture's, its YAML header first
    assert printed[-2].startswith("gc would free ")
    assert re.fullmatch(r"published \d+ files, \d+ bytes in site", printed[-1])
    assert "True" in printed  # a finished export is not written twice
    assert any(line.startswith("kept /") and line.endswith("]") for line in printed)  # show: a kept document's story
