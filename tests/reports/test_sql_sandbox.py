"""`loom sql` is sandboxed by DuckDB itself: no query reads outside the workspace or writes anywhere; --output and
--db are files the user names, never SQL; odd workspace paths work; a torn JSONL line breaks no query."""

import csv
import io
import json
import os
import shutil
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from helpers import LOOM, run_loom
from base.sql import literal
from reports.views import VIEWS, connect, is_read_only

PWNED = Path("/tmp/pwned.csv")  # where the tester's --output injection wrote


def metrics_line(step: int, loss: float) -> str:
    return json.dumps({"step": step, "loss": loss, "lr": 1e-3}) + "\n"


@pytest.fixture
def small_ws(tmp_path) -> Path:
    """A workspace with one run, beside a folder `outside` that no query may touch, a secret file, and a folder an
    import_database would run a COPY TO from."""
    ws = tmp_path / "ws"
    (ws / "runs" / "r1").mkdir(parents=True)
    (ws / "runs" / "r1" / "metrics.jsonl").write_text(metrics_line(0, 4.0) + metrics_line(1, 3.5))
    (tmp_path / "outside").mkdir()
    (tmp_path / "secret.txt").write_text("secret\n")
    (tmp_path / "bait").mkdir()
    imported = literal(tmp_path / "outside" / "imported.csv")
    (tmp_path / "bait" / "schema.sql").write_text(f"COPY (SELECT 42) TO {imported};\n")
    (tmp_path / "bait" / "load.sql").write_text("")
    return ws


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


def escape_attempts(ws: Path) -> list[str]:
    """Statements that would read outside the workspace, write anywhere, or undo the sandbox."""
    tmp, outside = ws.parent, ws.parent / "outside"
    return [
        f"PRAGMA import_database({literal(tmp / 'bait')})",
        f"COPY (SELECT 42) TO {literal(outside / 'copied.csv')}",
        f"COPY (SELECT 42) TO {literal(ws / 'copied.csv')}",
        f"EXPLAIN ANALYZE COPY (SELECT 42) TO {literal(outside / 'explained.csv')}",
        f"EXPLAIN ANALYZE COPY (SELECT 42) TO {literal(ws / 'explained.csv')}",
        f"ATTACH {literal(outside / 'attached.db')} AS x",
        f"EXPORT DATABASE {literal(outside / 'exported')}",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SELECT * FROM read_text('/etc/passwd')",
        f"SELECT * FROM read_text({literal(tmp / 'secret.txt')})",
        f"SELECT * FROM read_csv({literal(tmp / 'secret.txt')})",
        f"SELECT * FROM read_text({literal(ws / '..' / 'secret.txt')})",
        "SELECT * FROM glob('/root/*')",
        f"SELECT * FROM glob({literal(str(tmp) + '/*')})",
        "SELECT * FROM read_csv('https://example.com/data.csv')",
        "SET enable_external_access = true",
        "RESET enable_external_access",
        "SET lock_configuration = false",
        "SET allowed_directories = ['/']",
        "SET temp_directory = '/tmp'",
    ]


