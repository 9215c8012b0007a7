"""Parquet files: one row per record, the text in `text_field`, the other columns kept as metadata."""

import json
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq

from curation.document import Record
from curation.readers.fields import RAW_PREVIEW_CHARS, check_header, record_from_fields
from loom.errors import UserError
from loom.io import file_size

MAGIC = b"PAR1"


class ParquetReader:
    shard_kind = "file"
    html = False

    def check(self, source, shard: Path) -> None:
        check_header(source, shard, MAGIC)
        if file_size(shard) == 0:
            return
        try:
            pq.read_metadata(shard)
        except Exception as err:  # pyarrow raises several types for a damaged footer
            raise UserError(f"source '{source.name}': {shard} is not a readable Parquet file ({err}); re-create it") from None

    def read(self, source, shard: Path) -> Iterator[Record]:
        index = 0
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=1024):
            for row in batch.to_pylist():
                yield record_from_fields(source, row, index, raw=preview(row))
                index += 1


def preview(row: dict) -> str:
    return json.dumps(row, default=str, ensure_ascii=False)[:RAW_PREVIEW_CHARS]
