"""A source's own `steps` (curation/steps/plugins.py): a filter, a transform, a class and a step that raises, in a
package the test writes to a temporary folder on PYTHONPATH (which the LocalCluster's workers inherit), curated by
`loom curate` as a user runs it; and the wrong settings, each one line before any compute."""

import json
import os
from pathlib import Path

import duckdb
import pytest

from curation.config import SourceConfig
from curation.funnel_warnings import Removals, source_warnings
from curation.steps.normalize import document_id
from helpers import published, run_loom

RULES = '''
def drop_spam(doc):
    words = doc.text.split()
    if "spam" in words:
        return False, "spam_word"
    if "junk" in words:
        return False
    return None


def strip_marker(doc):
    if "[ad]" in doc.text:
        return doc.text.replace("[ad]", "")
    return True


def explode(doc):
    if "boom" in doc.text:
        raise ValueError("cannot parse\\nboom")
'''

SHOUT = '''
class Shout:
    """Made once per worker process; upper-cases the documents whose record says so."""

    def __init__(self):
        self.loud = True

    def __call__(self, doc):
        return doc.text.upper() if doc.meta.get("shout") else None
'''

NOTES = [  # (record, what the steps do with it)
    {"text": "a plain note about gardens and their tomatoes"},  # kept as it is
    {"text": "buy spam now from this shop"},  # drop_spam: (False, "spam_word")
    {"text": "cheap junk for sale here today"},  # drop_spam: False
    {"text": "[ad] a note about rivers with a marker"},  # strip_marker: kept without the marker
    {"text": "[ad]"},  # strip_marker: empty
    {"text": "boom goes the note about fireworks"},  # explode raises: malformed
    {"text": "a quiet note about bells", "shout": True},  # Shout: upper-cased
]
OTHERS = [{"text": f"another source's document number {i} about owls"} for i in range(3)]
STEPS = ["loomplug.rules:drop_spam", "loomplug.rules:strip_marker", "loomplug.rules:explode", "loomplug.shout:Shout"]


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def sources_toml(steps: list[str], other_steps: list[str] = ()) -> str:
    """Two sources: `notes` with `steps`, `other` with `other_steps` (none: no `steps` key)."""
    return (f'[[source]]\nname = "notes"\nformat = "jsonl"\npaths = ["notes.jsonl"]\nfilters = []\n'
            f'steps = {json.dumps(steps)}\n\n'
            f'[[source]]\nname = "other"\nformat = "jsonl"\npaths = ["other.jsonl"]\nfilters = []\n'
            + (f'steps = {json.dumps(list(other_steps))}\n' if other_steps else ""))


def write_package(root: Path) -> Path:
    package = root / "plugins" / "loomplug"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "rules.py").write_text(RULES)
    (package / "shout.py").write_text(SHOUT)
    return package


def curate(root: Path, tokenizer: Path, check=True):
    """`loom curate` of root/sources.toml with root/plugins on PYTHONPATH, which the local workers inherit."""
    path = root / "plugins"
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(path), os.environ.get("PYTHONPATH", "")) if p)}
    return run_loom("-w", root / "ws", "curate", "--sources", root / "sources.toml", "--tokenizer", tokenizer,
                    "--workers", 1, check=check, env=env)


def prepare_markers(ws: Path) -> dict[str, float]:
    return {str(p.relative_to(ws / "work" / "prepare")): json.loads(p.read_text())["finished"]
            for p in (ws / "work" / "prepare").glob("*/*.done")}


@pytest.fixture(scope="module")
def plugged(tmp_path_factory, slice_tokenizer):
    """The notes curated with the four steps, the other source with Shout alone (another module): (root, the first
    run's prepare markers, its output)."""
    root = tmp_path_factory.mktemp("plugins")
    write_package(root)
    write_jsonl(root / "notes.jsonl", NOTES)
    write_jsonl(root / "other.jsonl", OTHERS)
    (root / "sources.toml").write_text(sources_toml(STEPS, ["loomplug.shout:Shout"]))
    result = curate(root, slice_tokenizer)
    return root, prepare_markers(root / "ws"), result


def funnel_rows(ws: Path, source: str) -> list[tuple]:
    funnel = published(ws) / "manifest" / "funnel" / "*.parquet"
    return duckdb.sql(f"SELECT fate, stage, reason, detail FROM read_parquet('{funnel}') WHERE source = '{source}' "
                      "ORDER BY record").fetchall()


def test_the_funnel_records_each_steps_verdict(plugged):
    root, _, result = plugged
    rows = funnel_rows(root / "ws", "notes")
    assert len(rows) == len(NOTES)  # inputs == the sum of the fates
    assert [row[:3] for row in rows] == [
        ("kept", "", None),
        ("filtered", "plugin:drop_spam", "plugin:drop_spam/spam_word"),
        ("filtered", "plugin:drop_spam", "plugin:drop_spam/rejected"),
        ("kept", "", None),
        ("filtered", "plugin:strip_marker", "plugin:strip_marker/empty"),
        ("malformed", "plugin:explode", "plugin_error"),
        ("kept", "", None),
    ]
    assert rows[5][3] == "plugin:explode: ValueError: cannot parse boom"
    assert "plugin:drop_spam/spam_word 1" in result.stdout  # the summary's top reasons
    assert [row[0] for row in funnel_rows(root / "ws", "other")] == ["kept"] * len(OTHERS)


