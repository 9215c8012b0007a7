"""`Workspace.show`: one input record's whole story in the published generation (`loom show INPUT#RECORD` or a doc
id): where it came from, the start of its raw bytes, its extracted text, language, quality, annotators, the verdict
of the stage that removed it (or none: kept), its duplicates, domain and tokens. Looked up by the funnel's
(input, record) or doc id, the text read from the curated part (a kept document) or the removed sample."""

import json
import os
import re
from dataclasses import asdict, dataclass, field

from base.errors import UserError, did_you_mean
from base.filenames import escaped_path
from base.store import is_url
from curation.schema import PII_COLUMNS

TEXT_CHARS = 2000  # of the extracted text, by default
TOKENS_SHOWN = 20
SAME_DOC_ID_SHOWN = 20  # other records with its doc id listed
CLOSE_INPUTS = 2  # input paths at most this much longer or shorter than the one typed are compared for a near miss
FIND_RECORDS = 'loom sql "SELECT input, record FROM funnel LIMIT 5"'
DOC_ID = re.compile(r"[0-9a-f]{32}")
NOT_SAMPLED = 'not in the removed sample; set [inspect] removed_sample = "all" to keep every one'
NO_SAMPLE = "this generation was published before Loom kept removed texts"
NEVER_EXTRACTED = "none: the record was set aside as it was read (its raw bytes' start is above)"
DOCUMENT_FIELDS = ("id", "source", "shard", "row", "lang", "lang_score", "n_chars", "n_tokens", "quality",
                   "quality_bucket", "dup_cluster", "dup_count", "domain", "domain_distance",
                   *PII_COLUMNS.values())  # doc_stats' own columns: the others are annotators'


@dataclass
class RecordStory:
    """What became of one input record. `raw`, `text` and `tokens` are None where they cannot be shown, and the
    matching `*_note` says why."""

    source: str
    shard: int
    input: str
    record: int
    doc_id: str | None
    fate: str
    stage: str | None
    reason: str | None
    detail: str | None
    raw: str | None = None  # the start of its raw bytes, escaped (curation.readers.raw_record)
    raw_note: str | None = None
    text: str | None = None  # at most `text_chars` of its extracted text
    text_chars: int | None = None  # the whole text's length
    text_note: str | None = None
    lang: str | None = None
    lang_score: float | None = None
    quality: float | None = None
    quality_bucket: int | None = None
    annotators: dict = field(default_factory=dict)  # each annotator's score (and bucket) of a kept document
    curated_part: str | None = None  # a kept document's part in the generation, and its row there
    row: int | None = None
    dup_cluster: str | None = None
    dup_count: int | None = None
    kept_copy: str | None = None  # a duplicate's copy that was kept, as input#record
    same_doc_id: list[str] = field(default_factory=list)  # the other records with this doc id: "input#record fate"
    domain: int | None = None
    domain_name: str | None = None
    n_tokens: int | None = None
    tokens: list[int] | None = None  # the first TOKENS_SHOWN token ids
    decoded: list[str] | None = None  # each of those decoded with the generation's tokenizer
    tokens_note: str | None = None

    @property
    def where(self) -> str:
        return f"{self.input}#{self.record}"

    @property
    def verdict(self) -> str:
        """`kept`, or `filtered at gopher_quality: gopher_short_doc (words 31 < 50)`."""
        if self.fate == "kept":
            return "kept"
        return (f"{self.fate} at {self.stage}: {self.reason}" if self.stage else f"{self.fate}: {self.reason}") + (
            f" ({self.detail})" if self.detail else "")

    def as_dict(self) -> dict:
        return {**asdict(self), "where": self.where, "verdict": self.verdict}


def show(ws, target: str, text_chars: int = TEXT_CHARS) -> RecordStory:
    """The story of the record `target` names: `INPUT#RECORD` (INPUT as the funnel has it, or a path relative to
    the current folder or to the workspace, as sources.toml's paths are) or a doc id (of several records with it, the kept one, else the first)."""
    from reports.sql import open_views

    views = open_views(ws.files.root)
    if "funnel" not in views.names:
        raise UserError(f"{ws.files.root} has nothing to query yet; run `loom curate` (or `loom quickstart`) first")
    con = views.con
    story = RecordStory(**funnel_row(con, target, str(ws.files.root)))
    gen = ws.files.published()
    info = json.loads(gen.curation_info.read_text(encoding="utf-8"))
    add_raw(story, info)
    if story.fate == "kept":
        add_document(con, gen, story, text_chars)
        add_tokens(story, gen, info, ws.files)
    else:
        add_removed_text(con, views.names, story, text_chars)
    add_duplicates(con, story)
    if story.domain is not None and "domains" in views.names:
        names = con.execute("SELECT any_value(name) FROM domains WHERE domain = ?", [story.domain]).fetchall()
        story.domain_name = names[0][0] if names else None
    return story


