"""Running a planned job: every stage of curation.stages.STAGES, in order, as Dask tasks. Each output is written
atomically and marked done with a fingerprint of what it was made from, so a rerun skips finished work and
redoes the rest; then the result is published as a generation with its manifest (curation.publish)."""

import json
import logging
import os
import signal
from contextlib import contextmanager
from dataclasses import asdict, replace

from distributed import WorkerPlugin

from base.digests import text_digest
from base.done_markers import done_stats
from base.errors import UserError
from base.inputs import listing
from base.workspace import Generation
from curation.config import PROVENANCE_KEYS
from curation.job import JobContext, Shard, input_bytes
from curation.manifest import source_summary
from curation.publish import generation_id, publish
from curation.readers.inputs import register_source_storage
from curation.readers.spans import by_size
from curation.stages import STAGES
from curation.stages.base import ShardStage, shared_context, worker_threads
from curation.stages.survivors import prepared_sizes
from curation.steps.plugins import step_digests

CODE_VERSION = "6"  # bump when a stage's output changes for the same inputs, so reruns redo it
# set in the environment (to true), the local workers keep their statistical profiler, for the dashboard's Profile tab
PROFILE_ENV = "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"
# A shard stage's task takes a run of neighbouring shards of up to this much input (prepared Parquet after
# prepare): ~1,900 web documents, whose work dwarfs a task's scheduling; a larger shard is a task of its own.
TASK_BYTES = 1024 * 1024
# Messages a local worker keeps in flight to each other worker in a p2p shuffle (Dask's default: 10 of 2 MiB). Each
# waits in the receiver's memory until it is split by partition, so more partitions of the same size raised a
# worker's peak: one shuffle at 128 partitions +65-69 MB above its start at 10, +42-44 MB at 2, in the same time
# (bench/README.md, scale.py: where the working memory grows).
P2P_MESSAGES_IN_FLIGHT = 2


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None, on_start=None):
    """A client of an existing scheduler, or of a LocalCluster with one single-threaded worker per core."""
    import dask
    from distributed import Client, LocalCluster

    dask.config.set({"distributed.worker.daemon": False, "distributed.admin.tick.limit": "10s",
                     "distributed.p2p.comm.concurrency": P2P_MESSAGES_IN_FLIGHT, **worker_profiler_setting()})
    if scheduler:
        try:
            client = Client(scheduler, timeout="15s")
        except (OSError, TimeoutError) as err:
            raise UserError(f"cannot reach the Dask scheduler at {scheduler} ({err}); start it or drop --scheduler") from None
        with client:
            if on_start:
                on_start(client)
            with tracebacks_quiet_on_interrupt():
                yield client
        return
    n_workers = workers or os.cpu_count() or 1
    with interrupts_ignored():  # the workers start ignoring Ctrl-C, and their preload keeps a restarted one so
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=logging.CRITICAL,  # a task's error reaches the client anyway
                               preload=["curation.dask_worker"])
    with cluster, Client(cluster) as client:
        if on_start:
            on_start(client)
        with tracebacks_quiet_on_interrupt():
            yield client


def worker_profiler_setting() -> dict:
    """The local workers' statistical profiler off, unless the environment turns it on (PROFILE_ENV=true, for the
    dashboard's Profile tab): it keeps a profile of every second a worker ran, up to an hour of them, so a worker's
    memory grew ~0.11 MB per second of work (bench/README.md, scale.py) and every stage's peak with the corpus."""
    return {} if PROFILE_ENV in os.environ else {"distributed.worker.profile.enabled": False}


@contextmanager
def tracebacks_quiet_on_interrupt():
    """A Ctrl-C while the client waits on a computation leaves its pending asyncio tasks to fail as the client
    closes, and asyncio logs each one's traceback ("Task exception was never retrieved"): silenced, so that the
    command's one line is all the user sees."""
    try:
        yield
    except KeyboardInterrupt:
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise


