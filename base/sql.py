"""DuckDB: a connection that reads a workspace on a store as well as on disk (`duckdb_connect`), and values written
into SQL text, the one place they are quoted. Prefer parameters (`con.execute(q, [v])`); `literal` and its kin are
for what parameters cannot carry: file paths in read_parquet(...), VALUES lists, view definitions."""

from pathlib import Path

from base.store import as_path, is_remote


def literal(value) -> str:
    """A SQL literal: strings and paths in single quotes (quotes doubled), numbers as they are, None as NULL."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def literal_list(values) -> str:
    """`(v1, v2, ...)`, for IN."""
    return "(" + ", ".join(literal(v) for v in values) + ")"


def path_list(paths: list[Path | str]) -> str:
    """A DuckDB list of file paths, for read_parquet([...])."""
    return "[" + ", ".join(literal(str(p)) for p in paths) + "]"


def duckdb_connect(*paths):
    """A DuckDB connection that also reads the remote files under `paths` (a workspace's root): their fsspec
    filesystems are registered with it, credentials and all, so SQL names them by URL."""
    import duckdb

    con = duckdb.connect()
    for fs in {id(p.fs): p.fs for p in map(as_path, paths) if is_remote(p)}.values():
        con.register_filesystem(fs)
    return con
