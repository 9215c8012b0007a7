"""Stage 3, over all shards: of documents with the same normalized text (so, the same id), the first by source
order in sources.toml, then shard, then record, is kept; documents removed before take no part."""

import duckdb
import pyarrow as pa

from curation.schema import REMOVALS
from curation.stages.base import GlobalStage
from curation.stages.survivors import surviving_columns
from loom.io import mark_done, write_parquet


class ExactDedup(GlobalStage):
    name = "exact_dedup"
    removes = True

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        con = duckdb.connect()
        con.register("still_in", surviving_columns(ctx, shards, ["record", "id"]))
        con.register("shard_keys", pa.table({"source": [s.source.name for s in shards], "shard": [s.index for s in shards],
                                             "shard_key": [s.key for s in shards]}))
        con.execute("CREATE VIEW docs AS SELECT * FROM still_in JOIN shard_keys USING (source, shard)")
        duplicates = con.sql(
            """
            SELECT source, shard, record, 'duplicate' AS fate, 'exact_dedup' AS stage, 'exact_duplicate' AS reason,
                   'same text as ' || survivor AS detail, NULL AS dup_cluster FROM (
                SELECT *, row_number() OVER w AS copy,
                       first_value(shard_key || '#' || record) OVER w AS survivor
                FROM docs WINDOW w AS (PARTITION BY id ORDER BY rank, shard, record)
            ) WHERE copy > 1 ORDER BY rank, shard, record
            """
        ).to_arrow_table()
        write_parquet(duplicates.cast(REMOVALS), self.removed_path(ctx.workspace))
        stats = {"duplicates": duplicates.num_rows}
        mark_done(self.marker(ctx.workspace), fingerprint, stats)
        return stats


EXACT_DEDUP = ExactDedup()
