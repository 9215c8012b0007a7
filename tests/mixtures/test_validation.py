"""Validation that never touches training (whole documents held out per source, shared by every slice and tag
of it) and user eval sets (tokenized at compile time, their loss and bits per byte recorded by `loom train`)."""

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from helpers import compiled, EXAMPLES, TINY_MODEL, copy_curated, published, run_loom, write_spec
from base.errors import UserError
from base.workspace import Workspace
from mixtures import Schedule, SequenceIndex, compile_mixture, load_spec
from mixtures.spec import to_toml

SPEC = """seq_len = 32
global_batch = 8
steps = 8
validation_tokens = 300
[weights]
code = 0.3
"code:n_tokens>=400" = 0.2
docs = 0.3
web = 0.2
[midtrain]
"code:n_tokens>=400" = 0.5
docs = 0.5

[eval.excuses]
path = "evals/excuses.jsonl"

[eval.docs-held-out]
source = "docs"
"""
EXCUSES = 120  # of the bundled set's 453: enough for a few sequences, cheap to score every evaluation step


@pytest.fixture(scope="module")
def val_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("valws") / "ws")
    (ws / "evals").mkdir()
    lines = (EXAMPLES / "evals" / "bofh-excuses.jsonl").read_text(encoding="utf-8").splitlines()[:EXCUSES]
    (ws / "evals" / "excuses.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_spec(ws, "heldout", SPEC)
    run_loom("-w", ws, "mix", "build", "heldout")
    return ws


def held_out_documents(out) -> dict[str, set]:
    by_source = {}
    for doc in pq.read_table(out / "validation.parquet").to_pylist():
        by_source.setdefault(doc["source"], set()).add((doc["shard"], doc["row"]))
    return by_source


def test_no_token_of_a_validation_document_is_trained_on(val_ws):
    out = compiled(val_ws, "heldout")
    meta = json.loads((out / "schedule.json").read_text())
    held_out = held_out_documents(out)
    assert set(held_out) == {"code", "docs", "web"} and all(held_out.values())
    schedule = Schedule(meta)
    indexes = [SequenceIndex(out / c["file"], meta["seq_len"]) for c in meta["components"]]
    trained = [set() for _ in indexes]
    for batch in schedule.iterate():  # every sequence any step reads
        for key, sequence in batch:
            c = schedule.components.index(key)
            trained[c].update((shard, row) for shard, row, _, _ in indexes[c].locate(sequence))
    every_held_out = set().union(*held_out.values())
    for c, component in enumerate(meta["components"]):
        assert trained[c] and not trained[c] & every_held_out, component["key"]
    # `code` and its slice share code's one held-out set: neither trains on it, and a mixture that reads only
    # `code` holds out the very same documents
    code, sliced = (schedule.components.index(k) for k in ("code", "code:n_tokens>=400"))
    assert held_out["code"] and not (trained[code] | trained[sliced]) & held_out["code"]
    write_spec(val_ws, "codeonly", SPEC.split("[weights]")[0] + "[weights]\ncode = 1\n")
    compile_mixture(load_spec(val_ws / "mixtures" / "codeonly.toml"), Workspace(val_ws), val_ws / "codeonly-out")
    assert held_out_documents(val_ws / "codeonly-out") == {"code": held_out["code"]}
    # whole documents, as counted in schedule.json
    documents = pq.read_table(published(val_ws) / "manifest" / "documents").to_pylist()
    tokens = {(d["shard"], d["row"]): d["n_tokens"] for d in documents}
    for source, counts in meta["validation"]["sources"].items():
        assert counts["tokens"] == sum(tokens[doc] for doc in held_out[source]) >= 300
        assert counts["sequences"] == counts["tokens"] // 33


def train(ws, run: str, *args):
    result = run_loom("-w", ws, "train", "--mixture", "heldout", "--run-name", run, *TINY_MODEL, "--eval-every", 4,
                      "--checkpoint-every", 8, "--report-every", 8, "--warmup-steps", 2, *args)
    lines = (ws / "runs" / run / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines], result.stdout


@pytest.fixture(scope="module")
def eval_run(val_ws):
    return train(val_ws, "evals")


def test_eval_sets_are_compiled_and_their_loss_and_bpb_recorded(val_ws, eval_run):
    out = compiled(val_ws, "heldout")
    meta = json.loads((out / "schedule.json").read_text())
    sets = {e["name"]: e for e in meta["evals"]}
    tokenizer = Tokenizer.from_file(str(val_ws / "models" / "tokenizer.json"))
    eos = tokenizer.token_to_id("<|endoftext|>")
    texts = [json.loads(line)["text"] for line in (val_ws / "evals" / "excuses.jsonl").read_text().splitlines()]
    ids = pq.read_table(out / sets["excuses"]["file"])["input_ids"].to_pylist()
    assert ids == [tokenizer.encode(t, add_special_tokens=False).ids + [eos] for t in texts]
    records, stdout = eval_run
    evaluated = [r for r in records if "eval_loss_by_set" in r]
    assert [r["step"] for r in evaluated] == [3, 7]
    assert set(evaluated[-1]["val_loss_by_source"]) == {"code", "docs", "web"}
    for name, record in sets.items():
        # the bytes the scored tokens cover, recomputed: each packed sequence's targets decoded to text
        stream = np.concatenate(pq.read_table(out / record["file"])["input_ids"].to_numpy(zero_copy_only=False))
        targets = stream[: record["sequences"] * 33].reshape(-1, 33)[:, 1:]
        scored_bytes = sum(len(tokenizer.decode(row.tolist()).encode("utf-8")) for row in targets)
        assert record["scored_tokens"] == targets.size and record["scored_bytes"] == scored_bytes
        for r in evaluated:
            loss, bpb = r["eval_loss_by_set"][name], r["eval_bpb_by_set"][name]
            assert 0 < loss < 20 and bpb == pytest.approx(loss * targets.size / math.log(2) / scored_bytes, rel=1e-9)
    assert f"eval set 'excuses' loss {evaluated[-1]['eval_loss_by_set']['excuses']:.4f}" in stdout
    assert 'id="eval-table"' in (val_ws / "runs" / "evals" / "report.html").read_text()
    # a curated source's held-out documents as an eval set: the same tokens as that source's validation loss
    assert evaluated[-1]["eval_loss_by_set"]["docs-held-out"] == pytest.approx(
        evaluated[-1]["val_loss_by_source"]["docs"], rel=1e-6)


@pytest.mark.slow  # a 2-rank run (~30 s on 2 cores)
def test_validation_and_eval_sets_score_the_same_on_two_ranks(val_ws, eval_run):
    one = [r for r in eval_run[0] if "eval_loss_by_set" in r]
    two = [r for r in train(val_ws, "evals-two-ranks", "--nproc", 2)[0] if "eval_loss_by_set" in r]
    assert [r["step"] for r in one] == [r["step"] for r in two] == [3, 7]
    for a, b in zip(one, two):
        for key in ("val_loss_by_source", "eval_loss_by_set", "eval_bpb_by_set"):
            assert a[key] == pytest.approx(b[key], rel=1e-5), key


def test_an_older_spec_s_validation_sequences_still_compiles_as_its_token_budget(tmp_path):
    older = tmp_path / "older.toml"
    older.write_text('name = "older"\nseq_len = 32\nsteps = 4\nvalidation_sequences = 2\n[weights]\ncode = 1\n')
    spec = load_spec(older)
    assert spec.validation_budget() == 2 * 33
    resolved = tmp_path / "resolved.toml"
    resolved.write_text(to_toml(spec, {"steps": 4}, "test"))
    assert load_spec(resolved).validation_budget() == 66


BAD = {
    "missing file": ('[eval.x]\npath = "evals/nosuch.jsonl"\n', "eval set 'x': no file at"),
    "no such field": ('[eval.x]\npath = "evals/excuses.jsonl"\ntext = "body"\n', "has no text field 'body'"),
    "outside the workspace": ('[eval.x]\npath = "../elsewhere.jsonl"\n',
                              "`path` = '../elsewhere.jsonl' leaves the workspace"),
    "empty set": ('[eval.x]\npath = "evals/empty.jsonl"\n', "eval set 'x' (evals/empty.jsonl) has no documents"),
    "unread source": ('[eval.x]\nsource = "fortunes"\n', "source 'fortunes', which no weight of the mixture reads"),
    "validation under a sequence": ("validation_tokens = 10\n", "`validation_tokens` = 10 is less than one sequence"),
    "both budgets": ("validation_tokens = 100\nvalidation_sequences = 2\n", "not both"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_eval_and_validation_input_is_one_line_at_build(val_ws, case):
    extra, message = BAD[case]
    (val_ws / "evals" / "empty.jsonl").write_text("")
    body = "seq_len = 32\nglobal_batch = 8\nsteps = 4\n" + extra.split("[eval")[0] + "[weights]\ncode = 1\n"
    if "[eval" in extra:
        body += "[eval" + extra.split("[eval", 1)[1]
    write_spec(val_ws, "bad", body)
    if case == "missing file":  # once through the CLI: one line, exit status 2
        result = run_loom("-w", val_ws, "mix", "build", "bad", check=False)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and message in lines[0], result.stderr
        return
    with pytest.raises(UserError) as err:
        compile_mixture(load_spec(val_ws / "mixtures" / "bad.toml"), Workspace(val_ws), val_ws / "bad-out")
    assert message in str(err.value) and "\n" not in str(err.value)
