"""`loom reproduce RUN` on real parts: a tiny corpus curated, a mixture built and a tiny model trained through the
API; the run's folder alone makes it again in a new workspace, bit-identical, also after a Ctrl-C mid-training;
a changed input is named before any compute (with --anyway it is rebuilt, and is no reproduction), and a non-empty
target or an unfinished run is one line."""

import json
import os
from pathlib import Path

import pytest

import loom
from base.errors import UserError
from base.workspace import INPUTS_FILE
from helpers import Interrupt, run_loom

DOCUMENTS = 48  # enough tokens for 4 steps of 4 x 16 and the held-out validation, curated in seconds
SPEC = """name = "repro"
seq_len = 16
global_batch = 4
steps = 4
validation_tokens = 64
[weights]
tiny = 1.0
"""
RUN = {"run_name": "r", "d_model": 16, "n_layers": 1, "n_heads": 2, "eval_every": 2, "checkpoint_every": 2,
       "report_every": 2, "warmup_steps": 1}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, slice_tokenizer):
    """A tiny source (two jsonl files) curated, mixture `repro` built and run `r` trained for 4 steps."""
    root = tmp_path_factory.mktemp("reproduce")
    corpus = root / "corpus"
    corpus.mkdir()
    for f in range(2):
        (corpus / f"part{f}.jsonl").write_text("".join(
            json.dumps({"text": f"file {f} document {i}: " + " ".join(f"w{(i * w + f) % 97}" for w in range(40))})
            + "\n" for i in range(DOCUMENTS // 2)))
    (corpus / "sources.toml").write_text('[[source]]\nname = "tiny"\nformat = "jsonl"\npaths = ["part*.jsonl"]\n'
                                         'filters = []\n')
    ws = loom.open(root / "ws", note=lambda line: None)
    ws.curate(sources=corpus / "sources.toml", workers=1, tokenizer=slice_tokenizer)
    (ws.root / "mixtures").mkdir()
    (ws.root / "mixtures" / "repro.toml").write_text(SPEC)
    ws.mixtures.build("repro")
    run = ws.train("repro", log=lambda line: None, **RUN)
    return run.folder, corpus


def test_a_run_made_again_from_its_folder_is_bit_identical_also_after_an_interrupt(trained, tmp_path):
    run, _ = trained
    record = json.loads((run / INPUTS_FILE).read_text())
    assert record["config"]["seed"] == 0 and "steps = 4" in record["spec"]
    assert [Path(f["path"]).name for f in record["curation"]["files"]] == ["part0.jsonl", "part1.jsonl"]
    target = loom.open(tmp_path / "again", note=lambda line: None)
    stop = Interrupt("step      2/4")  # the trainer's report line after the checkpoint of step 2
    with pytest.raises(KeyboardInterrupt):
        target.reproduce(run, workers=1, log=stop)
    assert "checked 4 recorded inputs" in stop.lines[0] and "none differ" in stop.lines[0]
    done = target.reproduce(run, workers=1, log=lambda line: None)  # goes on: curated, built, trained from step 2
    assert done.identical and done.comparison.steps == 4
    assert done.comparison.line.startswith("bit-identical: 4 steps, loss ")
    assert done.run == tmp_path / "again" / "runs" / "r"


def test_a_changed_input_is_named_and_nothing_is_rebuilt_but_with_anyway(trained, tmp_path):
    run, corpus = trained
    changed = corpus / "part1.jsonl"
    text, before = changed.read_text(), changed.stat()
    changed.write_text(text.replace("document 3:", "document 9:"))  # the same size: told by its digest
    try:
        result = run_loom("reproduce", run, "-w", tmp_path / "new", check=False)
        anyway = run_loom("reproduce", run, "-w", tmp_path / "anyway", "--anyway", "--workers", 1, check=False)
    finally:
        changed.write_text(text)
        os.utime(changed, ns=(before.st_atime_ns, before.st_mtime_ns))  # as it was, for the curation's fingerprint
    assert result.returncode == 2
    assert f"changed: {changed} (sha256 " in result.stdout and "recorded, " in result.stdout
    assert result.stderr.strip().splitlines()[-1].startswith("error: 1 of run r's inputs differ from its record")
    assert not (tmp_path / "new").exists()  # refused before anything was curated or written
    assert anyway.returncode == 1, anyway.stderr  # rebuilt and trained on the file as it is now: no reproduction
    assert "not a reproduction: 1 input(s) differed (--anyway)" in anyway.stdout


def test_a_target_not_empty_or_a_run_not_finished_is_refused_in_one_line(trained, tmp_path):
    run, _ = trained
    (tmp_path / "notes.txt").write_text("mine")
    result = run_loom("reproduce", run, "-w", tmp_path, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (f"error: {tmp_path} is not empty: reproduce run r into a new or empty folder "
                                     f"(`loom reproduce {run} -w NEW_FOLDER`)")
    with pytest.raises(UserError, match="is not a run's folder"):
        loom.open(tmp_path / "other").reproduce(tmp_path)
    stopped = tmp_path / "ws" / "runs" / "r"  # a copy of the run's record that says it is still running
    stopped.mkdir(parents=True)
    (stopped / INPUTS_FILE).write_bytes((run / INPUTS_FILE).read_bytes())
    (stopped / "run.json").write_text(json.dumps({**json.loads((run / "run.json").read_text()), "status": "running"}))
    with pytest.raises(UserError, match="run r is interrupted, not finished: .* finish it first"):
        loom.open(tmp_path / "other").reproduce(stopped)


def test_a_generation_an_older_loom_built_gets_its_inputs_record_from_the_next_curate(trained, slice_tokenizer):
    """Without inputs.json (as an older Loom left it) a rerun with nothing changed is not done: it writes the record
    on a cluster, rebuilds nothing, and reproduce can then read it."""
    run, corpus = trained
    ws = loom.open(run.parent.parent, note=lambda line: None)
    record = ws.files.published().inputs_record
    kept = record.read_text()
    record.unlink()
    notes = []
    loom.open(ws.root, note=notes.append).curate(sources=corpus / "sources.toml", workers=1, tokenizer=slice_tokenizer)
    assert record.read_text() == kept
    assert [line for line in notes if line.startswith("nothing to do: generation ")]
