"""Raw corpora -> filtered, deduplicated, tokenized Parquet and a manifest, as Dask tasks per shard."""

from curation.config import SourceConfig, load_sources

__all__ = ["SourceConfig", "load_sources"]
