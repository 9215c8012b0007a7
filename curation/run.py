"""`curate`: plan the shards, check what can be checked before compute, run the job on Dask, write the manifest."""

import json
import logging
import os
from dataclasses import asdict
from contextlib import contextmanager
from pathlib import Path

from curation.config import CurationConfig
from loom.errors import UserError
from curation.job import JobContext, Shard, plan_shards, run_curation, steps_for
from loom.workspace import Workspace
from curation.manifest import remove_stale_parts, source_summary, write_manifest
from curation.quality import model_fingerprint
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


def plan_job(config: CurationConfig, layout: Workspace, tokenizer: Path,
             quality_model: Path | None = None) -> tuple[list[Shard], JobContext]:
    """Everything that can be checked before a cluster starts: inputs readable, tokenizer and quality model
    usable, filters valid. Without a quality model no document is scored."""
    shards = plan_shards(config.sources)
    load_tokenizer(str(tokenizer))
    selecting = [s.name for s in config.sources if s.quality_threshold is not None or s.keep_fraction is not None]
    if quality_model is None and selecting:
        raise UserError(f"source '{selecting[0]}' selects by quality but there is no quality model; "
                        "train one with `loom quality train` or pass --quality-model FILE")
    model = str(Path(quality_model).resolve()) if quality_model else None
    for source in config.sources:
        steps_for(source, model)  # a bad filter option or an unusable model fails here, before any task is sent
    selection = [(s.name, s.quality_threshold, s.keep_fraction) for s in config.sources]
    model_fp = model_fingerprint(quality_model)
    stage_inputs = (
        ("prepare", model_fp),
        ("quality_select", _json((model_fp, asdict(config.quality), selection))),
        ("minhash", _json([config.dedup.enabled, config.dedup.scope, config.dedup.ngram, config.dedup.bands,
                           config.dedup.rows, config.dedup.seed])),
        ("minhash_dedup", _json([config.dedup.threshold, config.dedup.max_cluster_size])),
        ("tokenize", tokenizer_fingerprint(tokenizer)),
    )
    ctx = JobContext(layout=layout, tokenizer=str(Path(tokenizer).resolve()), quality_model=model,
                     quality=config.quality, dedup=config.dedup, stage_inputs=stage_inputs)
    return shards, ctx


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)


def curate(shards: list[Shard], ctx: JobContext, client, progress=None) -> list[dict]:
    """Runs the planned job on `client`'s cluster and writes the manifest; returns the per-source summary."""
    stats = run_curation(shards, ctx, client, progress)
    remove_stale_parts(ctx.layout, shards)
    write_manifest(ctx, shards, stats)
    return source_summary(ctx.layout)
