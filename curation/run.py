"""`curate`: plan the shards, check what can be checked before compute, run the job on Dask, write the manifest."""

import logging
import os
from contextlib import contextmanager
from pathlib import Path

from curation.config import SourceConfig
from curation.errors import UserError
from curation.job import JobContext, Shard, plan_shards, run_curation, steps_for
from curation.layout import CurationLayout
from curation.manifest import remove_stale_parts, source_summary, write_manifest
from curation.tokenizer import load_tokenizer, tokenizer_fingerprint


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None, on_start=None):
    """A client of an existing scheduler, or of a LocalCluster with one single-threaded worker per core."""
    import dask
    from distributed import Client, LocalCluster

    dask.config.set({"distributed.worker.daemon": False, "distributed.admin.tick.limit": "10s"})
    if scheduler:
        try:
            client = Client(scheduler, timeout="15s")
        except (OSError, TimeoutError) as err:
            raise UserError(f"cannot reach the Dask scheduler at {scheduler} ({err}); start it or drop --scheduler") from None
        with client:
            if on_start:
                on_start(client)
            yield client
        return
    n_workers = workers or os.cpu_count() or 1
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        if on_start:
            on_start(client)
        yield client


def plan_job(sources: list[SourceConfig], layout: CurationLayout, tokenizer: Path) -> tuple[list[Shard], JobContext]:
    """Everything that can be checked before a cluster starts: inputs readable, tokenizer usable, filters valid."""
    shards = plan_shards(sources)
    load_tokenizer(str(tokenizer))
    for source in sources:
        steps_for(source)
    ctx = JobContext(layout=layout, tokenizer=str(Path(tokenizer).resolve()),
                     tokenizer_fingerprint=tokenizer_fingerprint(tokenizer))
    return shards, ctx


def curate(shards: list[Shard], ctx: JobContext, client, progress=None) -> list[dict]:
    """Runs the planned job on `client`'s cluster and writes the manifest; returns the per-source summary."""
    stats = run_curation(shards, ctx, client, progress)
    remove_stale_parts(ctx.layout, shards)
    write_manifest(ctx.layout, shards, stats)
    return source_summary(ctx.layout)
