"""The workspace's tokenizer set once: sources.toml's `tokenizer` is what `loom curate` uses unless --tokenizer says
otherwise, and `loom mix build` of a spec that names none uses the tokenizer the data was curated with."""

import json
import shutil
from pathlib import Path

import pytest

from helpers import compiled, GOOD_SPEC, published, run_loom, write_spec

TINY_SOURCES = """tokenizer = "tok/custom.json"
[[source]]
name = "notes"
format = "jsonl"
paths = ["notes.jsonl"]
"""


def tiny_workspace(root: Path, tokenizer: Path) -> Path:
    """A folder with sources.toml (naming tok/custom.json, a copy of `tokenizer`) and one small source."""
    root.mkdir(parents=True)
    (root / "tok").mkdir()
    shutil.copy(tokenizer, root / "tok" / "custom.json")
    lines = [json.dumps({"text": f"Note {i}: the tokenizer is set once, in sources.toml, for every command."})
             for i in range(20)]
    (root / "notes.jsonl").write_text("\n".join(lines) + "\n")
    (root / "sources.toml").write_text(TINY_SOURCES)
    return root


def curated_with(ws: Path) -> dict:
    return json.loads((published(ws) / "manifest" / "curation.json").read_text())


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, slice_tokenizer):
    root = tiny_workspace(tmp_path_factory.mktemp("tokonce") / "src", slice_tokenizer)
    run_loom("-w", root / "ws", "curate", "--sources", root / "sources.toml", "--workers", 1)
    return root


def test_curate_uses_the_tokenizer_sources_toml_names(tiny):
    info = curated_with(tiny / "ws")
    assert info["tokenizer"] == str(tiny / "tok" / "custom.json")
    assert not (tiny / "ws" / "models" / "tokenizer.json").exists()


def test_mix_build_uses_the_datas_tokenizer_without_the_workspaces(tiny):
    ws = tiny / "ws"
    write_spec(ws, "notes", "seq_len = 16\nglobal_batch = 2\ntotal_tokens = 320\nvalidation_tokens = 0\n"
                            "[weights]\nnotes = 1.0\n[midtrain]\nnotes = 1.0\n")
    run_loom("-w", ws, "mix", "build", "notes")  # no models/tokenizer.json in this workspace
    resolved = (compiled(ws, "notes") / "mixture.toml").read_text()
    assert "tokenizer" not in resolved  # outside the workspace: the data's, wherever it is
    (ws / "models").mkdir()
    (ws / "models" / "tokenizer.json").write_text("{}")  # another file there changes nothing
    run_loom("-w", ws, "mix", "build", "notes")
    named = write_spec(ws, "named", 'tokenizer = "models/tokenizer.json"\n' + "seq_len = 16\nglobal_batch = 2\n"
                       "total_tokens = 320\nvalidation_tokens = 0\n[weights]\nnotes = 1.0\n")
    refused = run_loom("-w", ws, "mix", "build", named.stem, check=False)
    assert refused.returncode == 2 and "differs from the one the data was curated with" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_tokenizer_option_overrides_sources_toml(tmp_path, slice_tokenizer, tiny):
    root = tiny_workspace(tmp_path / "src", slice_tokenizer)
    (root / "tok" / "custom.json").unlink()  # sources.toml's would fail: --tokenizer wins before it is looked at
    run_loom("-w", root / "ws", "curate", "--sources", root / "sources.toml", "--tokenizer", slice_tokenizer,
             "--workers", 1)
    assert curated_with(root / "ws")["tokenizer"] == str(slice_tokenizer)


def test_a_missing_tokenizer_in_sources_toml_is_one_line_naming_the_key(tmp_path, slice_tokenizer):
    root = tiny_workspace(tmp_path / "src", slice_tokenizer)
    (root / "tok" / "custom.json").unlink()
    result = run_loom("-w", root / "ws", "curate", "--sources", root / "sources.toml", check=False, timeout=60)
    assert result.returncode == 2 and "`tokenizer` names no file" in result.stderr
    assert str(root / "tok" / "custom.json") in result.stderr and "Traceback" not in result.stderr
