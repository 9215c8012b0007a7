"""Stage 6, per shard: tokenize the documents still in and write the curated Parquet, with each one's quality
bucket, near-duplicate cluster and dup_count, and its annotators' scores and buckets (in work/tokenize/;
curation.publish puts it in a generation)."""

import pyarrow as pa
import pyarrow.compute as pc

from base.done_markers import mark_done
from base.parquet_files import parquet_writer
from curation.schema import CURATED, PII_COLUMNS, curated_schema
from curation.stages.annotate_buckets import ANNOTATE_BUCKETS
from curation.stages.base import ShardStage
from curation.stages.domains import DOMAINS
from curation.stages.exact_dedup import EXACT_DEDUP
from curation.stages.minhash_dedup import MINHASH_DEDUP
from curation.stages.quality_select import QUALITY_SELECT
from curation.stages.survivors import shard_rows, surviving_batches
from curation.tokenizer import encode_to_arrow, load_tokenizer, tokenizer_fingerprint

BATCH = 512


class Tokenize(ShardStage):
    name = "tokenize"

    def inputs(self, ctx) -> str:
        return tokenizer_fingerprint(ctx.tokenizer)

    def shard_inputs(self, shard) -> tuple[str, ...]:
        return f"license={shard.source.license}", f"origin={shard.source.origin}"

    def run(self, ctx, shard, fingerprint: str) -> dict:
        ws = ctx.workspace
        tokenizer, eos_id = load_tokenizer(ctx.tokenizer)
        buckets = shard_rows(QUALITY_SELECT.buckets_folder(ws), shard, ["record", "quality_bucket"])
        clusters = near_clusters(ctx, shard)
        counts, domains = dup_counts(ctx, shard), domain_assignments(ctx, shard)
        annotator_buckets = ANNOTATE_BUCKETS.bucket_rows(ctx, shard)
        schema = curated_schema(ctx.config.annotators)
        out = self.part_path(ws, shard)
        n_docs = n_tokens = 0
        with parquet_writer(out, schema) as writer:
            for docs in surviving_batches(ctx, shard, BATCH):
                input_ids = encode_to_arrow(tokenizer, eos_id, docs["text"].to_pylist())
                lengths = pc.list_value_length(input_ids).cast(pa.int64())
                found = {"quality_bucket": by_record(buckets, docs, "quality_bucket"),
                         "dup_cluster": by_record(clusters, docs, "cluster_id"),
                         "dup_count": pc.fill_null(by_record(counts, docs, "dup_count"), 1),
                         "domain": by_record(domains, docs, "domain"),
                         "domain_distance": by_record(domains, docs, "domain_distance"),
                         **annotator_columns(ctx.config.annotators, docs, annotator_buckets)}
                writer.write_table(curated_table(shard.source, docs, input_ids, lengths, found, schema))
                n_docs += docs.num_rows
                n_tokens += pc.sum(lengths).as_py()
        stats = {"docs": n_docs, "tokens": n_tokens, "bytes": out.stat().st_size}
        mark_done(self.marker(ws, shard), fingerprint, stats)
        return stats


def near_clusters(ctx, shard) -> pa.Table:
    """`record` and `cluster_id` of the shard's documents in a near-duplicate cluster (none with dedup off)."""
    if not MINHASH_DEDUP.enabled(ctx):
        return pa.table({"record": pa.array([], pa.int64()), "cluster_id": pa.array([], pa.string())})
    return shard_rows(MINHASH_DEDUP.clusters_folder(ctx.workspace), shard, ["record", "cluster_id"])


def dup_counts(ctx, shard) -> pa.Table:
    """`record` and `dup_count` of the shard's documents whose duplicate clusters held more than one (the rest: 1);
    with MinHash dedup off, the exact copies alone."""
    if not MINHASH_DEDUP.enabled(ctx):
        copies = shard_rows(EXACT_DEDUP.copies_folder(ctx.workspace), shard, ["record", "copies"])
        return copies.rename_columns(["record", "dup_count"])
    return shard_rows(MINHASH_DEDUP.dup_counts_folder(ctx.workspace), shard, ["record", "dup_count"])


def domain_assignments(ctx, shard) -> pa.Table:
    """`record`, `domain` and `domain_distance` of the shard's documents (none without [domains], or when its
    source is not clustered)."""
    return DOMAINS.domain_rows(ctx, shard)


def annotator_columns(annotators, docs: pa.Table, buckets: pa.Table | None) -> dict:
    """Each annotator's score, from the prepared rows, and each NAME_bucket by record (`buckets`: the
    annotate_buckets stage's rows of the shard, None without bucketed annotators)."""
    names = buckets.column_names[1:] if buckets is not None else []
    return {a.name: docs[a.name] for a in annotators} | {name: by_record(buckets, docs, name) for name in names}


def by_record(table: pa.Table, docs: pa.Table, column: str):
    """`table`'s `column` for each of `docs` by record; null where the table has no row of it."""
    return pc.take(table[column], pc.index_in(docs["record"], table["record"]))


def curated_table(source, docs: pa.Table, input_ids, lengths, found: dict, schema=CURATED) -> pa.Table:
    """The curated rows of a batch of `docs` of a source (its SourceConfig); `found` holds the columns looked up by
    record in the stages' tables."""
    n = docs.num_rows
    constant = lambda value: pa.array([value] * n, pa.string())  # noqa: E731
    columns = {
        "id": docs["id"], "source": constant(source.name), "license": constant(source.license),
        "origin": constant(source.origin), "text": docs["text"],
        "lang": docs["lang"], "lang_score": docs["lang_score"], "quality": docs["quality"], **found,
        "n_chars": docs["n_chars"], "n_tokens": lengths, "input_ids": input_ids, "meta": docs["meta"],
        **{column: docs[column] for column in PII_COLUMNS.values()},
    }
    return pa.table(columns, schema=schema)


TOKENIZE = Tokenize()
