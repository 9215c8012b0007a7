"""Stage 1, per shard: read -> extract -> language -> heuristic filters -> the source's own steps -> quality score
-> annotators. Every input record gets its funnel row here; malformed ones (and documents a plugin step raised on)
also go to quarantine, and the first `[inspect] removed_sample` removed documents per reason keep their text in the
shard's removed sample (published, with the later stages' removals, as manifest/removed/)."""

import functools
import json
from dataclasses import asdict
from itertools import islice
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from base.atomic_files import write_text
from base.done_markers import mark_done
from base.filenames import escaped_path
from base.parquet_files import parquet_writer, write_parquet
from base.store import as_path
from base.workspace import QUARANTINE_DIR, REMOVED_SAMPLE_DIR
from curation.config import InspectConfig, SourceConfig
from curation.document import Doc
from curation.quality import model_fingerprint
from curation.readers import read_shard
from curation.readers.fields import RAW_PREVIEW_CHARS, filtered_when_read
from curation.schema import FUNNEL, PII_COLUMNS, REMOVED_SAMPLE, prepared_schema
from curation.stages.base import ShardStage, settings_json
from curation.steps.annotate import ANNOTATORS
from curation.steps import document_steps
from curation.steps.pii import Scrubber

WRITE_BATCH = 1000


class RemovedSample:
    """The text of the first `limit` removed documents per reason (None: every one), written to a Parquet writer in
    batches of WRITE_BATCH rows as they come: never more than a batch, or `limit` texts per reason, held."""

    def __init__(self, limit: int | None, writer):
        self.limit, self.writer = limit, writer
        self.counts: dict[str, int] = {}
        self.rows: list[dict] = []

    def wants(self, reason: str) -> bool:
        """Whether the sample takes the text of one more removal for `reason`."""
        return self.limit is None or self.counts.get(reason, 0) < self.limit

    def add(self, row: dict, text: str) -> None:
        if not self.wants(row["reason"]):
            return
        self.counts[row["reason"]] = self.counts.get(row["reason"], 0) + 1
        self.rows.append({**{name: row[name] for name in REMOVED_SAMPLE.names if name != "text"}, "text": text})
        if len(self.rows) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.writer.write_table(pa.Table.from_pylist(self.rows, schema=REMOVED_SAMPLE))
            self.rows = []


class FunnelRecorder:
    """Collects one funnel row per input record of a shard, the quarantine rows of malformed ones, and (given a
    RemovedSample) the text of removed ones. Of a source with pii = "redact", what it keeps of a record the pii
    step has not seen (its text, raw start, detail) is redacted the same way (curation.steps.pii.Scrubber)."""

    def __init__(self, shard, sample: RemovedSample | None = None):
        self.shard = shard
        self.sample = sample
        self.scrub = Scrubber(shard.source)
        self.rows: list[dict] = []
        self.quarantine: list[dict] = []
        self.inputs: dict[int, str] = {}  # record -> its file, where the shard reads several

    def read(self, record) -> None:
        """Hears of each record read: of one from a file of a folder, `input` names that file."""
        if record.input is not None:
            self.inputs[record.index] = record.input

    def _row(self, record: int, doc_id, fate: str, stage: str, reason: str | None, detail: str, lang,
             text=lambda: "") -> None:
        """A record's funnel row; a removed one's `text()` also goes to the removed sample."""
        row = {"source": self.shard.source.name, "shard": self.shard.index, "input": self.input_of(record),
               "record": record, "doc_id": doc_id, "fate": fate, "stage": stage, "reason": reason,
               "detail": escaped_path(detail) or None, "lang": lang}
        self.rows.append(row)
        if fate != "kept" and self.sample is not None and self.sample.wants(reason):
            self.sample.add(row, text() or "")

    def input_of(self, record: int) -> str:
        """The file a record came from, as tables spell a path (a name's bytes that are not UTF-8 escaped)."""
        return escaped_path(self.inputs.get(record, self.shard.input))

    def set_aside(self, record) -> None:
        """A record its reader set aside: one over a limit of the source's (too_large) is filtered at `read`, any
        other is malformed and goes to quarantine too; the removed sample keeps the start of its raw."""
        fate = "filtered" if filtered_when_read(record.problem) else "malformed"
        raw, detail = self.scrub.raw_start(record.raw), self.scrub.text(record.detail)
        self._row(record.index, None, fate, "read", record.problem, detail, None, lambda: raw[:RAW_PREVIEW_CHARS])
        if fate == "malformed":
            self.quarantine.append({"input": self.input_of(record.index), "record": record.index,
                                    "reason": record.problem, "detail": escaped_path(detail), "raw": raw})

    def remove(self, doc: Doc, stage: str, reason: str, fate: str = "filtered", detail: str = "") -> None:
        """A document a step removed; one it sets aside as malformed (a plugin step that raised on it) also goes to
        quarantine, its text as the raw. One the pii step has seen holds its redacted text already."""
        seen = doc.pii is not None
        detail = detail if seen else self.scrub.text(detail)
        text = (lambda: doc.text) if seen else functools.cache(lambda: self.scrub.text(doc.text))
        self._row(doc.record, doc.id, fate, stage, reason, detail, doc.lang, text)
        if fate == "malformed":
            self.quarantine.append({"input": self.input_of(doc.record), "record": doc.record, "reason": reason,
                                    "detail": escaped_path(detail), "raw": text()})

    def kept(self, doc: Doc) -> None:
        self._row(doc.record, doc.id, "kept", "", None, "", doc.lang)

    def table(self) -> pa.Table:
        rows = sorted(self.rows, key=lambda row: row["record"])
        return pa.Table.from_pylist(rows, schema=FUNNEL)


