"""The curation and mixture reports at 300 sources: build time and page size against the targets (10 s, 1.5 MB).

    python bench/report_scale.py [--workspace WS] [--copies 60] [--workdir DIR] [--keep]

Copies a curated workspace (--workspace; else one `loom quickstart` builds, about 4 minutes) with every source of
its published generation repeated --copies times under new names (`web-00`, `docs-00`, ..., `web-59`): the
manifest's funnel, documents, shards and near-duplicate clusters rewritten with the new names, each curated shard
copied with its source column rewritten, curation.json's sources too. Then `loom mix build` compiles a mixture
over all the copies (a source per component, a slice of each `code` copy in mid-training) and both reports are
built in this process, timed. The last line is the worst ratio against the targets (<= 1.0 meets them).
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from base.sql import literal  # noqa: E402
from base.workspace import Workspace  # noqa: E402

TARGET_SECONDS, TARGET_BYTES = 10.0, 1.5e6
MANIFEST_TABLES = ("funnel", "documents", "removed")  # folders of parts; shards and dedup_clusters are single files
SAMPLED = 50  # removed texts per source and reason, [inspect] removed_sample's default
# A generation curated before the removed sample: each source x reason's first SAMPLED removals given a text as long
# as a page, with markup to escape, so that the page is measured with as many removed texts as a new one holds.
STAND_IN_TEXT = """repeat('A removed page: <b>bold</b> & "quoted" text, ' || record || '. ', 40)"""


def copy_name(source: str, copy: int) -> str:
    return f"{source}-{copy:02d}"


def widen(original: Path, out: Path, copies: int, token_ids: bool = True) -> list[str]:
    """`out`: the workspace `original` with its published sources each repeated `copies` times under new names;
    returns the new names. Without `token_ids` the curated copies leave out input_ids (a report reads none; a
    mixture cannot compile from them)."""
    source_gen = Workspace(original).published()
    info = json.loads(source_gen.curation_info.read_text())
    sources = list(info["sources"])
    out.mkdir(parents=True)
    for name in ("sources.toml", "published.json", "models"):
        if (original / name).is_dir():
            shutil.copytree(original / name, out / name)
        elif (original / name).exists():
            shutil.copy(original / name, out / name)
    gen = Workspace(out).generation(source_gen.root.name)
    (gen.root / "manifest").mkdir(parents=True)
    names = [copy_name(s, k) for k in range(copies) for s in sources]
    (gen.root / "manifest" / "curation.json").write_text(json.dumps(
        {**info, "sources": {copy_name(s, k): info["sources"][s] for k in range(copies) for s in sources}}, indent=2))
    for extra in ("quality_buckets.parquet", "dedup_report.json"):
        if (source_gen.root / "manifest" / extra).exists():
            shutil.copy(source_gen.root / "manifest" / extra, gen.root / "manifest" / extra)
    con = duckdb.connect()
    con.execute(f"CREATE TABLE copies AS SELECT range AS k, lpad(range::VARCHAR, 2, '0') AS suffix FROM range({copies})")
    renamed = "source || '-' || suffix"
    shard = f"'curated/' || {renamed} || '/' || split_part(shard, '/', -1)"
    rewrites = {"funnel": f"* REPLACE ({renamed} AS source)",
                "documents": f"* REPLACE ({renamed} AS source, {shard} AS shard)",
                "shards": f"* REPLACE ({renamed} AS source, {shard.replace('shard', 'path')} AS path)",
                "dedup_clusters": f"* REPLACE ({renamed} AS source, cluster_id || '-' || suffix AS cluster_id)",
                "removed": f"* REPLACE ({renamed} AS source)"}
    for table, select in rewrites.items():
        files = source_gen.root / "manifest" / (f"{table}/*.parquet" if table in MANIFEST_TABLES else f"{table}.parquet")
        target = gen.root / "manifest" / (f"{table}/part-00000.parquet" if table in MANIFEST_TABLES else f"{table}.parquet")
        if table == "removed" and not list(files.parent.glob(files.name)):
            files = stand_in_removed(con, source_gen, gen.root / "stand-in-removed.parquet")
        elif not list(files.parent.glob(files.name)):
            continue
        target.parent.mkdir(exist_ok=True)
        con.execute(f"COPY (SELECT {select} FROM read_parquet({literal(str(files))}), copies ORDER BY k) "
                    f"TO {literal(str(target))} (FORMAT parquet)")
        if not files.is_relative_to(source_gen.root):
            files.unlink()  # the stand-in removed sample
    excluded = "" if token_ids else " EXCLUDE (input_ids)"
    for part in sorted((source_gen.root / "curated").glob("*/part-*.parquet")):
        for k in range(copies):
            folder = gen.root / "curated" / copy_name(part.parent.name, k)
            folder.mkdir(parents=True, exist_ok=True)
            con.execute(f"COPY (SELECT *{excluded} REPLACE ({literal(copy_name(part.parent.name, k))} AS source) "
                        f"FROM read_parquet({literal(str(part))})) TO {literal(str(folder / part.name))} (FORMAT parquet)")
            (folder / "_SUCCESS").touch()
    return names


def stand_in_removed(con, gen, path: Path) -> Path:
    """A removed sample made from `gen`'s funnel, written at `path`, for a generation curated before Loom kept one
    (see STAND_IN_TEXT)."""
    funnel = gen.root / "manifest" / "funnel" / "*.parquet"
    con.execute(f"""COPY (SELECT source, shard, input, record, doc_id, fate, stage, reason, detail,
                                 {STAND_IN_TEXT} AS text
                          FROM read_parquet({literal(str(funnel))}) WHERE fate <> 'kept'
                          QUALIFY row_number() OVER (PARTITION BY source, reason ORDER BY shard, record) <= {SAMPLED})
                    TO {literal(str(path))} (FORMAT parquet)""")
    return path


def mixture_spec(names: list[str]) -> str:
    """A mixture of every copy but the quickstart's noisy ones, a batch wide enough for a sequence of each: a source
    per component in pre-training; in mid-training the copies of every other original source whole, and of the
    rest a slice (their long documents). Epochs are not capped: the page is measured, not the mixture."""
    pretrain = [n for n in names if not n.startswith("fortunes")]
    originals = sorted({n.rsplit("-", 1)[0] for n in pretrain})
    whole = set(originals[::2])
    lines = ['name = "wide"', "seq_len = 64", "global_batch = 512", "total_tokens = 3_276_800", "max_epochs = 1000",
             "[weights]"]
    lines += [f'"{n}" = 1.0' for n in pretrain] + ["[midtrain]"]
    lines += [f'"{n}" = 1.0' if n.rsplit("-", 1)[0] in whole else f'"{n}:n_tokens>=256" = 1.0' for n in pretrain]
    return "\n".join(lines) + "\n"


def timed(build) -> tuple[float, int]:
    start = time.perf_counter()
    page = build()
    return time.perf_counter() - start, page.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, help="a curated workspace (default: a fresh `loom quickstart`)")
    parser.add_argument("--copies", type=int, default=60)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="loom-report-scale-"))
    try:
        from loom_job import quickstart_workspace  # bench/ is on the path when run as a script

        original = quickstart_workspace(args.workspace, workdir)
        start = time.perf_counter()
        names = widen(original.resolve(), workdir / "wide", args.copies)
        print(f"{len(names)} sources written in {time.perf_counter() - start:.1f} s")
        run(workdir / "wide", names)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept {workdir}")


def run(ws: Path, names: list[str]) -> None:
    from reports.build import curation_report, mixture_report

    (ws / "mixtures").mkdir(exist_ok=True)
    (ws / "mixtures" / "wide.toml").write_text(mixture_spec(names))
    start = time.perf_counter()
    built = subprocess.run([sys.executable, "-m", "loom", "-w", str(ws), "mix", "build", "wide"], cwd=REPO,
                           capture_output=True, text=True)
    print(f"loom mix build wide ({mixture_spec(names).count(' = 1.0')} weights): "
          f"{'ok' if built.returncode == 0 else 'failed: ' + built.stderr.strip()[-300:]} "
          f"in {time.perf_counter() - start:.1f} s (it writes the mixture report too)")
    pages = {"curation": lambda: curation_report(ws)}
    if built.returncode == 0:
        pages["mixture"] = lambda: mixture_report(ws, "wide")
    ratios = []
    print(f"{'page':<10}{'seconds':>9}{'MB':>8}{'time/target':>13}{'size/target':>13}")
    for page, build in pages.items():
        seconds, size = timed(build)
        ratios += [seconds / TARGET_SECONDS, size / TARGET_BYTES]
        print(f"{page:<10}{seconds:>9.2f}{size / 1e6:>8.2f}{seconds / TARGET_SECONDS:>13.2f}{size / TARGET_BYTES:>13.2f}")
    print(f"worst ratio against the targets (10 s, 1.5 MB): {max(ratios):.2f} ({'met' if max(ratios) <= 1 else 'missed'})")


if __name__ == "__main__":
    main()