def test_no_query_reads_outside_the_workspace_or_writes_anywhere(small_ws):
    tmp = small_ws.parent
    before = files_under(tmp)
    assert not PWNED.exists()
    queries = escape_attempts(small_ws)
    with ThreadPoolExecutor(4) as pool:  # one `loom sql` each, a few at a time
        results = list(pool.map(lambda q: run_loom("-w", small_ws, "sql", q, check=False), queries))
    for query, result in zip(queries, results):
        assert result.returncode == 2, (query, result.stdout, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, (query, result.stderr)
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr, (query, result.stderr)
    assert "Permission Error" in run_loom("-w", small_ws, "sql", "SELECT * FROM glob('/root/*')", check=False).stderr
    assert files_under(tmp) == before and not any((tmp / "outside").iterdir())
    assert not PWNED.exists()


def test_the_sandboxed_connection_itself_refuses_what_the_statement_check_would(small_ws):
    """Run straight on the connection, past the statement check: DuckDB refuses each one by itself."""
    tmp = small_ws.parent
    before = files_under(tmp)
    con, views = connect(small_ws)
    assert views == ["metrics", "runs"]
    inside_workspace_writes = {a for a in escape_attempts(small_ws) if str(small_ws / "copied.csv") in a
                               or str(small_ws / "explained.csv") in a}
    for query in escape_attempts(small_ws):
        if query in inside_workspace_writes:
            continue  # the sandbox is the workspace folder; the statement check keeps writes out of it
        with pytest.raises(duckdb.Error):
            con.execute(query).fetchall()
    assert files_under(tmp) == before and con.sql("SELECT count(*) FROM runs").fetchall() == [(1,)]


def test_the_statement_check_lets_through_only_what_reads(small_ws):
    con, _ = connect(small_ws)
    for query in ("SELECT * FROM runs", "DESCRIBE metrics", "SUMMARIZE metrics", "EXPLAIN SELECT 1",
                  "EXPLAIN ANALYZE SELECT count(*) FROM metrics", "PRAGMA table_info('metrics')", "PRAGMA version",
                  "SHOW TABLES", "SELECT 1; SELECT 2"):
        assert is_read_only(con, query), query
    for query in ("PRAGMA import_database('x')", "PRAGMA export_database('x')", "PRAGMA enable_profiling",
                  "EXPLAIN ANALYZE COPY (SELECT 1) TO 'x.csv'", "EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
                  "EXPLAIN (FORMAT json) COPY (SELECT 1) TO 'x.csv'", "SELECT 1; COPY (SELECT 1) TO 'x.csv'",
                  "CALL pragma_version()", "SET VARIABLE x = 1", "DROP VIEW runs", "-- nothing"):
        assert not is_read_only(con, query), query


def test_output_and_db_are_the_files_the_user_names_never_sql(small_ws):
    """The tester's injection as --output is a file name (its folder exists here, so it is written, literally);
    names with quotes work for every format and for --db."""
    cwd = small_ws.parent / "cwd"
    injected = "x.csv' (FORMAT csv); COPY (SELECT 42) TO '/tmp/pwned.csv"
    (cwd / Path(injected).parent).mkdir(parents=True)
    query = "SELECT run, records, last_loss FROM runs"
    run_loom("-w", small_ws, "sql", "--output", injected, query, cwd=cwd)
    assert (cwd / injected).read_text() == "run,records,last_loss\nr1,2,3.5\n" and not PWNED.exists()
    run_loom("-w", small_ws, "sql", "--format", "json", "--output", "it's.json", query, cwd=cwd)
    assert json.loads((cwd / "it's.json").read_text()) == [{"run": "r1", "records": 2, "last_loss": 3.5}]
    run_loom("-w", small_ws, "sql", "--format", "parquet", "--output", "it's.parquet", query, cwd=cwd)
    assert pq.read_table(cwd / "it's.parquet").to_pylist() == [{"run": "r1", "records": 2, "last_loss": 3.5}]
    run_loom("-w", small_ws, "sql", "--db", "bob's.db", cwd=cwd)
    with duckdb.connect(str(cwd / "bob's.db"), read_only=True) as con:
        assert con.sql("SELECT records, last_loss FROM runs").fetchall() == [(2, 3.5)]
    missing = run_loom("-w", small_ws, "sql", "--output", "no/such/folder.csv", query, cwd=cwd, check=False)
    assert missing.returncode == 2 and missing.stderr.strip() == \
        "error: cannot write no/such/folder.csv: the folder no/such does not exist"
    written = ["bob's.db", "it's.json", "it's.parquet", injected.split("/")[0]]
    assert sorted(p.name for p in cwd.iterdir()) == sorted(written)


def test_a_workspace_path_with_a_quote_a_space_and_non_ascii(quickstart_ws, tmp_path):
    """Every view answers in `it's a wörkspace`, as in the original; --output and --db write into it."""
    ws, _ = quickstart_ws
    odd = tmp_path / "it's a wörkspace"
    for folder in ("generations", "mixtures", "runs"):
        shutil.copytree(ws / folder, odd / folder, copy_function=os.link)
    shutil.copy(ws / "published.json", odd / "published.json")
    original, names = connect(ws)
    # every view but the ladder's: a quickstart trains no ladder (tests/sweeps/test_ladder.py queries that view)
    assert names == [view.name for view in VIEWS if view.name != "ladder"]
    counts = run_loom("-w", odd, "sql", "--format", "csv", " UNION ALL ".join(
        f"SELECT '{name}' AS view, count(*) AS n FROM {name}" for name in names)).stdout
    expected = {name: original.sql(f"SELECT count(*) FROM {name}").fetchall()[0][0] for name in names}
    assert {row["view"]: int(row["n"]) for row in csv.DictReader(io.StringIO(counts))} == expected
    run_loom("-w", odd, "sql", "--format", "parquet", "--output", odd / "wörk's.parquet", "SELECT * FROM funnel")
    assert pq.read_table(odd / "wörk's.parquet").num_rows == expected["funnel"]
    run_loom("-w", odd, "sql", "--db", odd / "wörk's.db")
    with duckdb.connect(str(odd / "wörk's.db"), read_only=True) as con:
        assert con.sql("SELECT count(*) FROM mixture_documents").fetchall()[0][0] == expected["mixture_documents"]


def test_a_workspace_path_duckdb_cannot_take_is_one_line(tmp_path):
    for name in (os.fsdecode(b"caf\xe9"), "runs[1]"):
        ws = tmp_path / name
        (ws / "runs" / "r1").mkdir(parents=True)
        (ws / "runs" / "r1" / "metrics.jsonl").write_text(metrics_line(0, 4.0))
        result = run_loom("-w", ws, "sql", "SELECT * FROM runs", check=False)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "rename the folder" in result.stderr


def test_a_torn_jsonl_line_is_skipped_and_said_once(small_ws):
    """A killed writer leaves `{"step": 12, "lo` with no newline: every query still answers, from the whole lines."""
    with open(small_ws / "runs" / "r1" / "metrics.jsonl", "a") as out:
        out.write('{"step": 12, "lo')
    (small_ws / "quarantine" / "web").mkdir(parents=True)
    (small_ws / "quarantine" / "web" / "part-00000.jsonl").write_text(
        json.dumps({"input": "a.jsonl", "record": 3, "reason": "bad_json", "detail": "x", "raw": "{"}) + '\n{"inp')
    result = run_loom("-w", small_ws, "sql", "--format", "csv", "SELECT run, records, last_step, last_loss FROM runs")
    assert result.stdout.splitlines() == ["run,records,last_step,last_loss", "r1,2,1,3.5"]
    assert result.stderr.splitlines() == ["note: skipped 1 unreadable line in quarantine/web/part-00000.jsonl",
                                          "note: skipped 1 unreadable line in runs/r1/metrics.jsonl"]
    quarantined = run_loom("-w", small_ws, "sql", "--format", "csv", "SELECT source, record, reason FROM quarantine")
    assert quarantined.stdout.splitlines() == ["source,record,reason", "web,3,bad_json"]

    (small_ws / "runs" / "r2").mkdir()
    (small_ws / "runs" / "r2" / "metrics.jsonl").write_text('{"step": 0, "lo')
    both = run_loom("-w", small_ws, "sql", "--format", "csv", "SELECT run, records FROM runs ORDER BY run")
    assert both.stdout.splitlines() == ["run,records", "r1,2"] and "runs/r2/metrics.jsonl" in both.stderr

    (small_ws / "runs" / "r1" / "metrics.jsonl").unlink()  # only a torn line left: the run views are left out
    alone = run_loom("-w", small_ws, "sql", "--format", "csv", "SELECT count(*) AS n FROM quarantine")
    assert alone.stdout.split() == ["n", "1"] and "left out view metrics" in alone.stderr


def test_a_folder_the_workspace_links_to_is_part_of_it(small_ws):
    """runs/ kept on another disk, linked in: its files answer; the folder beside it stays out of reach."""
    elsewhere = small_ws.parent / "disk"
    elsewhere.mkdir()
    shutil.move(small_ws / "runs", elsewhere / "runs")
    (small_ws / "runs").symlink_to(elsewhere / "runs")
    (elsewhere / "private.txt").write_text("private\n")
    result = run_loom("-w", small_ws, "sql", "--format", "csv", "SELECT run, records FROM runs")
    assert result.stdout.splitlines() == ["run,records", "r1,2"] and result.stderr == ""
    beside = run_loom("-w", small_ws, "sql", f"SELECT * FROM read_text({literal(elsewhere / 'private.txt')})",
                      check=False)
    assert beside.returncode == 2 and "Permission Error" in beside.stderr


def test_output_and_db_never_replace_a_link_a_device_or_a_file_not_forced(small_ws):
    """A symbolic link is followed (its target replaced, with --force, the link kept); a device is written to and
    stays a device; an existing file is replaced only with --force."""
    here, query = small_ws.parent, "SELECT run, records FROM runs"
    (here / "real.txt").write_text("mine\n")
    (here / "link.txt").symlink_to("real.txt")
    for option in ("--output", "--db"):
        refused = run_loom("-w", small_ws, "sql", option, "link.txt", query, cwd=here, check=False)
        assert refused.returncode == 2 and refused.stderr == "error: link.txt exists; pass --force to overwrite it\n"
    assert (here / "real.txt").read_text() == "mine\n" and (here / "link.txt").is_symlink()
    run_loom("-w", small_ws, "sql", "--format", "csv", "--output", "link.txt", "--force", query, cwd=here)
    assert (here / "link.txt").is_symlink() and (here / "real.txt").read_text() == "run,records\nr1,2\n"
    run_loom("-w", small_ws, "sql", "--db", "real.txt", "--force", cwd=here)
    with duckdb.connect(str(here / "real.txt"), read_only=True) as con:
        assert con.sql("SELECT records FROM runs").fetchall() == [(2,)]
    if subprocess.run(["mknod", here / "null", "c", "1", "3"], capture_output=True).returncode != 0:
        pytest.skip("no device nodes here (mknod needs root)")
    written = run_loom("-w", small_ws, "sql", "--output", "null", query, cwd=here)
    assert written.stdout == "Wrote null\n" and stat.S_ISCHR((here / "null").lstat().st_mode)
    refused = run_loom("-w", small_ws, "sql", "--db", "null", cwd=here, check=False)
    assert refused.returncode == 2 and refused.stderr == \
        "error: cannot write null (--db): it is a device or a pipe, and this output must be a file; name a file\n"


def test_output_writes_into_a_fifo_and_standard_output_in_place(small_ws):
    here, query = small_ws.parent, "SELECT run, records FROM runs"
    fifo = here / "fifo"
    os.mkfifo(fifo)
    with subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE, text=True) as cat:
        try:
            run_loom("-w", small_ws, "sql", "--format", "csv", "--output", fifo, query, timeout=60)
            assert cat.communicate(timeout=10)[0] == "run,records\nr1,2\n" and stat.S_ISFIFO(fifo.lstat().st_mode)
        finally:
            cat.kill()  # a reader left waiting on a FIFO that was replaced
    shown = run_loom("-w", small_ws, "sql", "--format", "csv", "--output", "/dev/stdout", query)
    assert shown.stdout == "run,records\nr1,2\n"  # the result alone: no "Wrote" line after it
    with (here / "log.csv").open("w") as log:
        log.write("before\n")
        log.flush()
        subprocess.run([*LOOM, "-w", small_ws, "sql", "--format", "csv", "--output", "/dev/stdout", query], stdout=log,
                       check=True)
    assert (here / "log.csv").read_text() == "before\nrun,records\nr1,2\n"  # at the shell's offset, not replaced


def test_an_output_another_writer_put_there_meanwhile_is_not_replaced_without_force(tmp_path):
    """Two `--output same.csv` at once: the one that finishes second is refused, as if the file had been there."""
    from base.errors import UserError
    from base.outputs import output_stream

    path = tmp_path / "same.csv"
    with pytest.raises(UserError, match="same.csv exists; pass --force to overwrite it"):
        with output_stream(path) as out:
            out.write(b"second\n")
            path.write_text("first\n")  # the other writer finished first
    assert path.read_text() == "first\n" and os.listdir(tmp_path) == ["same.csv"]