FUNNEL_COLUMNS = "source, shard, input, record, doc_id, fate, stage, reason, detail, dup_cluster, lang"


def funnel_row(con, target: str, root: str) -> dict:
    """The funnel's row of the record `target` names, as RecordStory's fields; one line naming it when none is."""
    named = re.fullmatch(r"(?P<input>.+)#(?P<record>[0-9]+)", target)
    if named:
        spelled = funnel_input(con, named["input"], root)
        rows = con.execute(f"SELECT {FUNNEL_COLUMNS} FROM funnel WHERE input = ? AND record = ?",
                           [spelled, int(named["record"])]).fetchall()
        if not rows:
            raise UserError(f"unknown record {spelled}#{named['record']}: that input has no record "
                            f"{named['record']}; find valid ones with {FIND_RECORDS}")
    elif DOC_ID.fullmatch(target):
        rows = con.execute(f"SELECT {FUNNEL_COLUMNS} FROM funnel WHERE doc_id = ? "
                           "ORDER BY fate = 'kept' DESC, source, shard, record LIMIT 1", [target]).fetchall()
        if not rows:
            raise UserError(f"unknown doc id {target}: no record of the published curation has it; find valid "
                            f"ones with {FIND_RECORDS.replace('input, record', 'doc_id')}")
    else:
        rows = whole_input_record(con, funnel_input(con, target, root))
    names = [c.strip() for c in FUNNEL_COLUMNS.split(",")]
    return dict(zip(names, rows[0]))


def whole_input_record(con, spelled: str) -> list[tuple]:
    """The one record of an input named without #RECORD (a folder format's file); refused when it has several."""
    rows = con.execute(f"SELECT {FUNNEL_COLUMNS} FROM funnel WHERE input = ? ORDER BY record LIMIT 2",
                       [spelled]).fetchall()
    if len(rows) > 1:
        raise UserError(f"{spelled} holds several records; name one as INPUT#RECORD (the first is "
                        f"{spelled}#{rows[0][3]}); find valid ones with {FIND_RECORDS}")
    return rows


def funnel_input(con, typed: str, root: str) -> str:
    """The funnel's `input` that `typed` names: spelled as the funnel has it, or a path relative to the current
    folder or to the workspace `root`, or absolute, compared normalized. One line with the closest input (within 2
    edits) when none is."""
    spelled = escaped_path(typed)
    tries = list(dict.fromkeys([spelled, normalized(spelled, root), normalized(spelled)]))
    found = con.execute("SELECT DISTINCT input FROM funnel WHERE list_contains(?, input)", [tries]).fetchall()
    if found:
        return found[0][0]
    inputs = {normalized(name): name for (name,) in con.sql("SELECT DISTINCT input FROM funnel").fetchall()}
    if normalized(spelled) in inputs:
        return inputs[normalized(spelled)]
    close = [name for name in inputs if abs(len(name) - len(tries[-1])) <= CLOSE_INPUTS]
    raise UserError(f"unknown input {spelled}: no record of the published curation comes from it"
                    f"{did_you_mean(tries[-1], close)}; find valid ones with {FIND_RECORDS}")


def normalized(path: str, folder: str | None = None) -> str:
    """A local path absolute (relative to `folder`, by default the current one) and normalized (`a/../b` as `b`); a
    URL as it is."""
    return path if is_url(path) else os.path.normpath(os.path.join(folder or os.getcwd(), path))


def add_raw(story: RecordStory, info: dict) -> None:
    from curation.readers import READERS
    from curation.readers.raw_record import escaped_bytes, input_path, raw_start
    from curation.readers.streams import Corrupt, Truncated

    fmt = info["sources"].get(story.source, {}).get("format")
    if fmt not in READERS:
        story.raw_note = f"the format of source '{story.source}' is not known here ({fmt})"
        return
    try:
        raw = raw_start(READERS[fmt].reader, input_path(story.input), story.record)
    except FileNotFoundError:
        story.raw_note = f"the input is gone: no file {story.input}"
        return
    except (OSError, ValueError, EOFError, Corrupt, Truncated) as err:
        story.raw_note = f"cannot read the input {story.input} ({type(err).__name__}: {err}); has it changed?"
        return
    if raw is None:
        story.raw_note = f"format {fmt} does not say where its records' bytes are"
    else:
        story.raw = escaped_bytes(raw)


