"""Stage 4, per shard: for the documents still in, their shingle hash sets (what pairs are verified on), MinHash
signatures and LSH band keys."""

from pathlib import Path

import numpy as np
import pyarrow as pa

from base.done_markers import mark_done
from base.parquet_files import parquet_writer
from curation.minhash import BANDS, SHINGLES, band_keys, doc_key, hash_signatures, shingle_hashes, signature_schema
from curation.stages.base import ShardStage, settings_json
from curation.stages.survivors import surviving_batches

BATCH = 1000


class MinHashSignatures(ShardStage):
    name = "minhash"

    def enabled(self, ctx) -> bool:
        return ctx.config.dedup.enabled

    def inputs(self, ctx) -> str:
        d = ctx.config.dedup
        return settings_json([d.enabled, d.scope, d.ngram, d.bands, d.rows, d.seed])

    def bands_path(self, ws, shard) -> Path:
        return ws.stage_part("minhash_bands", shard.source.name, shard.index)

    def shingles_path(self, ws, shard) -> Path:
        return ws.stage_part("minhash_shingles", shard.source.name, shard.index)

    def outputs(self, ws, shard) -> list[Path]:
        return [*super().outputs(ws, shard), self.bands_path(ws, shard), self.shingles_path(ws, shard)]

    def run(self, ctx, shard, fingerprint: str) -> dict:
        config, ws = ctx.config.dedup, ctx.workspace
        salt = shard.source.name if config.scope == "per-source" else ""
        n = 0
        with (parquet_writer(self.part_path(ws, shard), signature_schema(config)) as sig_out,
              parquet_writer(self.bands_path(ws, shard), BANDS) as band_out,
              parquet_writer(self.shingles_path(ws, shard), SHINGLES) as shingle_out):
            for docs in surviving_batches(ctx, shard, BATCH, columns=["record", "id", "text", "quality"]):
                hashes = [shingle_hashes(text, config.ngram) for text in docs["text"].to_pylist()]
                sigs = hash_signatures(hashes, config)
                keys = np.array([doc_key(i) for i in docs["id"].to_pylist()], dtype=np.int64)
                sig_out.write_table(pa.table({
                    "key": keys, "id": docs["id"], "source": pa.array([shard.source.name] * len(keys), pa.string()),
                    "shard": pa.array([shard.index] * len(keys), pa.int32()), "record": docs["record"],
                    "quality": docs["quality"], "sig": pa.array([row.tobytes() for row in sigs], pa.binary(4 * config.num_perm)),
                }, schema=signature_schema(config)))
                band_out.write_table(pa.table({
                    "band": np.tile(np.arange(config.bands, dtype=np.int16), len(keys)),
                    "bucket": band_keys(sigs, config, salt).ravel(), "key": np.repeat(keys, config.bands),
                }, schema=BANDS))
                shingle_out.write_table(pa.table({"key": keys, "shingles": [h.tobytes() for h in hashes]}, schema=SHINGLES))
                n += len(keys)
        stats = {"signatures": n}
        mark_done(self.marker(ws, shard), fingerprint, stats)
        return stats


MINHASH = MinHashSignatures()
