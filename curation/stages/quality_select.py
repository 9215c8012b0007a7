"""Stage 2, over all shards, in two passes of one task per shard (or per run of small shards, parts.shard_groups):
quality buckets at the corpus's score quantiles (or fixed cut points), and the documents a source's
`quality_threshold` or `keep_fraction` removes.

No process reads every score: pass one sketches each shard's scores in a DDSketch; the sketches are merged in a
tree (per source, then over the corpus) and only the merged ones, a few tens of KB each, reach the client; pass
two assigns each shard's buckets and removals from the cut points. The sketches hold the odds p / (1 - p) of each
score p, so that both saturated ends stay apart (1.00e-5 against 1.03e-5, 0.99999 against 0.9999): DDSketch's
relative accuracy on the odds is an absolute accuracy on logit(p), so every cut point's logit is within ACCURACY
of the exact quantile's (a relative error of at most ACCURACY on p near 0 and on 1 - p near 1). A document
whose score lies that close to a cut may fall on either side of it: a bucket holds 1/buckets of the documents,
and a `keep_fraction` source keeps keep_fraction * n of them, give or take those documents (plus one for the
quantile's rank rounding; ties at the cut are all kept)."""

from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from base.atomic_files import remove_tree
from base.done_markers import mark_done
from base.workspace import BUCKETS_DIR
from curation.quality import model_fingerprint
from curation.schema import PREPARED, QUALITY_BUCKETS, REMOVALS
from curation.stages.base import GlobalStage, settings_json, shared_context
from curation.stages.parts import all_parts, shard_groups, write_shard_rows
from curation.stages.survivors import partitions_for, surviving_batches

ACCURACY = 0.001  # DDSketch relative accuracy on the odds: about 20,000 bins, ~170 KB a sketch
EDGE = 1e-9  # scores are clipped to [EDGE, 1 - EDGE] before the odds
BATCH = 100_000


def odds(scores: np.ndarray) -> np.ndarray:
    p = np.clip(scores.astype(np.float64), EDGE, 1 - EDGE)
    return p / (1 - p)


def probability(odds_value: float) -> float:
    return float(odds_value / (1 + odds_value))


def shard_scores(ctx, shard) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """A prepared shard's (record, quality) of the documents still in (decontamination may run before), its
    scores as float64 and which are scored."""
    batches = list(surviving_batches(ctx, shard, BATCH, columns=["record", "quality"]))
    empty = pa.schema([PREPARED.field("record"), PREPARED.field("quality")]).empty_table()
    docs = pa.concat_tables(batches) if batches else empty
    scores = docs["quality"].to_numpy(zero_copy_only=False).astype(np.float64)
    return docs, scores, ~np.isnan(scores)


def shard_sketch(ctx, shard):
    _, scores, scored = shard_scores(ctx, shard)
    return sketch_of(odds(scores[scored]))


def sketch_of(values: np.ndarray):
    """A DDSketch of `values` (no NaN among them)."""
    from ddsketch import DDSketch

    sketch = DDSketch(ACCURACY)
    for value in values.tolist():
        sketch.add(value)
    return sketch


def merged(*sketches):
    from ddsketch import DDSketch

    out = DDSketch(ACCURACY)
    for sketch in sketches:
        out.merge(sketch)
    return out


def group_sketches(ctx, shards: list) -> dict:
    """Pass one for a run of shards (a task for many small ones): a sketch of each of their sources' scores."""
    out = {}
    for shard in shards:
        name, sketch = shard.source.name, shard_sketch(ctx, shard)
        out[name] = merged(out[name], sketch) if name in out else sketch
    return out


def merged_by_source(*parts: dict) -> dict:
    """Sketches by source, of several runs of shards, merged by source."""
    by_source = {}
    for part in parts:
        for name, sketch in part.items():
            by_source.setdefault(name, []).append(sketch)
    return {name: merged(*sketches) for name, sketches in by_source.items()}


def cut_values(by_source: dict, quantiles: list[float], keep: dict) -> tuple:
    """From the merged sketches by source: the corpus's scored count, its score at each quantile, and each
    keep_fraction source's score at its quantile."""
    corpus = merged(*by_source.values())
    return (sketch_count(corpus), [quantile_score(corpus, q) for q in quantiles],
            {name: quantile_score(by_source[name], q) for name, q in keep.items()})


def select_group(ctx, shards: list, cuts: list[float], thresholds: dict) -> int:
    return sum(select_shard(ctx, shard, cuts, thresholds) for shard in shards)


def tree_merge(sketches: list, fan_in: int = 8, merge=merged):
    """Delayed sketches merged fan_in at a time, so no task holds more than fan_in of them."""
    import dask

    while len(sketches) > 1:
        sketches = [dask.delayed(merge)(*sketches[i:i + fan_in]) for i in range(0, len(sketches), fan_in)]
    return sketches[0] if sketches else dask.delayed(merge)()


