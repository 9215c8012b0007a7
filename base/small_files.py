"""Small files read whole: text, a TOML config (one line naming a file that is not valid TOML), an eval set's records
(JSON lines, gzip'd or not, or Parquet)."""

import gzip
import json
import tomllib

from base.errors import UserError
from base.inputs import open_input
from base.parquet_files import read_parquet
from base.store import as_path


def read_text(path) -> str:
    return as_path(path).read_text(encoding="utf-8")


def read_toml(path) -> dict:
    """A TOML config file's tables; text that is not TOML (or not UTF-8) is one line naming the file."""
    try:
        return tomllib.loads(read_text(path))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise UserError(f"{path}: not valid TOML ({err}); fix the syntax") from None


RECORD_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")  # what `read_records` reads


def read_records(file, field: str) -> list[dict]:
    """Every record of a small JSON-lines (optionally gzip) or Parquet file, read whole (eval sets); of a
    Parquet file only `field`, or an empty record per row when it has no such column."""
    if str(file).endswith(".parquet"):
        table = read_parquet(file)
        return table.select([field]).to_pylist() if field in table.column_names else [{}] * max(1, table.num_rows)
    with open_input(file) as raw:
        data = gzip.decompress(raw.read()) if str(file).endswith(".gz") else raw.read()
    try:
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    except (ValueError, UnicodeDecodeError) as err:
        raise UserError(f"{file} is not UTF-8 JSON lines ({err}); fix the file") from None
