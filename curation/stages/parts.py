"""Tables that a global stage computes as a Dask dataframe: each partition writes its own part (sorted, so the
part is the same whichever worker wrote it), then one task streams the parts, a row group at a time, into the
stage's single table. No process holds more than one partition; readers of the table see one file as before."""

from pathlib import Path

import pandas as pd
import pyarrow as pa

from loom.io import as_path, parquet_file, parquet_writer, text_digest, write_parquet

WRITTEN = pd.DataFrame({"path": pd.Series(dtype=object), "rows": pd.Series(dtype="int64")})


def parts_folder(stage_dir: Path, table: str) -> Path:
    return as_path(stage_dir) / "parts" / table


def write_part(part: pd.DataFrame, folder: str, schema: pa.Schema, order: list[str], partition_info=None) -> pd.DataFrame:
    """One partition's rows, sorted by `order`, as folder/part-NNNNN.parquet; returns its path and row count."""
    number = partition_info["number"] if partition_info else 0
    path = as_path(folder) / f"part-{number:05d}.parquet"
    rows = part.sort_values(order, kind="stable") if len(part) else part
    write_parquet(pa.Table.from_pandas(rows[schema.names], schema=schema, preserve_index=False), path)
    return pd.DataFrame({"path": [str(path)], "rows": [len(rows)]})


def write_parts(frame, folder: Path, schema: pa.Schema, order: list[str]):
    """A lazy frame of (path, rows), one row per partition written."""
    return frame.map_partitions(write_part, str(folder), schema, order, meta=WRITTEN)


def join_parts(paths: list[str], out: Path, schema: pa.Schema) -> int:
    """The parts, in order, streamed into `out`; returns the number of rows."""
    n = 0
    with parquet_writer(out, schema) as writer:
        for path in paths:
            source = parquet_file(as_path(path))
            for i in range(source.num_row_groups):
                group = source.read_row_group(i).cast(schema)
                writer.write_table(group)
                n += group.num_rows
    return n


def join_key(stage: str, fingerprint: str, table: str) -> str:
    """The joining task's key: the stage's name then a digest, so the scheduler files it under the stage."""
    return f"{stage}-{text_digest(fingerprint, table)}"


def write_table(client, frame, stage_dir: Path, name: str, out: Path, schema: pa.Schema, order: list[str],
                key: str) -> int:
    """Writes a Dask frame as the single Parquet table `out` through per-partition parts; returns its rows."""
    written = client.compute(write_parts(frame, parts_folder(stage_dir, name), schema, order), sync=True)
    paths = sorted(written["path"].tolist())
    return client.submit(join_parts, paths, out, schema, key=key).result()
