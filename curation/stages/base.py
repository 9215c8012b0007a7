"""The two kinds of curation stage. A stage owns its name, the paths it writes, its done-marker and the
fingerprint of what it reads besides the stage before it (a model, a config table): the runner (curation.run)
needs nothing else to skip, run and chain it.

- A ShardStage runs each input shard alone: one Dask task a shard, or a run of small shards one after the other
  in one task (curation.run.shard_tasks).
- A GlobalStage sees every shard at once: one Dask task, or (`on_client`) a Dask graph built from the client.
  One that `removes` documents writes their fates in the shared REMOVALS schema to `removed_path`, a table by
  shard (curation.stages.parts); every later stage skips those documents and the manifest's funnel is made from them.
"""

import json
from pathlib import Path

from base.done_markers import done_stats
from base.sql import path_list
from base.workspace import DONE_MARKER, REMOVALS_DIR, Workspace
from curation.schema import REMOVALS, empty_relation
from curation.stages.parts import all_parts

def settings_json(value) -> str:
    """A stage's settings as they enter its fingerprint."""
    return json.dumps(value, sort_keys=True)


def shared_context(client, ctx):
    """`ctx` sent to every worker once, as a Future that the tasks take in its place. Given to each task itself, a
    job context (whose config holds every source) is traversed and sent once a task: 300 tasks at 300 sources took
    21 s, 1 s sharing it. Sent to every worker, not made one node of the graph, so that the tasks that take it do
    not all go to the worker that holds it."""
    return client.scatter(ctx, broadcast=True, hash=False)


def worker_threads(client) -> int:
    """The threads of the client's cluster's workers (at least 1)."""
    return max(1, sum(client.nthreads().values()))


def removals_frame():
    """An empty pandas frame of the REMOVALS columns: the meta of a Dask stage's removals."""
    import numpy as np
    import pandas as pd

    types = {"string": object, "int32": np.int32, "int64": np.int64}
    return pd.DataFrame({f.name: pd.Series(dtype=types[str(f.type)]) for f in REMOVALS})


def removals_relation(paths) -> str:
    """SQL for every row of the given removals tables (folders of parts by shard); with none, an empty relation
    of the same columns."""
    if paths:
        return f"read_parquet({path_list(all_parts(p) for p in paths)})"
    return empty_relation(REMOVALS)


class ShardStage:
    name = ""

    def enabled(self, ctx) -> bool:
        """Whether the job runs the stage at all: one that is not configured is left out of the chain, so that
        the fingerprints of the stages after it are those of a job without it."""
        return True

    def inputs(self, ctx) -> str:
        """A fingerprint of what the stage reads besides the shard's stage before it."""
        return ""

    def own_inputs(self, ctx) -> str:
        """A fingerprint of what only this stage's own side outputs depend on, not the rows the stages after it read
        (how much removed text `prepare` keeps): it redoes this stage when it changes, and no stage after it."""
        return ""

    def shard_inputs(self, shard) -> tuple[str, ...]:
        """What the stage's output of this one shard reads besides the stage before it and `inputs` (tokenize: its
        source's licence and origin, which only its rows carry): in the chain of that shard alone."""
        return ()

    def marker(self, ws: Workspace, shard) -> Path:
        return ws.stage_part(self.name, shard.source.name, shard.index, "done")

    def part_path(self, ws: Workspace, shard) -> Path:
        """The stage's main output for a shard: work/<stage>/<source>/part-NNNNN.parquet."""
        return ws.stage_part(self.name, shard.source.name, shard.index)

    def outputs(self, ws: Workspace, shard) -> list[Path]:
        return [self.part_path(ws, shard)]

    def done(self, ws: Workspace, shard, fingerprint: str) -> dict | None:
        """The stats of a finished run for these inputs whose outputs are all there, else None."""
        stats = done_stats(self.marker(ws, shard), fingerprint)
        return stats if stats is not None and all(p.exists() for p in self.outputs(ws, shard)) else None

    def run(self, ctx, shard, fingerprint: str) -> dict:
        raise NotImplementedError


class GlobalStage:
    name = ""
    on_client = False  # builds its own Dask graph from the client instead of running as one task
    removes = False

    def enabled(self, ctx) -> bool:
        return True

    def inputs(self, ctx) -> str:
        return ""

    def marker(self, ws: Workspace) -> Path:
        return ws.stage_dir(self.name) / DONE_MARKER

    def removed_path(self, ws: Workspace) -> Path:
        """The removals, a table by shard: removals/<source>/part-NNNNN.parquet."""
        return ws.stage_dir(self.name) / REMOVALS_DIR

    def outputs(self, ws: Workspace) -> list[Path]:
        return [self.removed_path(ws)] if self.removes else []

    def done(self, ws: Workspace, fingerprint: str) -> dict | None:
        stats = done_stats(self.marker(ws), fingerprint)
        return stats if stats is not None and all(p.exists() for p in self.outputs(ws)) else None

    def run(self, ctx, shards: list, fingerprint: str, client=None) -> dict:
        raise NotImplementedError
