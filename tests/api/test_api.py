"""loom.api on real parts: `import loom` stays cheap, `curate(limit=N)` reads the first records of each shard (a
full curate after it redoes prepare), the sample is recorded and shown, and wrong settings are one-line UserErrors
raised before any lock or compute, as the CLI says them."""

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import loom
from base.errors import UserError
from curation.config import load_config
from curation.job import plan_shards
from curation.run import input_fingerprint, shard_fingerprint
from helpers import REPO, run_loom

FILES, RECORDS = 2, 10  # a source of two jsonl files (two shards) of ten distinct documents each


def write_tiny_source(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(FILES):
        (folder / f"part{f}.jsonl").write_text("".join(
            json.dumps({"text": f"file {f} document {i}: " + " ".join(f"word{f}x{i}x{w}" for w in range(30))}) + "\n"
            for i in range(RECORDS)))
    sources = folder / "sources.toml"
    sources.write_text('[[source]]\nname = "tiny"\nformat = "jsonl"\npaths = ["part*.jsonl"]\nfilters = []\n')
    return sources


def line_offsets(path: Path) -> list[int]:
    """Where each line of a jsonl file starts: the record numbers its reader gives."""
    starts, at = [], 0
    for line in path.read_bytes().splitlines(keepends=True):
        starts.append(at)
        at += len(line)
    return starts


@pytest.fixture(scope="module")
def sampled(tmp_path_factory, slice_tokenizer):
    """A workspace whose tiny source was curated through the API with limit=5 (then the funnel and notes)."""
    root = tmp_path_factory.mktemp("api")
    sources = write_tiny_source(root / "corpus")
    notes = []
    ws = loom.open(root / "ws", note=notes.append)
    stages = []

    def progress(stage, total):
        stages.append((stage, total))
        return lambda n=1: None

    funnel = ws.curate(sources=sources, workers=1, limit=5, tokenizer=slice_tokenizer, progress=progress)
    return ws, sources, funnel, stages


def test_import_loom_imports_no_engine():
    """`import loom` and `import loom.api` load none of Dask, DuckDB, torch, pyarrow: a script pays for what it uses."""
    code = ("import sys, loom, loom.api; print(sorted(m for m in ('dask', 'distributed', 'duckdb', 'torch', 'pyarrow')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_a_limit_is_split_over_a_sources_shards_the_first_taking_the_remainder(tmp_path):
    config = load_config(write_tiny_source(tmp_path))
    assert [s.limit for s in plan_shards(config.sources, 5)] == [3, 2]
    assert [s.limit for s in plan_shards(config.sources, 1)] == [1, 0]
    assert [s.limit for s in plan_shards(config.sources)] == [None, None]


def test_the_limit_is_in_the_prepare_fingerprint_and_a_full_shards_is_unchanged(tmp_path):
    shard = plan_shards(load_config(write_tiny_source(tmp_path)).sources)[0]
    full = shard_fingerprint(shard)
    assert shard_fingerprint(replace(shard, limit=3)) not in (full, shard_fingerprint(replace(shard, limit=4)))
    assert shard_fingerprint(replace(shard, limit=None)) == full == input_fingerprint(shard)


def test_a_limited_curate_reads_the_first_records_of_each_shard_and_says_it_is_a_sample(sampled):
    ws, sources, funnel, stages = sampled
    assert [(row["source"], row["docs_in"], row["kept"]) for row in funnel] == [("tiny", 5, 5)]
    assert ("prepare", FILES) in stages
    read = ws.sql("SELECT shard, list(record ORDER BY record) AS records FROM funnel GROUP BY shard ORDER BY shard")
    assert read.to_pylist() == [{"shard": 0, "records": line_offsets(sources.parent / "part0.jsonl")[:3]},
                                {"shard": 1, "records": line_offsets(sources.parent / "part1.jsonl")[:2]}]
    curated = ws.files.published()
    assert json.loads(curated.curation_info.read_text())["limit"] == 5
    assert ws.status()["curation"]["limit"] == 5
    shown = run_loom("-w", ws.root, "status").stdout
    assert "A sample: at most 5 records per source (`loom curate --limit`)" in shown


@pytest.mark.slow  # two curates (~11 s); the limit in the prepare fingerprint is tested by default
def test_a_full_curate_after_a_limited_one_redoes_prepare_and_records_no_limit(sampled, slice_tokenizer):
    ws, sources, _, _ = sampled
    result = run_loom("-w", ws.root, "curate", "--sources", sources, "--tokenizer", slice_tokenizer, "--workers", 1)
    assert "A sample" not in result.stdout
    assert ws.sql("SELECT count(*) AS n FROM funnel").to_pylist() == [{"n": FILES * RECORDS}]
    assert json.loads(ws.files.published().curation_info.read_text())["limit"] is None
    assert ws.status()["curation"]["limit"] is None and "A sample" not in run_loom("-w", ws.root, "status").stdout
    again = run_loom("-w", ws.root, "curate", "--sources", sources, "--tokenizer", slice_tokenizer, "--workers", 1,
                     "--limit", 5)
    assert "A sample: at most 5 records per source (--limit)" in again.stdout
    assert ws.sql("SELECT count(*) AS n FROM funnel").to_pylist() == [{"n": 5}]


@pytest.mark.parametrize("limit", [0, -3, "abc", 2.5, True])
def test_a_wrong_limit_is_one_line_before_any_lock(tmp_path, limit):
    sources = write_tiny_source(tmp_path / "corpus")
    with pytest.raises(UserError, match=r"^limit .*: give a whole number of records per source, 1 or more") as err:
        loom.open(tmp_path / "ws").curate(sources=sources, limit=limit)
    assert "\n" not in str(err.value) and not (tmp_path / "ws").exists()
    if not isinstance(limit, bool):  # the command's --limit is text: the same line for the same text
        with pytest.raises(UserError) as as_text:
            loom.open(tmp_path / "ws").curate(sources=sources, limit=str(limit))
        cli = run_loom("-w", tmp_path / "ws", "curate", "--sources", sources, f"--limit={limit}", check=False)
        assert cli.returncode == 2 and cli.stderr.strip() == f"error: {as_text.value}"
        assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize("options, says", [
    ({"max_step": 5}, "train has no option 'max_step'; the options are TrainConfig's fields: run_name, model"),
    ({"max_steps": 0}, "max_steps (--max-steps) is a whole number, 1 or more, not 0"),
    ({"model": "huge"}, "model (--model) is a named size: one of tiny, small"),
    ({"lr": 0.0}, "lr (--lr) is a number above 0, not 0.0"),
    ({"fsdp": "yes"}, "fsdp (--fsdp) is a switch: True or False, not 'yes'"),
    ({"run_name": "Not A Name"}, "--run-name: run name 'Not A Name' is invalid"),
])
def test_wrong_train_options_are_one_line_before_anything_is_read(tmp_path, options, says):
    with pytest.raises(UserError, match="^" + says.replace("(", r"\(").replace(")", r"\)")) as err:
        loom.open(tmp_path).train("anything", **options)
    assert "\n" not in str(err.value)


def test_sql_returns_arrow_and_refuses_writes_as_loom_sql_does(sampled):
    ws = sampled[0]
    query = "SELECT source, doc_id, fate FROM funnel ORDER BY shard, record"
    cli = run_loom("-w", ws.root, "sql", "--format", "json", query)
    assert ws.sql(query).to_pylist() == json.loads(cli.stdout)
    with pytest.raises(UserError) as err:
        ws.sql("DROP VIEW funnel")
    refused = run_loom("-w", ws.root, "sql", "DROP VIEW funnel", check=False)
    assert refused.returncode == 2 and refused.stderr.strip() == f"error: {err.value}"


def test_the_api_prints_nothing_and_tells_its_notes_to_the_callback(sampled, slice_tokenizer, capfd):
    """Last in this file: it renames the source, so the published curation is another one after it."""
    ws, sources, _, _ = sampled
    renamed = sources.with_name("renamed.toml")
    renamed.write_text(sources.read_text().replace('name = "tiny"', 'name = "small"'))
    notes = []
    funnel = loom.open(ws.root, note=notes.append).curate(sources=renamed, workers=1, limit=2,
                                                          tokenizer=slice_tokenizer)
    assert [(row["source"], row["docs_in"]) for row in funnel] == [("small", 2)]
    assert any(line.startswith("sources no longer in sources.toml are left out: tiny") for line in notes)
    assert f"no quality model at {ws.root / 'models' / 'quality.bin'}; quality scoring skipped (train one with " \
           "`loom quality train`)" in notes
    assert capfd.readouterr().out == ""


def test_a_script_that_curates_outside_a_main_guard_is_told_to_add_one(tmp_path, slice_tokenizer):
    """Dask's worker processes import the script that starts them: one that curates at its top level says, from the
    first worker, to put its calls under `if __name__ == "__main__":`, instead of a second curation on the lock."""
    sources = write_tiny_source(tmp_path / "corpus")
    script = tmp_path / "unguarded.py"
    script.write_text(f"import loom\nloom.open({str(tmp_path / 'ws')!r}).curate(sources={str(sources)!r}, workers=1, "
                      f"tokenizer={str(slice_tokenizer)!r})\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode != 0
    assert ("UserError: curate() was called again by a Dask worker process importing your script: put the script's "
            'calls under `if __name__ == "__main__":`') in done.stderr
    assert "is in use by" not in done.stderr