@functools.cache
def _steps_for(source_json: str, quality_model: str | None, annotators: tuple) -> list:
    return document_steps(SourceConfig(**json.loads(source_json)), quality_model, annotators)


def steps_for(source: SourceConfig, quality_model: str | None = None, annotators: tuple = ()) -> list:
    """The document steps of a source, built once per worker process (models load once)."""
    return _steps_for(json.dumps(asdict(source), sort_keys=True), quality_model, tuple(annotators))


def annotator_settings(annotators) -> list[dict]:
    """What of each annotator `prepare` depends on: its settings but `buckets` (a later stage's), and its kind's
    digest (the model file's, the Python module's source), so a changed model or edited function redoes it."""
    return [{**{k: v for k, v in asdict(a).items() if k != "buckets"}, "digest": ANNOTATORS[a.kind].digest(a)}
            for a in annotators]


def removed_sample_setting(inspect) -> str:
    """[inspect] removed_sample as a fingerprint: "" for the default, so that no fingerprint changes without it."""
    if inspect.removed_sample == InspectConfig.removed_sample:
        return ""
    return settings_json({"removed_sample": inspect.removed_sample})


class Prepare(ShardStage):
    name = "prepare"

    def inputs(self, ctx) -> str:
        model = model_fingerprint(ctx.quality_model)
        if not ctx.config.annotators:  # what it was before annotators: no fingerprint changes without them
            return model
        return settings_json([model, annotator_settings(ctx.config.annotators)])

    def own_inputs(self, ctx) -> str:
        """How many removed texts to keep: it changes the removed sample only, so no later stage is redone."""
        return removed_sample_setting(ctx.config.inspect)

    def funnel_path(self, ws, shard) -> Path:
        return ws.stage_part("funnel", shard.source.name, shard.index)

    def quarantine_path(self, ws, shard) -> Path:
        """The shard's malformed records; published as the generation's quarantine/<source>/part-NNNNN.jsonl."""
        return ws.stage_part(QUARANTINE_DIR, shard.source.name, shard.index, "jsonl")

    def removed_sample_path(self, ws, shard) -> Path:
        """The text of the shard's first `removed_sample` removed documents per reason (REMOVED_SAMPLE, in the order
        they were removed); curation.manifest_parts publishes it with the later stages' removals."""
        return ws.stage_part(REMOVED_SAMPLE_DIR, shard.source.name, shard.index)

    def outputs(self, ws, shard) -> list[Path]:
        return [*super().outputs(ws, shard), self.funnel_path(ws, shard), self.quarantine_path(ws, shard),
                self.removed_sample_path(ws, shard)]

    def run(self, ctx, shard, fingerprint: str) -> dict:
        ws = ctx.workspace
        with parquet_writer(self.removed_sample_path(ws, shard), REMOVED_SAMPLE) as sample_writer:
            sample = RemovedSample(ctx.config.inspect.removed_sample, sample_writer)
            funnel = FunnelRecorder(shard, sample)
            n_kept = self.write_prepared(ctx, shard, funnel)
            sample.flush()
        write_parquet(funnel.table(), self.funnel_path(ws, shard))
        quarantine = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in funnel.quarantine)
        write_text(quarantine, self.quarantine_path(ws, shard))
        stats = {"records": len(funnel.rows), "kept": n_kept, "malformed": len(funnel.quarantine)}
        mark_done(self.marker(ws, shard), fingerprint, stats)
        return stats

    def write_prepared(self, ctx, shard, funnel: FunnelRecorder) -> int:
        """Runs the source's steps over the shard's records, writing the documents they keep; returns their number."""

        def good_records() -> Iterator[Doc]:
            for record in read_shard(shard.source, as_path(shard.input), shard.span, shard.limit):
                funnel.read(record)
                if record.problem:
                    funnel.set_aside(record)
                else:
                    yield Doc(record=record.index, text=record.text, meta=record.meta)

        docs = good_records()
        annotators = ctx.config.annotators
        for step in steps_for(shard.source, ctx.quality_model, annotators):
            docs = step.run(docs, funnel)
        n_kept = 0
        with parquet_writer(self.part_path(ctx.workspace, shard), prepared_schema(annotators)) as writer:
            while batch := list(islice(docs, WRITE_BATCH)):
                writer.write_table(prepared_table(batch, annotators))
                for doc in batch:
                    funnel.kept(doc)
                n_kept += len(batch)
        return n_kept


def prepared_table(docs: list[Doc], annotators: tuple = ()) -> pa.Table:
    """The prepared rows of `docs`, with each annotator's score (null where it does not cover the source)."""
    return pa.Table.from_pylist(
        [{"record": d.record, "id": d.id, "text": d.text, "lang": d.lang, "lang_score": d.lang_score,
          "quality": d.quality, "n_chars": len(d.text), "meta": json.dumps(d.meta, ensure_ascii=False, default=str, sort_keys=True),
          **{column: (d.pii or {}).get(kind, 0) for kind, column in PII_COLUMNS.items()},
          **{a.name: d.annotations.get(a.name) for a in annotators}}
         for d in docs],
        schema=prepared_schema(annotators),
    )


PREPARE = Prepare()
