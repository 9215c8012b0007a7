"""Arrow schemas of what curation writes (see docs/design.md)."""

import pyarrow as pa

from curation.steps.pii_patterns import KINDS as PII_KINDS

# Spans of personal data a document held, one column per kind (curation.steps.pii): 0 where the step was off or the
# kind not looked for.
PII_COLUMNS = {kind: f"pii_{kind}" for kind in PII_KINDS}
PII_FIELDS = [(column, pa.int32()) for column in PII_COLUMNS.values()]

PREPARED = pa.schema(
    [
        ("record", pa.int64()),
        ("id", pa.string()),
        ("text", pa.string()),
        ("lang", pa.string()),
        ("lang_score", pa.float32()),
        ("quality", pa.float32()),
        ("n_chars", pa.int64()),
        ("meta", pa.string()),
        *PII_FIELDS,
    ]
)

CURATED = pa.schema(
    [
        ("id", pa.string()),
        ("source", pa.string()),
        # the source's SPDX licence (or "unknown") and origin (sources.toml): one value per part, which Parquet's
        # dictionary encoding stores once per row group
        ("license", pa.string()),
        ("origin", pa.string()),
        ("text", pa.string()),
        ("lang", pa.string()),
        ("lang_score", pa.float32()),
        ("quality", pa.float32()),
        ("quality_bucket", pa.int16()),
        ("dup_cluster", pa.string()),
        ("dup_count", pa.int32()),  # documents its exact and near-duplicate clusters held; 1 when unique
        ("domain", pa.int32()),  # its topic domain (curation.stages.domains); null without [domains]
        ("domain_distance", pa.float32()),  # cosine distance to its domain's centre; null without [domains]
        ("n_chars", pa.int64()),
        ("n_tokens", pa.int64()),  # including the EOS appended to input_ids
        ("input_ids", pa.list_(pa.uint32())),
        ("meta", pa.string()),  # the source's own fields, as JSON
        *PII_FIELDS,
    ]
)



def annotator_fields(annotators) -> list[pa.Field]:
    """A float32 column per annotator (curation.steps.annotate), named after it; null where it did not score."""
    return [pa.field(a.name, pa.float32()) for a in annotators]


def bucket_fields(annotators) -> list[pa.Field]:
    """An int16 NAME_bucket per annotator with `buckets`: 0 (lowest) .. buckets-1 at the corpus's quantiles."""
    return [pa.field(f"{a.name}_bucket", pa.int16()) for a in annotators if a.buckets]


def prepared_schema(annotators=()) -> pa.Schema:
    """PREPARED with a column per annotator: what `prepare` writes."""
    return pa.schema([*PREPARED, *annotator_fields(annotators)])


def curated_schema(annotators=()) -> pa.Schema:
    """CURATED with a column per annotator and a bucket column per bucketed one: the curated rows."""
    return pa.schema([*CURATED, *annotator_fields(annotators), *bucket_fields(annotators)])


FUNNEL = pa.schema(
    [
        ("source", pa.string()),
        ("shard", pa.int32()),
        ("input", pa.string()),
        ("record", pa.int64()),
        ("doc_id", pa.string()),
        ("fate", pa.string()),  # one of curation.document.FATES
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("lang", pa.string()),
    ]
)

