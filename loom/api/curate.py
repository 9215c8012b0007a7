"""`Workspace.curate`: the curation job (`loom curate`), with its checks before the cluster starts, under the
workspace's lock; progress and the cluster's start as callbacks, notes to the workspace's `note`."""

import sys
from pathlib import Path

from base.atomic_files import remove_temporary_files
from base.errors import UserError
from base.store import as_path
from base.workspace import CURATED_DIR, MANIFEST_DIR, PART_GLOB, QUARANTINE_DIR, SOURCES_FILE, WORK_DIR, Workspace


def curate(ws, sources=None, workers: int | None = None, scheduler: str | None = None, limit: int | None = None,
           tokenizer=None, quality_model=None, progress=None, on_cluster=None) -> list[dict]:
    """Curates the workspace's sources and publishes a generation; returns the funnel, one dict per source
    (source, docs_in, each fate's count, tokens, top_reasons, warnings).

    sources: a sources.toml [default: the workspace's]; workers: local Dask worker processes [one per core];
    scheduler: tcp://HOST:PORT of a running Dask cluster instead; limit: at most N records per source, the first
    ones of each shard (a sample to try settings on; docs_in counts the records read); tokenizer, quality_model:
    files [default: sources.toml's `tokenizer`, else the workspace's models]; progress(stage, total) -> advance(n)
    for each stage's shards; on_cluster(client) once the Dask client is up."""
    from curation.config import load_config
    from curation.job import check_limit, curation_tokenizer, plan_job
    from curation.manifest import source_summary
    from curation.publish import curation_lock
    from curation.run import curate as curate_shards
    from curation.run import dask_client, nothing_to_do, published_already

    files: Workspace = ws.files
    check_not_a_worker_importing_its_script()
    limit = check_limit(limit)
    check_workers(workers)
    sources_file = workspace_sources(files, sources)
    model = quality_model_path(files, quality_model)
    config = load_config(sources_file)  # before the lock: a folder with no sources.toml gets no locks/ either
    with curation_lock(files, ws.note):
        chosen = curation_tokenizer(as_path(tokenizer) if tokenizer else None, config, sources_file, files)
        shards, ctx = plan_job(config, files, chosen, model, limit)
        if model is None:
            ws.note(f"no quality model at {files.quality_model}; quality scoring skipped (train one with "
                    "`loom quality train`)")
        if removed := remove_temporary_files(files.work, files.generations, files.models):
            ws.note(f"removed {len(removed)} temporary files that killed runs left in {files.root}")
        for line in ignored_folders(files, {s.source.name for s in shards}):
            ws.note(line)
        if scheduler is None and (published := published_already(shards, ctx)) is not None:
            ws.note(nothing_to_do(published))  # no cluster started: its workers would have nothing to run
            return source_summary(published)
        with dask_client(scheduler, workers, on_start=on_cluster) as client:
            return curate_shards(shards, ctx, client, progress, note=ws.note)


def check_not_a_worker_importing_its_script() -> None:
    """A script that curates at its top level, not under `if __name__ == "__main__":`, is run again by each local
    Dask worker process as it starts (multiprocessing's spawn imports the main script as `__mp_main__`): said
    there in one line, rather than as a second curation refused by the lock."""
    script = sys.modules.get("__mp_main__")  # in the process that started the workers, the same as __main__
    if getattr(script, "__name__", None) != "__mp_main__":
        return
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is vars(script):
            raise UserError("curate() was called again by a Dask worker process importing your script: put the "
                            "script's calls under `if __name__ == \"__main__\":` (worker processes import the "
                            "script that starts them)")
        frame = frame.f_back


def check_workers(workers) -> None:
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UserError(f"workers {workers!r}: give a number of local worker processes, 1 or more, or leave it out "
                        "for one per core")


def workspace_sources(files: Workspace, sources=None) -> Path:
    """The sources.toml a command reads: the one named, else the workspace's; a folder that was never made a
    workspace (no sources.toml, no --sources) is told to run `loom init`, before anything is written."""
    if sources:
        return as_path(sources)
    if not files.remote and not files.sources_file.is_file():
        loom = files.loom_command()
        where = "here" if loom == "loom" else "there"
        raise UserError(f"no workspace at {files.root} (no {SOURCES_FILE}): run `{loom} init` to create a "
                        f"workspace {where}, or pass --sources FILE")
    return files.sources_file


def quality_model_path(files: Workspace, value) -> Path | None:
    """The quality model a curation scores with: the one named, else the workspace's when it has one."""
    if value:
        return as_path(value)
    return files.quality_model if files.quality_model.exists() else None


def ignored_folders(files: Workspace, sources: set[str]) -> list[str]:
    """What this curation leaves out: folders of sources no longer in sources.toml, and the curated data of a
    workspace curated before generations (no view or mixture reads either)."""
    lines = []
    # a source's folder holds its shards' parts; a global stage's `parts/` holds only folders of partitions
    old = sorted({p.name for p in files.work.glob("*/*")
                  if p.is_dir() and p.name not in sources and any(p.glob(PART_GLOB))})
    if old:
        lines.append(f"sources no longer in sources.toml are left out: {', '.join(old)} (their {WORK_DIR}/STAGE/NAME "
                     "folders can be removed)")
    legacy = [name for name in (CURATED_DIR, MANIFEST_DIR, QUARANTINE_DIR) if (files.root / name).is_dir()]
    if legacy:
        lines.append(f"{', '.join(legacy)} at the top of {files.root} are from an older Loom and are no longer read; "
                     "remove them once this run has published")
    return lines