def sketch_count(sketch) -> int:
    return int(sketch.count)


def quantile_value(sketch, q: float) -> float | None:
    value = sketch.get_quantile_value(q)  # None for an empty sketch
    return None if value is None else float(value)


def quantile_score(sketch, q: float) -> float | None:
    value = quantile_value(sketch, q)
    return None if value is None else probability(value)


def bucket_array(scores: np.ndarray, cuts: list[float]) -> pa.Array:
    """Each score's bucket, 0 .. len(cuts), the cut points' `side="right"` place; null for a NaN (unscored)."""
    scored = ~np.isnan(scores)
    return pa.array(np.searchsorted(np.array(cuts), np.nan_to_num(scores), side="right"), pa.int16(), mask=~scored)


def select_shard(ctx, shard, cuts: list[float], thresholds: dict) -> int:
    """Pass two for one shard: its bucket rows and removals as its parts; returns the number removed."""
    docs, scores, scored = shard_scores(ctx, shard)
    n = docs.num_rows
    source = shard.source
    write_shard_rows(pa.table({"source": [source.name] * n, "shard": pa.array([shard.index] * n, pa.int32()),
                               "record": docs["record"], "quality_bucket": bucket_array(scores, cuts)},
                              schema=QUALITY_BUCKETS), QUALITY_SELECT.buckets_folder(ctx.workspace), source.name,
                     shard.index, QUALITY_BUCKETS, ["record"])
    reason, detail, limit = None, "", None
    if source.quality_threshold is not None:
        reason, limit = "below_threshold", source.quality_threshold
        detail = f" < {source.quality_threshold}"
    elif source.keep_fraction is not None and thresholds.get(source.name) is not None:
        reason, limit = "below_keep_fraction", thresholds[source.name]
        detail = f" < {limit:.6f}, the source's keep_fraction {source.keep_fraction} cut"
    rows = np.flatnonzero(scored & (scores < limit)) if reason else np.empty(0, np.int64)
    k = len(rows)
    write_shard_rows(pa.table({
        "source": [source.name] * k, "shard": pa.array([shard.index] * k, pa.int32()),
        "record": docs["record"].take(pa.array(rows, pa.int64())), "fate": ["low_quality"] * k,
        "stage": ["quality"] * k, "reason": [reason] * k,
        "detail": [f"quality {scores[row]:.4f}{detail}" for row in rows], "dup_cluster": pa.nulls(k, pa.string()),
    }, schema=REMOVALS), QUALITY_SELECT.removed_path(ctx.workspace), source.name, shard.index, REMOVALS, ["record"])
    return k


class QualitySelect(GlobalStage):
    name = "quality_select"
    on_client = True
    removes = True

    def inputs(self, ctx) -> str:
        selection = [(s.name, s.quality_threshold, s.keep_fraction) for s in ctx.config.sources]
        return settings_json((model_fingerprint(ctx.quality_model), asdict(ctx.config.quality), selection,
                              f"ddsketch {ACCURACY}"))

    def buckets_folder(self, ws) -> Path:
        """Each scored document's bucket, a table by shard."""
        return ws.stage_dir(self.name) / BUCKETS_DIR

    def buckets_path(self, ws) -> str:
        """All of the buckets table, as a glob for DuckDB."""
        return all_parts(self.buckets_folder(ws))

    def outputs(self, ws) -> list[Path]:
        return [*super().outputs(ws), self.buckets_folder(ws)]

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        import dask

        config, ws = ctx.config.quality, ctx.workspace
        groups = shard_groups(shards, partitions_for(ctx, shards))  # many small shards: a task per run of them
        shared = shared_context(client, ctx)
        by_source = tree_merge([dask.delayed(group_sketches)(shared, group) for group in groups], merge=merged_by_source)
        names = {s.source.name for s in shards}
        quantiles = [i / config.buckets for i in range(1, config.buckets)] if not config.cut_points else []
        keep = {s.name: 1 - s.keep_fraction for s in ctx.config.sources if s.keep_fraction is not None and s.name in names}
        # the sketches stay on the workers: the client gets the count and the cut points only
        scored, corpus_cuts, thresholds = client.compute(dask.delayed(cut_values)(by_source, quantiles, keep), sync=True)
        cuts = list(config.cut_points) if config.cut_points else (corpus_cuts if scored else [])
        for folder in (self.buckets_folder(ws), self.removed_path(ws)):
            remove_tree(folder)  # a part of a shard that this run has not is a previous run's
        removed = client.compute([dask.delayed(select_group)(shared, group, cuts, thresholds) for group in groups], sync=True)
        stats = {"cut_points": cuts, "scored": scored, "removed": int(sum(removed)), "sketch_accuracy": ACCURACY}
        mark_done(self.marker(ws), fingerprint, stats)
        return stats


QUALITY_SELECT = QualitySelect()