# A sample of the removed documents' text (`[inspect] removed_sample` per source and reason): manifest/removed/,
# a part per shard as the funnel's. `text` is the extracted text the removing step judged, or for a record set aside
# unread (malformed, too large) the start of its raw bytes as its reader found them.
REMOVED_SAMPLE = pa.schema(
    [
        ("source", pa.string()),
        ("shard", pa.int32()),
        ("input", pa.string()),
        ("record", pa.int64()),
        ("doc_id", pa.string()),
        ("fate", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("text", pa.string()),
    ]
)

DUCKDB_TYPES = {"string": "VARCHAR", "int32": "INTEGER", "int64": "BIGINT", "bool": "BOOLEAN", "double": "DOUBLE"}


def empty_relation(schema: pa.Schema) -> str:
    """SQL for a relation of the schema's columns (strings, integers, booleans, doubles) and no rows."""
    columns = ", ".join(f"NULL::{DUCKDB_TYPES[str(f.type)]} AS {f.name}" for f in schema)
    return f"(SELECT {columns} LIMIT 0)"


QUALITY_BUCKETS = pa.schema(
    [
        ("source", pa.string()),
        ("shard", pa.int32()),
        ("record", pa.int64()),
        ("quality_bucket", pa.int16()),  # null for a document without a score
    ]
)

REMOVALS = pa.schema(
    # What every stage that removes documents after `prepare` writes: the funnel is made from these tables.
    [
        ("source", pa.string()),
        ("shard", pa.int32()),
        ("record", pa.int64()),
        ("fate", pa.string()),  # one of curation.document.FATES
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("dup_cluster", pa.string()),  # a near duplicate's cluster, else null
    ]
)

NEAR_DUPLICATE_CLUSTERS = pa.schema(
    [
        ("cluster_id", pa.string()),  # the survivor's id
        ("member_id", pa.string()),
        ("source", pa.string()),
        ("shard", pa.int32()),
        ("record", pa.int64()),
        ("is_survivor", pa.bool_()),
        ("jaccard_to_survivor", pa.float64()),  # true Jaccard of the two shingle sets
        ("removed", pa.bool_()),
        ("cluster_size", pa.int32()),
        ("oversized", pa.bool_()),  # larger than max_cluster_size: only members close to the survivor removed
    ]
)

EXACT_COPIES = pa.schema(
    # exact_dedup's: each kept document with exact copies, and how many documents had its text (itself included)
    [("source", pa.string()), ("shard", pa.int32()), ("record", pa.int64()), ("copies", pa.int32())]
)

DUP_COUNTS = pa.schema(
    # minhash_dedup's: each kept document whose exact and near-duplicate clusters held more than itself
    [("source", pa.string()), ("shard", pa.int32()), ("record", pa.int64()), ("dup_count", pa.int32())]
)

CONTAMINATION = pa.schema(
    # The evidence of the decontaminate stage: a row per document and eval set it overlaps at the threshold or more
    # (manifest/contamination.parquet). The document's removal names the set with the largest fraction.
    [
        ("source", pa.string()),
        ("shard", pa.int32()),
        ("record", pa.int64()),
        ("doc_id", pa.string()),
        ("input", pa.string()),
        ("eval_set", pa.string()),
        ("matched_ngrams", pa.int64()),
        ("ngrams", pa.int64()),  # of the paragraph (or document) judged
        ("fraction", pa.float64()),
        ("span", pa.string()),  # at most 200 characters of the document where the matches are densest
    ]
)

PII_TABLE = pa.schema(
    # manifest/pii.parquet: a row per source whose pii step ran and kind it looked for, and a row of kind "total"
    [
        ("source", pa.string()),
        ("kind", pa.string()),
        ("mode", pa.string()),  # "redact" or "count"
        ("documents", pa.int64()),  # kept documents holding a span of the kind (of any kind, for "total")
        ("spans", pa.int64()),  # in the kept documents: redacted, or counted
        ("removed", pa.int64()),  # documents max_pii removed for the kind (reason pii_KIND; pii_total for "total")
    ]
)

PROVENANCE = pa.schema(
    # manifest/provenance.parquet: a row per source of the generation, as sources.toml says (curation.licenses)
    [("source", pa.string()), ("license", pa.string()), ("origin", pa.string()), ("citation", pa.string())]
)

DOMAINS_TABLE = pa.schema(
    # manifest/domains.parquet: a row per topic domain and clustered source (empty without [domains])
    [
        ("domain", pa.int32()),
        ("name", pa.string()),  # from [domains] names; null when unnamed
        ("source", pa.string()),
        ("documents", pa.int64()),
        ("tokens", pa.int64()),
        ("top_terms", pa.list_(pa.string())),  # the domain's, the same on each of its rows
        ("examples", pa.list_(pa.string())),  # ids of up to 3 of its documents in the source, closest to its centre
        ("model_digest", pa.string()),
    ]
)
