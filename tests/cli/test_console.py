"""A Ctrl-C that DuckDB catches in the middle of a query (its InterruptException) is Loom's one line and exit 130,
as a KeyboardInterrupt is: a report or `loom sql` interrupted shows no traceback."""

import threading

import click
import duckdb
from click.testing import CliRunner

from base.errors import EXIT_INTERRUPTED, INTERRUPTED
from loom.cli.console import LoomGroup


def test_a_query_interrupted_by_duckdb_is_one_line_and_exit_130():
    @click.group(cls=LoomGroup)
    def group():
        pass

    @group.command()
    def count():
        con = duckdb.connect()
        threading.Timer(0.3, con.interrupt).start()  # what DuckDB does on SIGINT during a query
        con.sql("SELECT count(*) FROM range(100000000000) a").fetchall()

    result = CliRunner().invoke(group, ["count"])
    assert result.exit_code == EXIT_INTERRUPTED, result.output
    assert result.output.strip() == INTERRUPTED


def test_another_runtime_error_is_not_taken_for_a_ctrl_c():
    @click.group(cls=LoomGroup)
    def group():
        pass

    @group.command()
    def fail():
        raise RuntimeError("something else")

    result = CliRunner().invoke(group, ["fail"])
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)
