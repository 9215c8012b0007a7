"""Raw corpora -> filtered, deduplicated, tokenized Parquet and a manifest, as Dask tasks per shard."""

from curation.config import SourceConfig, load_sources
from curation.errors import UserError
from curation.layout import CurationLayout

__all__ = ["CurationLayout", "SourceConfig", "UserError", "load_sources"]
