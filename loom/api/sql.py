"""`Workspace.sql`: a read-only query over the workspace's DuckDB views (`loom sql`), its result as Arrow."""

from contextlib import contextmanager


@contextmanager
def query_result(ws, query: str):
    """Yields the query's DuckDB relation (None for a statement without a result), read only, with the views'
    notes told to `ws.note` and a failing query as one UserError line naming the views."""
    from reports.sql import one_line_errors, open_views, read_only_query

    views = open_views(ws.files.root)
    for line in views.notes:
        ws.note(line)
    with one_line_errors(views.names):
        yield read_only_query(views.con, query)


def sql(ws, query: str):
    """The result of a read-only SQL query over the workspace's views (`loom sql --views` lists them) as a
    pyarrow.Table; an empty one for a statement without a result."""
    import pyarrow as pa

    with query_result(ws, query) as relation:
        return relation.to_arrow_table() if relation is not None else pa.table({})