def add_document(con, gen, story: RecordStory, text_chars: int) -> None:
    """A kept document's manifest row, and its text and token ids from its curated part's row."""
    from base.parquet_files import parquet_row

    relation = con.execute("SELECT * FROM doc_stats WHERE id = ? AND source = ? LIMIT 1", [story.doc_id, story.source])
    rows = relation.fetchall()
    if not rows:
        story.text_note = "its row is missing from the manifest's documents"
        return
    document = dict(zip([d[0] for d in relation.description], rows[0]))
    for name in ("lang", "lang_score", "quality", "quality_bucket", "dup_cluster", "dup_count", "domain", "n_tokens",
                 "row"):
        setattr(story, name, document[name])
    story.curated_part = document["shard"]
    story.annotators = {k: v for k, v in document.items() if k not in DOCUMENT_FIELDS}
    values = parquet_row(gen.root / story.curated_part, story.row, ["text", "input_ids"])
    if values is not None:
        text, story.tokens = values["text"][0].as_py(), values["input_ids"][0].as_py()[:TOKENS_SHOWN]
        story.text, story.text_chars = text[:text_chars], len(text)


def add_removed_text(con, views: list[str], story: RecordStory, text_chars: int) -> None:
    """A removed record's text from the removed sample, when it is in it; a record set aside unread has none (the
    sample holds its raw start, which the raw bytes show)."""
    if story.doc_id is None:
        story.text_note = NEVER_EXTRACTED
        return
    rows = (con.execute("SELECT text FROM removed WHERE source = ? AND input = ? AND record = ? LIMIT 1",
                        [story.source, story.input, story.record]).fetchall() if "removed" in views else [])
    if not rows or rows[0][0] is None:
        sampled = "removed" in views and con.sql("SELECT 1 FROM removed LIMIT 1").fetchall()
        story.text_note = NOT_SAMPLED if sampled else NO_SAMPLE
        return
    story.text, story.text_chars = rows[0][0][:text_chars], len(rows[0][0])


def add_duplicates(con, story: RecordStory) -> None:
    """The other records with its doc id (exact copies, or records removed before dedup), and a duplicate's copy
    that was kept (of an exact duplicate the one with its doc id, of a near one its cluster's survivor)."""
    if story.doc_id is None:
        return
    others = con.execute("""SELECT input, record, fate FROM funnel WHERE doc_id = ? AND NOT (input = ? AND record = ?)
                            ORDER BY source, shard, record LIMIT ?""",
                         [story.doc_id, story.input, story.record, SAME_DOC_ID_SHOWN + 1]).fetchall()
    story.same_doc_id = [f"{i}#{r} {fate}" for i, r, fate in others[:SAME_DOC_ID_SHOWN]]
    if len(others) > SAME_DOC_ID_SHOWN:
        story.same_doc_id.append(f"... more: loom sql \"SELECT input, record, fate FROM funnel WHERE doc_id = "
                                 f"'{story.doc_id}'\"")
    if story.fate == "duplicate":
        kept = con.execute("SELECT input, record FROM funnel WHERE doc_id = ? AND fate = 'kept' LIMIT 1",
                           [story.dup_cluster or story.doc_id]).fetchall()
        story.kept_copy = f"{kept[0][0]}#{kept[0][1]}" if kept else None


def add_tokens(story: RecordStory, gen, info: dict, files) -> None:
    """The first token ids decoded with the tokenizer the generation was curated with (its file, or the
    workspace's when it has the same fingerprint), when either is still there."""
    from curation.tokenizer import load_tokenizer, tokenizer_fingerprint

    if not story.tokens:
        return
    for path in (info.get("tokenizer"), files.tokenizer):
        try:
            if path and tokenizer_fingerprint(path) == info.get("tokenizer_fingerprint"):
                tokenizer, _ = load_tokenizer(str(path))
                story.decoded = [tokenizer.decode([t], skip_special_tokens=False) for t in story.tokens]
                return
        except (OSError, UserError):
            continue
    story.tokens_note = "the tokenizer it was curated with is gone: token ids only"
