"""Stage 2, over all shards, when sources.toml has a [decontaminate] table: documents that hold text of an eval set
(benchmark leakage) are removed with fate `contaminated`, reason `eval:NAME`. It runs right after `prepare`, so
that every copy of a leaked text is reported as contaminated, not all but one as duplicates.

The client reads the eval sets (small: benchmarks) and writes one Bloom filter of each set's n-grams to
work/decontaminate/filters/NAME.bloom (curation.decontamination); one task per shard then reads the filters (once
per worker process, by digest) and judges the shard's documents still in. Each task writes its shard's removals and
its evidence rows (curation.schema.CONTAMINATION: every set a document overlaps at the threshold or more, with the
span where the matches are densest), both tables by shard; the client gets counts. Without the table the stage is
left out of the job (`enabled`), so nothing else changes: not a fingerprint, not an output."""

import functools
import json
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa

from base.atomic_files import atomic_path, remove_tree
from base.digests import file_digest
from base.done_markers import mark_done
from base.parquet_files import read_parquet
from base.small_files import read_text
from base.store import as_path
from base.workspace import EVIDENCE_DIR, FILTERS_DIR
from curation.decontamination_config import DecontaminationConfig
from curation.decontamination import eval_filter, eval_texts, load_filter, prepare, prepared_overlap
from curation.readers.inputs import eval_set_files
from curation.schema import CONTAMINATION, REMOVALS
from curation.stages.base import GlobalStage, settings_json, shared_context
from curation.stages.parts import all_parts, write_shard_rows
from curation.stages.prepare import PREPARE
from curation.stages.survivors import surviving_batches

BATCH = 1000
FATE = "contaminated"


def build_filters(config: DecontaminationConfig, folder: Path) -> list[dict]:
    """Each eval set's Bloom filter written to `folder`/NAME.bloom; returns what the tasks and the stats need of
    each: its file and digest, its documents, n-grams (the filter's capacity), false positive rate and size."""
    remove_tree(folder)
    filters = []
    for e in config.evals:
        texts = eval_texts(e)
        bloom, ngrams = eval_filter(texts, config.ngram, config.false_positive_rate)
        path = folder / f"{e.name}.bloom"
        with atomic_path(path) as tmp:
            tmp.write_bytes(bloom.save_bytes())
        filters.append({"name": e.name, "file": str(path), "digest": file_digest(path), "documents": len(texts),
                        "ngrams": ngrams, "false_positive_rate": config.false_positive_rate,
                        "bits": bloom.size_in_bits})
    return filters


@functools.lru_cache(maxsize=32)
def cached_filter(path: str, digest: str):
    """A filter read once per worker process; the digest in the key makes a rebuilt filter read again."""
    return load_filter(as_path(path).read_bytes())


def judge_shard(ctx, shard, filters: list[dict]) -> int:
    """One shard's documents still in, against every filter: its removals and evidence parts; returns how many
    documents it removed."""
    config = ctx.config.decontaminate
    blooms = [(f["name"], cached_filter(f["file"], f["digest"])) for f in filters]
    inputs = record_inputs(ctx, shard)
    removed, evidence = [], []
    for docs in surviving_batches(ctx, shard, BATCH, columns=["record", "id", "text"]):
        for record, doc_id, text in zip(*(docs[c].to_pylist() for c in ("record", "id", "text"))):
            prepared = prepare(text, config)
            hits = [(name, o) for name, bloom in blooms
                    if (o := prepared_overlap(prepared, bloom, config.ngram)).fraction >= config.threshold]
            if not hits:
                continue
            name, worst = max(hits, key=lambda hit: hit[1].fraction)  # the first set of the largest fraction
            unit = "paragraph" if config.scope == "paragraph" else "document"
            removed.append({"record": record, "reason": f"eval:{name}",
                            "detail": f"{worst.matched} of a {unit}'s {worst.ngrams} {config.ngram}-grams "
                                      f"({worst.fraction:.2f}) are in eval set {name}"})
            evidence += [{"record": record, "doc_id": doc_id, "input": inputs.get(record), "eval_set": set_name,
                          "matched_ngrams": o.matched, "ngrams": o.ngrams, "fraction": o.fraction, "span": o.span}
                         for set_name, o in hits]
    write_rows(ctx, shard, removed, evidence)
    return len(removed)


def record_inputs(ctx, shard) -> dict[int, str]:
    """The input file of each record of a shard, as the funnel names it."""
    table = read_parquet(PREPARE.funnel_path(ctx.workspace, shard), columns=["record", "input"])
    return dict(zip(table["record"].to_pylist(), table["input"].to_pylist()))


def write_rows(ctx, shard, removed: list[dict], evidence: list[dict]) -> None:
    source, index, ws = shard.source.name, shard.index, ctx.workspace
    where = {"source": source, "shard": index}
    removals = pa.Table.from_pylist([{**where, **row, "fate": FATE, "stage": DECONTAMINATE.name, "dup_cluster": None}
                                     for row in removed], schema=REMOVALS)
    write_shard_rows(removals, DECONTAMINATE.removed_path(ws), source, index, REMOVALS, ["record"])
    rows = pa.Table.from_pylist([{**where, **row} for row in evidence], schema=CONTAMINATION)
    write_shard_rows(rows, DECONTAMINATE.evidence_folder(ws), source, index, CONTAMINATION, ["record", "eval_set"])


class Decontaminate(GlobalStage):
    name = "decontaminate"
    on_client = True
    removes = True

    def enabled(self, ctx) -> bool:
        return ctx.config.decontaminate is not None

    def inputs(self, ctx) -> str:
        """The settings and each eval set's files by content, so that a changed set redoes the stage."""
        config = ctx.config.decontaminate
        settings = {k: v for k, v in asdict(config).items() if k != "evals"}
        sets = [(e.name, e.text, [(f, file_digest(f)) for f in eval_set_files(e)]) for e in config.evals]
        return settings_json((settings, sets))

    def filters_folder(self, ws) -> Path:
        return ws.stage_dir(self.name) / FILTERS_DIR

    def evidence_folder(self, ws) -> Path:
        """A row per contaminated document and set (CONTAMINATION), a table by shard."""
        return ws.stage_dir(self.name) / EVIDENCE_DIR

    def evidence_path(self, ws) -> str:
        return all_parts(self.evidence_folder(ws))

    def outputs(self, ws) -> list[Path]:
        return [*super().outputs(ws), self.evidence_folder(ws), self.filters_folder(ws)]

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        import dask

        ws, config = ctx.workspace, ctx.config.decontaminate
        filters = build_filters(config, self.filters_folder(ws))
        for folder in (self.removed_path(ws), self.evidence_folder(ws)):
            remove_tree(folder)  # a part of a shard that this run has not is a previous run's
        shared = shared_context(client, ctx)
        removed = client.compute([dask.delayed(judge_shard)(shared, s, filters) for s in shards], sync=True)
        stats = {"removed": int(sum(removed)), "ngram": config.ngram, "threshold": config.threshold,
                 "scope": config.scope, "min_words": config.min_words,
                 "eval_sets": [{k: v for k, v in f.items() if k != "file"} for f in filters]}
        mark_done(self.marker(ws), fingerprint, stats)
        return stats


def stage_stats(ws) -> dict:
    """What the finished stage recorded: its settings and each set's filter (for the manifest)."""
    return json.loads(read_text(DECONTAMINATE.marker(ws)))


DECONTAMINATE = Decontaminate()