@contextmanager
def interrupts_ignored():
    """SIGINT ignored while the block runs, so that processes started meanwhile ignore it from their first
    instruction (a Ctrl-C pressed in those seconds is lost: the price of no traceback from a half-started worker)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def input_fingerprint(shard: Shard) -> str:
    """What a shard's first stage depends on: the source's config, the part of the input it reads, the input's
    files, sizes and times, and the source code of its own `steps`. `shard_bytes` counts only through the span it
    gave, so a shard that a new size does not change is not redone; a source without `steps` has the fingerprint
    it had before they existed. Its licence, origin and citation are not in it: they redo tokenize alone
    (Tokenize.shard_inputs), and the generation's id holds the citation."""
    config = {k: v for k, v in asdict(shard.source).items()
              if k not in ("base_dir", "shard_bytes", "storage_options", "steps", *PROVENANCE_KEYS)}
    files = getattr(shard.span, "files", None)
    inputs = [entry for f in files for entry in listing(f)] if files is not None else listing(shard.input)
    return text_digest(CODE_VERSION, json.dumps(config, sort_keys=True), str(shard.index), repr(shard.span), *inputs,
                       *step_digests(shard.source))


def shard_fingerprint(shard: Shard) -> str:
    """input_fingerprint, and for a sample's shard the records it may read (`limit`: it is not the whole shard, so a
    full curate after a sample redoes it); a full shard's is input_fingerprint's as it always was."""
    whole = input_fingerprint(shard)
    return whole if shard.limit is None else text_digest(whole, f"limit={shard.limit}")


def stage_fingerprints(shards: list[Shard], ctx: JobContext, stages=STAGES):
    """Each stage the job runs, in order, with the fingerprint its marker must hold (by shard key for a shard stage,
    one for a global stage) and the fingerprints it hands on to the stage after it, by shard key."""
    upstream = {s.key: shard_fingerprint(s) for s in shards}
    for stage in (s for s in stages if s.enabled(ctx)):
        extra = stage.inputs(ctx)
        if isinstance(stage, ShardStage):
            chained = {s.key: text_digest(stage.name, upstream[s.key], extra, *stage.shard_inputs(s)) for s in shards}
            own = stage.own_inputs(ctx)
            fingerprints = {key: text_digest(value, own) for key, value in chained.items()} if own else chained
            yield stage, fingerprints, chained
            upstream = chained
        else:
            fingerprint = text_digest(stage.name, extra, *(upstream[s.key] for s in shards))
            upstream = {s.key: text_digest(fingerprint, s.key) for s in shards}
            yield stage, fingerprint, upstream


def run_stages(shards: list[Shard], ctx: JobContext, client, progress=None,
               stages=STAGES) -> tuple[dict[str, dict], JobContext, int]:
    """Runs every stage; returns the last stage's stats of each shard by key, the context publish runs with (the
    removals tables the stages wrote, the prepared parts' size), and how many tasks were run (0: every output was
    up to date). `progress(stage, total)` gives a callable to advance per finished shard."""
    from distributed import as_completed

    ws = ctx.workspace
    removals: list[str] = []
    redone = 0
    prepared: dict[str, int] = {}  # each shard's prepared part's bytes, measured once prepare is done
    for stage, fingerprint, upstream in stage_fingerprints(shards, ctx, stages):
        if not isinstance(stage, ShardStage) and ctx.prepared_bytes is None:
            prepared = prepared or prepared_sizes(ws, shards)
            ctx = replace(ctx, prepared_bytes=sum(prepared.values()), worker_threads=worker_threads(client))
        stage_ctx = replace(ctx, removals=tuple(removals))
        if isinstance(stage, ShardStage):
            todo = [s for s in shards if stage.done(ws, s, fingerprint[s.key]) is None]
            advance = progress(stage.name, len(shards)) if progress else (lambda n=1: None)
            advance(len(shards) - len(todo))
            redone += len(todo)
            shared_ctx = shared_context(client, stage_ctx) if todo else None
            sizes = [prepared[s.key] if prepared else input_bytes(s) for s in todo]
            futures = []
            for first, stop in shard_tasks(sizes, worker_threads(client)):
                run, fingerprints = todo[first:stop], [fingerprint[s.key] for s in todo[first:stop]]
                futures.append(client.submit(run_shards, stage, shared_ctx, run, fingerprints,
                                             key=f"{stage.name}-{run[0].key}-{text_digest(*fingerprints)}"))
            for future in as_completed(futures):
                advance(len(future.result()))
            del shared_ctx
            prepared = prepared or prepared_sizes(ws, shards)
        else:
            advance = progress(stage.name, 1) if progress else (lambda n=1: None)
            if stage.done(ws, fingerprint) is None:
                redone += 1
                if stage.on_client:
                    stage.run(stage_ctx, shards, fingerprint, client)
                else:
                    client.submit(stage.run, stage_ctx, shards, fingerprint, key=f"{stage.name}-{fingerprint}").result()
            advance(1)
            if stage.removes:
                removals.append(str(stage.removed_path(ws)))
    last = stages[-1]
    stats = {s.key: done_stats(last.marker(ws, s), upstream[s.key]) for s in shards}
    return stats, replace(ctx, removals=tuple(removals)), redone


