"""Are two Loom workspaces' outputs the same? Compares the published generation's curated Parquet, manifest and
quarantine, the compiled mixtures and the models byte for byte; the one column that holds wall-clock times (manifest/shards.parquet
`created`) is compared as a table without it. The manifest's documents and funnel are compared as tables, rows in
order, whether a folder of parts (manifest/funnel/part-*.parquet) or one file from before (manifest/funnel.parquet).
HTML reports are skipped (they hold paths and times). A compiled mixture is compared by its current build (whose
id, and the time in current.json, differ from run to run): its files as mixtures/NAME/builds/current/...

    python scripts/compare_workspaces.py WORKSPACE_A WORKSPACE_B

Both must have been made in the same folder (its path is written into curation.json and schedule.json), e.g.
`loom -w /tmp/ws quickstart` before a change, moved aside, and again after it. Exit status 1 when any differs."""

import sys
from pathlib import Path

import pyarrow.parquet as pq

from base.workspace import BUILDS_DIR, CURRENT_FILE, MIXTURES_DIR, Workspace
from mixtures.compiled import current_build

PUBLISHED = ("curated", "manifest", "quarantine")  # in the published generation (a workspace from before
WORKSPACE = ("mixtures", "models")                  # generations has them at its top)
TIMED_COLUMNS = {"manifest/shards.parquet": ["created"]}
PART_TABLES = ("manifest/documents", "manifest/funnel")  # folders of parts; single .parquet files before


def output_files(root: Path) -> dict[str, Path]:
    folders = [(Workspace(root).published().root, top) for top in PUBLISHED] + [(root, top) for top in WORKSPACE]
    files = {str(p.relative_to(base)): p for base, top in folders for p in sorted((base / top).rglob("*"))
             if p.is_file() and p.suffix != ".html"}
    gen = Workspace(root).published().root
    for table in PART_TABLES:
        parts = [name for name in files if name == f"{table}.parquet" or name.startswith(f"{table}/")]
        for name in parts:
            del files[name]
        if parts:
            files[table] = gen / (table if parts[0].startswith(f"{table}/") else f"{table}.parquet")
    return current_builds(root, files)


def current_builds(root: Path, files: dict[str, Path]) -> dict[str, Path]:
    """Each mixture's current build under one name, builds/current/; its other builds and current.json left out."""
    kept = {}
    for name, path in files.items():
        parts = name.split("/")
        if parts[0] == MIXTURES_DIR and len(parts) > 4 and parts[2] == BUILDS_DIR:
            build = current_build(root / MIXTURES_DIR / parts[1])
            if build is None or build.id != parts[3]:
                continue
            name = "/".join([*parts[:3], "current", *parts[4:]])
        elif parts[0] == MIXTURES_DIR and parts[2:] == [CURRENT_FILE]:
            continue
        kept[name] = path
    return kept


def same(name: str, a: Path, b: Path) -> bool:
    if name in PART_TABLES:
        return pq.read_table(a).equals(pq.read_table(b))
    if name in TIMED_COLUMNS:
        return pq.read_table(a).drop(TIMED_COLUMNS[name]).equals(pq.read_table(b).drop(TIMED_COLUMNS[name]))
    return a.read_bytes() == b.read_bytes()


def same_rows(name: str, a: Path, b: Path) -> bool:
    """Whether a part table differs only in the order of its rows (manifest/documents was in path order, source
    name first, before it was written per shard in publish order, source rank first)."""
    if name not in PART_TABLES:
        return False
    ta, tb = pq.read_table(a), pq.read_table(b)
    keys = [(column, "ascending") for column in ta.column_names if column in ("source", "shard", "row", "record")]
    return ta.sort_by(keys).equals(tb.sort_by(keys)) if ta.schema.equals(tb.schema) else False


def main(a: Path, b: Path) -> int:
    files_a, files_b = output_files(a), output_files(b)
    differ = [f"only in {a if name in files_a else b}: {name}" for name in sorted(set(files_a) ^ set(files_b))]
    differ += [f"differs{' in row order only' if same_rows(name, files_a[name], files_b[name]) else ''}: {name}"
               for name in sorted(set(files_a) & set(files_b)) if not same(name, files_a[name], files_b[name])]
    print("\n".join(differ + [f"{len(files_a)} files compared, {len(differ)} differ"]))
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
