"""Annotator buckets, over all shards (only with an [[annotate]] table that sets `buckets`): each bucketed
annotator's scores cut at the corpus's quantiles into NAME_bucket 0 .. buckets-1, as quality_select cuts quality.

Pass one sketches each shard's scores in a DDSketch per annotator (of the documents still in; null scores, of the
sources an annotator does not cover, left out); the sketches are merged in a tree (quality_select.tree_merge) and
only the cut points reach the client; pass two writes each shard's buckets, a table by shard that tokenize reads.
Scores are any floats, not probabilities: they are sketched as they are (DDSketch keeps zero and negative values
apart), so a cut point is within ACCURACY of its exact quantile, relatively. The record curation.json keeps of each
annotator (`annotators_record`) is here too: its cut points come from this stage."""

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from base.atomic_files import remove_tree
from base.done_markers import mark_done
from base.small_files import read_text
from base.workspace import BUCKETS_DIR
from curation.schema import bucket_fields
from curation.stages.base import GlobalStage, settings_json, shared_context
from curation.stages.parts import write_shard_rows
from curation.stages.quality_select import (ACCURACY, bucket_array, quantile_value, sketch_count, sketch_of,
                                            tree_merge)
from curation.stages.survivors import shard_rows, surviving_batches
from curation.steps.annotate import ANNOTATORS
from curation.steps.annotate.step import covers

BATCH = 100_000


def bucketed(annotators) -> list:
    return [a for a in annotators if a.buckets]


def buckets_schema(annotators) -> pa.Schema:
    return pa.schema([("source", pa.string()), ("shard", pa.int32()), ("record", pa.int64()),
                      *bucket_fields(annotators)])


def shard_scores(ctx, shard, names: list[str]) -> pa.Table:
    """The shard's `record` and annotator columns of its documents still in."""
    batches = list(surviving_batches(ctx, shard, BATCH, columns=["record", *names]))
    return pa.concat_tables(batches) if batches else None


def scores_of(docs: pa.Table | None, name: str) -> np.ndarray:
    """An annotator's scores as float64, NaN where null."""
    return np.empty(0) if docs is None else docs[name].to_numpy(zero_copy_only=False).astype(np.float64)


def shard_sketches(ctx, shard, names: list[str]) -> list:
    """A sketch per annotator of the shard's scores."""
    docs = shard_scores(ctx, shard, names)
    return [sketch_of(scores[~np.isnan(scores)]) for scores in (scores_of(docs, name) for name in names)]


def bucket_shard(ctx, shard, annotators: list, cuts: dict[str, list[float]]) -> int:
    """Pass two for one shard: its buckets as its part; returns its number of rows."""
    names = [a.name for a in annotators]
    docs = shard_scores(ctx, shard, names)
    n = 0 if docs is None else docs.num_rows
    columns = {"source": pa.array([shard.source.name] * n, pa.string()),
               "shard": pa.array([shard.index] * n, pa.int32()),
               "record": docs["record"] if docs is not None else pa.array([], pa.int64())}
    for name in names:
        columns[f"{name}_bucket"] = bucket_array(scores_of(docs, name), cuts[name])
    schema = buckets_schema(annotators)
    return write_shard_rows(pa.table(columns, schema=schema), ANNOTATE_BUCKETS.buckets_folder(ctx.workspace),
                            shard.source.name, shard.index, schema, ["record"])


class AnnotateBuckets(GlobalStage):
    name = "annotate_buckets"
    on_client = True

    def enabled(self, ctx) -> bool:
        return bool(bucketed(ctx.config.annotators))

    def inputs(self, ctx) -> str:
        return settings_json(([(a.name, a.buckets) for a in bucketed(ctx.config.annotators)], f"ddsketch {ACCURACY}"))

    def buckets_folder(self, ws) -> Path:
        """Each document's buckets, a table by shard."""
        return ws.stage_dir(self.name) / BUCKETS_DIR

    def outputs(self, ws) -> list[Path]:
        return [*super().outputs(ws), self.buckets_folder(ws)]

    def bucket_rows(self, ctx, shard) -> pa.Table | None:
        """`record` and the NAME_bucket columns of a shard's documents, for tokenize; None when disabled."""
        if not self.enabled(ctx):
            return None
        names = [f.name for f in bucket_fields(ctx.config.annotators)]
        return shard_rows(self.buckets_folder(ctx.workspace), shard, ["record", *names])

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        import dask

        annotators = bucketed(ctx.config.annotators)
        names = [a.name for a in annotators]
        scored = {a.name: [s for s in shards if covers(a, s.source.name)] for a in annotators}
        shared = shared_context(client, ctx)
        per_shard = {s.key: dask.delayed(shard_sketches)(shared, s, names) for s in shards}
        corpora = [tree_merge([per_shard[s.key][i] for s in scored[name]]) for i, name in enumerate(names)]
        wanted = [dask.delayed(sketch_count)(corpus) for corpus in corpora]
        for annotator, corpus in zip(annotators, corpora):
            wanted += [dask.delayed(quantile_value)(corpus, i / annotator.buckets) for i in range(1, annotator.buckets)]
        values = client.compute(wanted, sync=True)  # the client gets counts and cut points only
        counts, cut_values = values[:len(names)], iter(values[len(names):])
        cuts = {a.name: [next(cut_values) for _ in range(1, a.buckets)] for a in annotators}
        cuts = {name: (cut if count else []) for (name, cut), count in zip(cuts.items(), counts)}
        remove_tree(self.buckets_folder(ctx.workspace))  # a part of a shard that this run has not is a previous run's
        client.compute([dask.delayed(bucket_shard)(shared, s, annotators, cuts) for s in shards], sync=True)
        stats = {"cut_points": cuts, "scored": dict(zip(names, map(int, counts))), "sketch_accuracy": ACCURACY}
        mark_done(self.marker(ctx.workspace), fingerprint, stats)
        return stats


def annotators_record(ctx) -> list[dict]:
    """What curation.json keeps of each annotator: name, kind, the sources it scored, buckets, the cut points and
    its kind's digest (the model file's, the Python module's source)."""
    cuts = json.loads(read_text(ANNOTATE_BUCKETS.marker(ctx.workspace)))["cut_points"] \
        if ANNOTATE_BUCKETS.enabled(ctx) else {}
    return [{"name": a.name, "kind": a.kind,
             "sources": [s.name for s in ctx.config.sources if covers(a, s.name)], "buckets": a.buckets,
             "cut_points": cuts.get(a.name, []), "digest": ANNOTATORS[a.kind].digest(a)}
            for a in ctx.config.annotators]


ANNOTATE_BUCKETS = AnnotateBuckets()
