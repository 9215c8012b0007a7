"""Values written into DuckDB SQL text: the one place they are quoted. Prefer parameters (`con.execute(q, [v])`);
these are for what parameters cannot carry: file paths in read_parquet(...), VALUES lists, view definitions."""

from pathlib import Path


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
