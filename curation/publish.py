"""Publishing a finished curation as a generation: a folder holding its curated parts, quarantine and manifest
together, built under a temporary name and renamed whole, then named in `published.json` (one atomic replace).
A reader sees the previous generation or the new one, never a mix, and a job killed at any point leaves the
published one as it was."""

import json
import os
import shutil
import time
from pathlib import Path

from curation.manifest import write_manifest
from curation.stages.prepare import PREPARE
from curation.stages.tokenize import TOKENIZE
from loom.io import text_digest, write_text
from loom.workspace import Generation, Workspace


def generation_id(ctx, shards: list, stats: dict[str, dict]) -> str:
    """Named after everything it is made of, so that an unchanged rerun finds it already built."""
    parts = [f"{s.key}:{s.rank}:{stats[s.key]['fingerprint']}" for s in shards]
    return "g-" + text_digest(*parts, str(ctx.tokenizer), str(ctx.quality_model), length=16)


def publish(ctx, shards: list, stats: dict[str, dict]) -> Generation:
    """Builds the job's generation unless it exists, publishes it, and removes those before the previous one."""
    ws: Workspace = ctx.workspace
    previous = ws.published()
    gen = ws.generation(generation_id(ctx, shards, stats))
    if not gen.root.is_dir():
        staging = ws.generation(f".{gen.id}.tmp-{os.getpid()}")
        shutil.rmtree(staging.root, ignore_errors=True)
        for shard in shards:
            link_or_copy(TOKENIZE.part_path(ws, shard), staging.curated_part(shard.source.name, shard.index))
            link_or_copy(PREPARE.quarantine_path(ws, shard), staging.quarantine_part(shard.source.name, shard.index))
        write_manifest(ctx, staging, shards, stats)
        staging.root.rename(gen.root)
    write_text(json.dumps({"generation": gen.id, "published": time.time()}), ws.published_file)
    remove_old_generations(ws, keep={gen.id, previous.id})
    return gen


def link_or_copy(source: Path, target: Path) -> None:
    """A hard link where the filesystem allows one (no second copy of the data), else a copy. Work outputs are
    replaced by rename, never rewritten in place, so a published link keeps its bytes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def remove_old_generations(ws: Workspace, keep: set[str]) -> None:
    """Removes every generation folder not in `keep`, temporary ones included: the caller holds the workspace's
    lock, so a temporary folder is a killed job's."""
    for folder in ws.generations.iterdir():
        if folder.name not in keep:
            shutil.rmtree(folder)
