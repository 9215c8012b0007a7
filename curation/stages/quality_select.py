"""Stage 2, over all shards: quality buckets at the corpus's score quantiles (or fixed cut points), and the
documents a source's `quality_threshold` or `keep_fraction` removes."""

from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from curation.quality import model_fingerprint
from curation.schema import QUALITY_BUCKETS, REMOVALS
from curation.stages.base import GlobalStage, settings_json
from curation.stages.survivors import prepared_columns
from loom.io import mark_done, write_parquet


def quality_cut_points(scores: np.ndarray, config) -> list[float]:
    if config.cut_points:
        return list(config.cut_points)
    if len(scores) == 0:
        return []
    return [float(q) for q in np.quantile(scores, [i / config.buckets for i in range(1, config.buckets)])]


class QualitySelect(GlobalStage):
    name = "quality_select"
    removes = True

    def inputs(self, ctx) -> str:
        selection = [(s.name, s.quality_threshold, s.keep_fraction) for s in ctx.config.sources]
        return settings_json((model_fingerprint(ctx.quality_model), asdict(ctx.config.quality), selection))

    def buckets_path(self, ws) -> Path:
        return ws.stage_dir(self.name) / "buckets.parquet"

    def outputs(self, ws) -> list[Path]:
        return [*super().outputs(ws), self.buckets_path(ws)]

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        """Each scored document's bucket, and the documents removed for their score (ranked by score, then id,
        so ties are cut deterministically)."""
        docs = prepared_columns(ctx, shards, ["record", "id", "quality"])
        scores = docs["quality"].to_numpy(zero_copy_only=False)
        scored = ~np.isnan(scores.astype(np.float64))
        cuts = quality_cut_points(scores[scored], ctx.config.quality)
        buckets = np.where(scored, np.searchsorted(np.array(cuts), np.nan_to_num(scores), side="right"), -1)
        removed = []
        source_column = np.array(docs["source"].to_pylist(), dtype=object)
        ids = docs["id"].to_pylist()
        for source in {s.source.name: s.source for s in shards}.values():
            rows = np.flatnonzero((source_column == source.name) & scored)
            if source.quality_threshold is not None:
                removed += [(row, "below_threshold", f"quality {scores[row]:.4f} < {source.quality_threshold}")
                            for row in rows[scores[rows] < source.quality_threshold]]
            elif source.keep_fraction is not None and len(rows):
                ranked = sorted(rows, key=lambda row: (-scores[row], ids[row]))
                keep = round(source.keep_fraction * len(ranked))
                removed += [(row, "below_keep_fraction", f"rank {place} of {len(ranked)} by quality; keep_fraction keeps {keep}")
                            for place, row in enumerate(ranked[keep:], start=keep + 1)]
        ws = ctx.workspace
        write_parquet(pa.table({"source": docs["source"], "shard": docs["shard"], "record": docs["record"],
                                "quality_bucket": pa.array(buckets, pa.int16(), mask=~scored)}, schema=QUALITY_BUCKETS),
                      self.buckets_path(ws))
        removed.sort()
        rows = pa.array([row for row, _, _ in removed], pa.int64())
        write_parquet(pa.table({
            "source": docs["source"].take(rows), "shard": docs["shard"].take(rows),
            "record": docs["record"].take(rows), "fate": ["low_quality"] * len(removed),
            "stage": ["quality"] * len(removed), "reason": [reason for _, reason, _ in removed],
            "detail": [detail for _, _, detail in removed], "dup_cluster": pa.nulls(len(removed), pa.string()),
        }, schema=REMOVALS), self.removed_path(ws))
        stats = {"cut_points": cuts, "scored": int(scored.sum()), "removed": len(removed)}
        mark_done(self.marker(ws), fingerprint, stats)
        return stats


QUALITY_SELECT = QualitySelect()
