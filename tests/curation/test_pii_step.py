"""The pii step (curation.steps.pii) and its settings: redact, count and off on a few documents, ids following the
redacted text, max_pii removals; one small curation in which no planted address, number or key reaches any file
of the workspace, whatever its document's fate, while the kept rows hold the placeholders, the `pii` view's counts
are the rows' sums and the report has its section."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from base.errors import UserError
from curation.config import SourceConfig, load_config
from curation.steps import reading_steps
from curation.steps.normalize import document_id
from helpers import published, run_loom

EMAIL, OTHER_EMAIL = "zelda.quux7@mailbox-example.org", "ophelia.rand@mailbox-example.org"
IP = "81.169.145.92"
PHONE = "+44 20 7946 0958"
SECRET = "AKIAZQ3DRXKW5TPLMN4B"
PLANTED = (EMAIL, OTHER_EMAIL, IP, PHONE, SECRET)
PROSE = ("The committee met on a grey morning to review the harbour plans and agreed that the new pier should be "
         "finished before the autumn storms arrive along the coast. ")


class Removals:
    def __init__(self):
        self.removed = []

    def remove(self, doc, stage, reason, fate="filtered", detail=""):
        self.removed.append((doc, stage, reason, detail))


def run_steps(source: SourceConfig, texts: list[str]):
    from curation.document import Doc

    funnel = Removals()
    docs = iter([Doc(record=i, text=text) for i, text in enumerate(texts)])
    for step in reading_steps(source):
        docs = step.run(docs, funnel)
    return list(docs), funnel.removed


def source(**settings) -> SourceConfig:
    return SourceConfig(name="notes", format="jsonl", paths=("notes.jsonl",), filters=(), **settings)


def test_a_web_source_redacts_by_default_and_others_leave_the_text_alone():
    assert source(tags=("web",)).pii == "redact" and source().pii == "off"
    text = f"Write to {EMAIL} or call {PHONE} from {IP}."
    (kept,), _ = run_steps(source(tags=("web",)), [text])
    assert EMAIL not in kept.text and "<EMAIL>" in kept.text and "<IP_ADDRESS>" in kept.text
    assert kept.pii["email"] == 1 and kept.pii["ip"] == 1 and kept.id == document_id(kept.text)
    (counted,), _ = run_steps(source(pii="count"), [text])
    assert counted.text == text and counted.pii == kept.pii and counted.id == document_id(text)
    (untouched,), _ = run_steps(source(), [text])
    assert untouched.text == text and untouched.pii is None


def test_copies_differing_only_in_an_address_get_one_id_and_meta_is_redacted():
    one, other = (f"Questions go to {address} before Friday." for address in (EMAIL, OTHER_EMAIL))
    docs, _ = run_steps(source(pii="redact", pii_kinds=("email",)), [one, other])
    assert docs[0].id == docs[1].id and docs[0].pii == {"email": 1}
    from curation.steps.pii import redacted_value

    assert redacted_value({"author": [EMAIL], "n": 3}, ("email",)) == {"author": ["<EMAIL>"], "n": 3}


def test_max_pii_removes_a_document_over_a_kind_or_the_total_saying_how_many():
    texts = [f"Mail {EMAIL}, {OTHER_EMAIL} and {EMAIL}.", f"Mail {EMAIL} from {IP}.", "Nothing personal here."]
    kept, removed = run_steps(source(pii="count", max_pii={"email": 2}), texts)
    assert [d.record for d in kept] == [1, 2]
    ((doc, stage, reason, detail),) = removed
    assert (doc.record, stage, reason, detail) == (0, "pii", "pii_email", "email 3 > 2")
    kept, removed = run_steps(source(pii="redact", max_pii={"total": 1}), texts)
    assert [d.record for d in kept] == [2] and [r[2:] for r in removed] == [("pii_total", "total 3 > 1"),
                                                                        ("pii_total", "total 2 > 1")]
    assert EMAIL not in removed[0][0].text  # what the funnel keeps of it is redacted


@pytest.mark.parametrize("settings, first_words", [
    ('pii = "redcat"', "source 'notes': `pii` = 'redcat' is unknown (did you mean 'redact'?)"),
    ('pii_kinds = ["mail"]', "source 'notes': pii_kinds has unknown kind 'mail'"),
    ('max_pii = "5"', "source 'notes': `max_pii` must be a whole number of spans"),
    ('max_pii = {emial = 1}', "source 'notes': max_pii.emial is not a kind the source looks for (did you mean 'email'?)"),
    ('pii_kinds = ["ip"]\npii = "count"\nmax_pii = {email = 1}', "source 'notes': max_pii.email is not a kind"),
    ('max_pii = 3', "source 'notes': `max_pii` is set but pii = \"off\" (the default of a source that is not web"),
    ('pii = "off"\ntags = ["web"]\nmax_pii = 3', "source 'notes': `max_pii` is set but pii = \"off\"; set pii"),
])
def test_pii_settings_are_checked_in_one_line(tmp_path, settings, first_words):
    sources = tmp_path / "sources.toml"
    sources.write_text(f'[[source]]\nname = "notes"\nformat = "jsonl"\npaths = ["n.jsonl"]\n{settings}\n')
    with pytest.raises(UserError) as caught:
        load_config(sources)
    assert str(caught.value).startswith(f"{sources}: {first_words}"), str(caught.value)


def test_max_pii_as_a_number_is_the_total_and_the_settings_enter_the_fingerprint(tmp_path):
    from curation.job import plan_shards
    from curation.run import input_fingerprint

    sources = tmp_path / "sources.toml"
    sources.write_text('[[source]]\nname = "notes"\nformat = "jsonl"\npaths = ["n.jsonl"]\npii = "count"\n'
                       'max_pii = 4\npii_kinds = ["email", "ip"]\n')
    (n,) = load_config(sources).sources
    assert (n.pii, n.pii_kinds, n.max_pii) == ("count", ("email", "ip"), {"total": 4})
    (tmp_path / "n.jsonl").write_text('{"text": "a"}\n')
    (shard,) = plan_shards([n])
    from dataclasses import replace

    assert input_fingerprint(shard) != input_fingerprint(replace(shard, source=replace(n, pii="redact")))


def notes_records() -> list[str]:
    """JSON lines whose documents end kept, as an exact duplicate once redacted, removed by max_pii, by language,
    too large, or malformed, each holding planted personal data."""
    def line(text, **meta):
        return json.dumps({"text": text, **meta}) + "\n"

    return [
        line(PROSE + f"Send the minutes to {EMAIL} and ring {PHONE}. The server is {IP}.", author=OTHER_EMAIL),
        line(PROSE + f"Send the minutes to {OTHER_EMAIL} and ring {PHONE}. The server is {IP}."),  # a copy, redacted
        line(PROSE + f"Keys: {SECRET}, {EMAIL}, {OTHER_EMAIL}, {EMAIL}."),  # over max_pii
        line("Die Kommission tagte am Morgen und beschloss, dass der neue Steg vor den Herbststuermen fertig sein "
             f"soll. Schreiben Sie an {EMAIL} oder rufen Sie {PHONE} an."),  # not English
        line(PROSE * 4 + f"Reach {EMAIL} at {IP}."),  # over max_doc_bytes
        '{"text": "' + f"broken record of {EMAIL} at {IP} with key {SECRET}" + '\n',  # malformed
        line(PROSE + "Nothing personal in this one at all, only the harbour."),
    ]


@pytest.fixture(scope="module")
def redacted_workspace(tmp_path_factory, slice_tokenizer) -> Path:
    folder = tmp_path_factory.mktemp("pii")
    (folder / "notes.jsonl").write_text("".join(notes_records()))
    sources = folder / "sources.toml"
    sources.write_text('[[source]]\nname = "notes"\nformat = "jsonl"\npaths = ["notes.jsonl"]\nfilters = []\n'
                       'languages = ["en"]\nmax_doc_bytes = 700\npii = "redact"\nmax_pii = {email = 2}\n'
                       '[inspect]\nremoved_sample = "all"\n')
    run_loom("-w", folder / "ws", "curate", "--sources", sources, "--tokenizer", slice_tokenizer, "--workers", 1)
    return folder / "ws"


def file_text(path: Path) -> str:
    """Every string a file holds: a Parquet file's values decoded, any other file's bytes as text."""
    if path.suffix == ".parquet":
        return json.dumps(pq.read_table(path).to_pylist(), default=str, ensure_ascii=False)
    return path.read_bytes().decode("utf-8", "replace")


def test_no_planted_personal_data_is_written_anywhere_whatever_the_fate(redacted_workspace):
    ws = redacted_workspace
    files = [p for p in ws.rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    assert any(p.suffix == ".html" for p in files) and any(p.suffix == ".jsonl" for p in files)
    for path in files:
        text = file_text(path)
        assert not [s for s in PLANTED if s in text], path
    funnel = pq.read_table(published(ws) / "manifest" / "funnel").to_pylist()
    fates = {(row["fate"], row["reason"]) for row in funnel}
    assert {("kept", None), ("duplicate", "exact_duplicate"), ("filtered", "pii_email"),
            ("filtered", "lang_not_allowed"), ("filtered", "too_large")} <= fates, fates
    assert any(row["fate"] == "malformed" for row in funnel)
    removed = pq.read_table(published(ws) / "manifest" / "removed").to_pylist()
    assert {row["reason"] for row in removed} >= {"pii_email", "too_large", "lang_not_allowed"}
    assert [row["detail"] for row in funnel if row["reason"] == "pii_email"] == ["email 3 > 2"]
    curated = pq.read_table(published(ws) / "curated").to_pylist()
    assert len(curated) == 2
    first = next(row for row in curated if row["pii_email"])
    assert "<EMAIL>" in first["text"] and "<IP_ADDRESS>" in first["text"] and "<EMAIL>" in first["meta"]
    assert (first["pii_email"], first["pii_ip"], first["dup_count"]) == (1, 1, 2)


def test_the_pii_view_counts_the_kept_rows_and_the_report_shows_them(redacted_workspace):
    from reports.views import connect

    con, views = connect(redacted_workspace)
    assert "pii" in views
    rows = {kind: (documents, spans, removed) for kind, documents, spans, removed
            in con.sql("SELECT kind, documents, spans, removed FROM pii WHERE source = 'notes'").fetchall()}
    sums = con.sql("SELECT count(*) FILTER (pii_email > 0), sum(pii_email), count(*) FILTER (pii_ip > 0), "
                   "sum(pii_ip) FROM documents").fetchall()[0]
    assert (rows["email"][:2], rows["ip"][:2]) == (sums[:2], sums[2:])
    assert rows["email"][2] == 1 and rows["total"][2] == 0 and set(rows) == {"email", "ip", "phone", "secret", "total"}
    report = (published(redacted_workspace) / "manifest" / "report.html").read_text()
    assert 'id="pii-counts"' in report


def test_a_source_that_max_pii_took_nearly_all_of_is_told_the_setting():
    from curation.funnel_warnings import Removals, source_warnings

    counts = [Removals("filtered", "pii", "pii_email", 9, "email 3 > 2"), Removals("kept", "", None, 1)]
    (warning,) = source_warnings(source(pii="count", max_pii={"email": 2}), counts)
    assert warning == ("source 'notes' lost 9 of 10 documents (90%) as filtered at pii (pii_email); if those are "
                       "wanted, raise max_pii (now {email = 2}) or drop it for it in sources.toml")


def test_the_tokenizer_and_the_quality_model_train_on_the_redacted_text(tmp_path):
    from curation.samples import source_texts

    (tmp_path / "notes.jsonl").write_text(json.dumps({"text": f"Write to {EMAIL} today."}) + "\n")
    web = SourceConfig(name="notes", format="jsonl", paths=(str(tmp_path / "notes.jsonl"),), tags=("web",))
    assert list(source_texts(web)) == ["Write to <EMAIL> today."]


def test_a_raw_start_cut_inside_an_address_loses_its_last_word_before_redacting():
    from curation.readers.fields import RAW_PREVIEW_CHARS
    from curation.steps.pii import Scrubber

    text = f"{'word ' * 500}mail {EMAIL} now"
    raw = text[:text.index(EMAIL) + 12][-RAW_PREVIEW_CHARS:]  # as a reader cuts a record's raw: half an address left
    assert "zelda.quux7" not in Scrubber(source(pii="redact")).raw_start(raw)
    assert Scrubber(source(pii="count")).raw_start(raw) == raw  # only a redacting source's is changed