def shard_tasks(sizes: list, threads: int) -> list[tuple[int, int]]:
    """The tasks of a shard stage, as [first, stop) runs of neighbouring shards: a run closes once its shards hold
    TASK_BYTES (a size None, not known, counts as that much) or a quarter of a thread's share of shards, so that
    large shards are a task each, many small shards do not each pay a task's scheduling (~5 ms against a few of
    work), and every thread gets several tasks."""
    known = [TASK_BYTES if size is None else size for size in sizes]
    return by_size(known, TASK_BYTES, most=max(1, len(sizes) // (4 * threads)))


def run_shards(stage: ShardStage, ctx: JobContext, shards: list[Shard], fingerprints: list[str]) -> list[dict]:
    """One task: a run of shards through a shard stage, one after the other (each marked done as it finishes)."""
    return [stage.run(ctx, shard, fingerprint) for shard, fingerprint in zip(shards, fingerprints)]


def published_already(shards: list[Shard], ctx: JobContext, stages=STAGES) -> Generation | None:
    """The published generation when the job would make it again (every stage's marker current, the generation they
    name the one published, its inputs.json written): a rerun with nothing changed, found from the markers alone,
    with no cluster. Else None."""
    ws = ctx.workspace
    for stage, fingerprint, upstream in stage_fingerprints(shards, ctx, stages):
        current = (all(stage.done(ws, s, fingerprint[s.key]) is not None for s in shards)
                   if isinstance(stage, ShardStage) else stage.done(ws, fingerprint) is not None)
        if not current:
            return None
    stats = {s.key: done_stats(stages[-1].marker(ws, s), upstream[s.key]) for s in shards}
    published = ws.published()
    built = published.success_marker.exists() if ws.remote else published.root.is_dir()
    recorded = published.inputs_record.exists()  # else a cluster writes it (one an older Loom built has none)
    return published if built and recorded and generation_id(ctx, shards, stats) == published.id else None


def nothing_to_do(gen: Generation) -> str:
    return (f"nothing to do: generation {gen.id} is published already and every stage is up to date; a change to "
            "sources.toml, an input file, the tokenizer or the quality model redoes what depends on it")


class SourceStorageOptions(WorkerPlugin):
    """A Dask worker plugin: every worker, one that joins later included, hands the sources' `storage_options`
    to base.store before it runs a task, so their URLs open with them (they travel in the plugin, never in a
    log)."""

    name = "loom-storage-options"

    def __init__(self, sources: list):
        self.sources = sources

    def setup(self, worker=None) -> None:
        for source in self.sources:
            register_source_storage(source)


def curate(shards: list[Shard], ctx: JobContext, client, progress=None, stages=STAGES, note=None) -> list[dict]:
    """Runs the planned job on `client`'s cluster and publishes its generation; returns the per-source summary.
    `note(line)` hears that there was nothing to do: every stage up to date, the same generation published. The
    caller holds the workspace's lock."""
    if any(source.storage_options for source in ctx.config.sources):
        client.register_plugin(SourceStorageOptions(ctx.config.sources))
    before = ctx.workspace.published().id
    stats, publish_ctx, redone = run_stages(shards, ctx, client, progress, stages)
    gen = publish(publish_ctx, shards, stats, client)
    if note and not redone and gen.id == before:
        note(nothing_to_do(gen))
    return client.submit(source_summary, gen, key=f"source_summary-{gen.id}").result()  # read on a worker