def test_transformed_text_is_curated_and_the_error_is_quarantined(plugged):
    root = plugged[0]
    gen = published(root / "ws")
    texts = {r[0]: r[1] for r in duckdb.sql(
        f"SELECT text, id FROM read_parquet('{gen / 'curated' / 'notes' / '*.parquet'}')").fetchall()}
    assert set(texts) == {NOTES[0]["text"], "a note about rivers with a marker", "A QUIET NOTE ABOUT BELLS"}
    assert all(doc_id == document_id(text) for text, doc_id in texts.items())  # `id` is the stored text's hash
    quarantined = [json.loads(line) for f in (gen / "quarantine" / "notes").glob("*.jsonl")
                   for line in f.read_text().splitlines()]
    assert [(q["reason"], q["detail"], q["raw"]) for q in quarantined] == [
        ("plugin_error", "plugin:explode: ValueError: cannot parse boom", NOTES[5]["text"])]


@pytest.mark.slow  # two more curates (~9 s); a source without steps keeping its fingerprints is tested by default
def test_editing_a_step_redoes_its_sources_prepare_alone(plugged, slice_tokenizer):
    root, first, _ = plugged
    curate(root, slice_tokenizer)
    assert prepare_markers(root / "ws") == first  # a rerun without edits redoes nothing
    rules = root / "plugins" / "loomplug" / "rules.py"
    rules.write_text(rules.read_text().replace('"spam_word"', '"spam_again"'))
    curate(root, slice_tokenizer)
    after = prepare_markers(root / "ws")
    assert {marker for marker in first if after[marker] != first[marker]} == {"notes/part-00000.done"}
    assert funnel_rows(root / "ws", "notes")[1][2] == "plugin:drop_spam/spam_again"


def test_funnel_warnings_name_a_step_that_took_most_of_a_source():
    source = SourceConfig(name="notes", format="jsonl", paths=("notes.jsonl",), steps=("loomplug.rules:drop_spam",))
    most = [Removals("filtered", "plugin:drop_spam", "plugin:drop_spam/spam_word", 3), Removals("kept", "", None, 1)]
    assert source_warnings(source, most) == [
        "source 'notes' lost 3 of 4 documents (75%) to plugin:drop_spam (plugin:drop_spam/spam_word); if that is not "
        "noise, change the step or remove \"loomplug.rules:drop_spam\" from `steps` for it in sources.toml"]
    failed = [Removals("malformed", "plugin:explode", "plugin_error", 2, "plugin:explode: ValueError: boom"),
              Removals("filtered", "plugin:drop_spam", "plugin:drop_spam/rejected", 1)]
    assert source_warnings(source, failed) == [
        "source 'notes' kept 0 of 3 documents; 2 were malformed at plugin:explode (plugin_error: plugin:explode: "
        "ValueError: boom); fix the step's error on those documents (their text is in the generation's quarantine/)"]


def test_a_worker_that_imported_a_step_before_it_was_edited_stops_with_one_line(tmp_path, monkeypatch):
    """A Dask worker that outlives a job (a cluster of one's own) keeps the module it imported; after an edit it
    would run the old code under the new code's fingerprint. In one process, as such a worker is."""
    from base.errors import UserError
    from curation.document import Doc
    from curation.steps.plugins import PluginStep

    (tmp_path / "stale_rules.py").write_text(RULES)
    monkeypatch.syspath_prepend(str(tmp_path))
    step = PluginStep("notes", "stale_rules:drop_spam")
    document = Doc(record=0, text="buy spam now", id="x", lang="en")
    removed = Removed()
    assert list(step.run(iter([document]), removed)) == [] and removed == [("plugin:drop_spam/spam_word", "")]
    (tmp_path / "stale_rules.py").write_text(RULES.replace("spam_word", "spam_again"))
    with pytest.raises(UserError, match="^source 'notes' step 'stale_rules:drop_spam': module 'stale_rules' changed "
                                        "since this Dask worker imported it; restart the workers"):
        list(step.run(iter([document]), removed))


class Removed(list):
    """A funnel that lists (reason, detail) of what it hears."""

    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        self.append((reason, detail))


WRONG = '''
def listing(doc):
    return [doc.text]
'''


