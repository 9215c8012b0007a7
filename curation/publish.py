"""Publishing a finished curation as a generation: a folder holding its curated parts, quarantine and manifest
together, then named in `published.json` (one atomic replace, or one PUT on a store). A reader sees the previous
generation or the new one, never a mix, and a job killed at any point leaves the published one as it was.

The generation is built by Dask tasks: one per shard copies its curated part and quarantine and writes its parts
of the manifest's documents and funnel (curation.manifest_parts), then one task writes the small tables; the
client holds counts only. A local generation is built under a temporary name, its parts hard-linked from work/,
and renamed whole. An object store has no rename: the generation's files are written under generations/<id>/
directly (server-side copies), then its `_SUCCESS` marker, the commit; only then is it published, and a
generation without the marker is a killed job's, rebuilt by the next run and never read."""

import json
import os
import time

from base.atomic_files import remove_tree, write_text
from base.digests import text_digest
from base.lock import exclusive
from base.store import as_path
from base.workspace import WORKSPACE_LOCK, Generation, Workspace
from curation.inputs_record import write_inputs_record
from curation.manifest import write_manifest
from curation.manifest_parts import publish_shards
from curation.stages.prepare import removed_sample_setting


def curation_lock(ws: Workspace, note=lambda line: None):
    """The one-writer lock of what curation writes (locks/workspace.lock): work/, generations/, published.json and
    the models. Hold it around a whole curation (plan, stages, publish) and a model's training into models/."""
    return exclusive(ws.lock_file(WORKSPACE_LOCK), f"workspace {ws.root}", note)


LAYOUT = "manifest parts"  # the generation's layout: a generation built by another layout is rebuilt, not reused


def generation_id(ctx, shards: list, stats: dict[str, dict]) -> str:
    """Named after everything it is made of, so that an unchanged rerun finds it already built."""
    parts = [f"{s.key}:{s.rank}:{stats[s.key]['fingerprint']}" for s in shards]
    sample = removed_sample_setting(ctx.config.inspect)  # what removed text it keeps, in no stage's chain
    kept_text = [sample] if sample else []
    sources = {s.source.name: s.source for s in shards}  # their citations are in no stage's chain
    provenance = [f"{name}:{s.license}:{s.origin}:{s.citation}" for name, s in sources.items()]
    return "g-" + text_digest(*parts, str(ctx.tokenizer), str(ctx.quality_model), LAYOUT, *kept_text, *provenance,
                              length=16)


def publish(ctx, shards: list, stats: dict[str, dict], client) -> Generation:
    """Builds the job's generation unless it exists, publishes it, and removes those before the previous one."""
    ws: Workspace = ctx.workspace
    previous = ws.published()
    gen = ws.generation(generation_id(ctx, shards, stats))
    if ws.remote:
        if not gen.success_marker.exists():
            build(ctx, gen, shards, stats, client)
            write_text(gen.id + "\n", gen.success_marker)
    elif not gen.root.is_dir():
        staging = ws.generation(f".{gen.id}.tmp-{os.getpid()}")
        remove_tree(staging.root)
        build(ctx, staging, shards, stats, client)
        staging.root.rename(gen.root)
    if not gen.inputs_record.exists():  # one an older Loom built (or a job killed right after its rename): now
        write_inputs_record(ctx, gen, shards, client)
    write_text(json.dumps({"generation": gen.id, "published": time.time()}), ws.published_file)
    remove_old_generations(ws, keep={gen.id, previous.id})
    return gen


def build(ctx, gen: Generation, shards: list, stats: dict[str, dict], client) -> None:
    """The generation's curated parts, quarantine and per-document tables written shard by shard on the workers,
    then its small tables by one more task."""
    counts = publish_shards(client, ctx, gen, shards)
    client.submit(write_manifest, ctx, gen, shards, stats, counts, key=f"publish_manifest-{gen.id}").result()


def remove_old_generations(ws: Workspace, keep: set[str]) -> None:
    """Removes every generation folder not in `keep`, temporary and unmarked ones included: the caller holds the
    workspace's lock, so such a folder is a killed job's."""
    if not ws.generations.exists():
        return
    for folder in ws.generations.iterdir():
        if folder.name not in keep:
            remove_tree(as_path(folder))