@pytest.mark.parametrize("step, message", [
    ("nosuchpackage.rules:drop", "source 'notes' step 'nosuchpackage.rules:drop': 'nosuchpackage.rules:drop' does "
                                 "not import (ModuleNotFoundError: No module named 'nosuchpackage'); make its package "
                                 "importable where Loom runs and on every Dask worker"),
    ("loomplug.rules:absent", "source 'notes' step 'loomplug.rules:absent': module 'loomplug.rules' has no 'absent'"),
    ("loomplug.rules:RULES_VERSION", "source 'notes' step 'loomplug.rules:RULES_VERSION': "
                                     "'loomplug.rules:RULES_VERSION' is a int, not a function or class"),
    ("loomplug.rules.drop_spam", "source 'notes': `steps`: 'loomplug.rules.drop_spam' is not 'package.module:name'"),
    ("loomplug.rules:drop_spam\", \"other.rules:drop_spam", "`steps` 'loomplug.rules:drop_spam' and "
                                                            "'other.rules:drop_spam' are both named 'drop_spam'"),
    ("loomplug.rules:NotCallable", "class NotCallable has no __call__(self, doc)"),
    # these two are found on a worker, once the cluster is up (~6 s each): slow
    pytest.param("loomplug.rules:NeedsModel", "source 'notes' step 'loomplug.rules:NeedsModel': NeedsModel() failed "
                 "(FileNotFoundError: no model.bin here); a step's class is made once per worker process, with no "
                 "arguments", marks=pytest.mark.slow),
    pytest.param("loomplug.wrong:listing", "source 'notes' step 'loomplug.wrong:listing' returned ['a plain note "
                 "about gardens and their tomatoes'] (list) for document", marks=pytest.mark.slow),
], ids=["does-not-import", "missing-name", "not-callable", "malformed-reference", "same-name", "class-uncallable",
        "class-fails", "wrong-return"])
def test_a_wrong_step_stops_with_one_line(tmp_path, slice_tokenizer, step, message):
    package = write_package(tmp_path)
    (package / "rules.py").write_text(RULES + "\nRULES_VERSION = 3\n\n\nclass NotCallable:\n    pass\n\n\n"
                                      "class NeedsModel:\n    def __init__(self):\n"
                                      "        raise FileNotFoundError('no model.bin here')\n\n"
                                      "    def __call__(self, doc):\n        return True\n")
    (package / "wrong.py").write_text(WRONG)
    write_jsonl(tmp_path / "notes.jsonl", NOTES[:1])
    write_jsonl(tmp_path / "other.jsonl", OTHERS)
    (tmp_path / "sources.toml").write_text(sources_toml([]).replace("steps = []", f'steps = ["{step}"]'))
    result = curate(tmp_path, slice_tokenizer, check=False)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    if step not in ("loomplug.wrong:listing", "loomplug.rules:NeedsModel"):  # the others: before any compute
        assert not (tmp_path / "ws" / "work").exists()


@pytest.mark.slow  # a curate whose cluster starts (~6 s); the client-side import errors run by default
def test_a_worker_where_the_step_does_not_import_stops_with_one_line(tmp_path, slice_tokenizer):
    """The client imports the step; a Dask worker cannot (the module refuses to import in a worker process)."""
    package = write_package(tmp_path)
    (package / "clientonly.py").write_text(
        "from distributed import get_worker\n"
        "try:\n    get_worker()\nexcept ValueError:\n    pass\n"
        "else:\n    raise ImportError('loomplug is not installed on this worker')\n\n\n"
        "def keep(doc):\n    return True\n")
    write_jsonl(tmp_path / "notes.jsonl", NOTES[:1])
    write_jsonl(tmp_path / "other.jsonl", OTHERS)
    (tmp_path / "sources.toml").write_text(sources_toml(["loomplug.clientonly:keep"]))
    result = curate(tmp_path, slice_tokenizer, check=False)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert ("source 'notes' step 'loomplug.clientonly:keep': 'loomplug.clientonly:keep' does not import (ImportError: "
            "loomplug is not installed on this worker); make its package importable where Loom runs and on every "
            "Dask worker") in lines[0]


def test_a_steps_source_code_is_in_its_shards_fingerprint_and_a_source_without_steps_has_its_old_one(tmp_path,
                                                                                                     monkeypatch):
    """In one process, no curate: the fingerprint prepare starts from (curation.run.input_fingerprint)."""
    from dataclasses import asdict, replace

    from base.digests import text_digest
    from base.inputs import listing
    from curation.job import plan_shards
    from curation.run import CODE_VERSION, input_fingerprint

    package = write_package(tmp_path)
    monkeypatch.syspath_prepend(str(package.parent))
    write_jsonl(tmp_path / "notes.jsonl", NOTES)
    plain = SourceConfig(name="notes", format="jsonl", paths=("notes.jsonl",), filters=(), base_dir=str(tmp_path))
    (shard,) = plan_shards([plain])
    left_out = ("base_dir", "shard_bytes", "storage_options", "steps", "license", "origin", "citation")
    config = {k: v for k, v in asdict(plain).items() if k not in left_out}
    before_steps = text_digest(CODE_VERSION, json.dumps(config, sort_keys=True), "0", repr(shard.span),
                               *listing(shard.input))  # the rule before `steps` (and a source's licence) existed
    assert input_fingerprint(shard) == before_steps
    stepped = replace(shard, source=replace(plain, steps=("loomplug.rules:drop_spam",)))
    first = input_fingerprint(stepped)
    assert first != before_steps
    rules = package / "rules.py"
    rules.write_text(rules.read_text() + "\n# edited\n")
    assert input_fingerprint(stepped) != first
