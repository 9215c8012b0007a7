"""Topic domains, over all shards, with a [domains] table (curation.domains fits and applies the model):
(a) one task per shard of the clustered sources draws a seeded reservoir sample of its documents still in, of
ceil(sample / shards) texts; (b) one task merges them (at most `sample`), fits the model and saves it under
work/domains/model/; (c) one task per shard assigns each of its documents still in a domain and a distance, a
table by shard (work/domains/assignments/), which tokenize writes into the curated rows. Memory is set by
`sample`, never by the corpus; the client gets counts, the model's digest and its top terms. Without the table
the stage is left out of the job (`enabled`), so no fingerprint changes."""

import functools
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from base.atomic_files import remove_tree
from base.done_markers import mark_done
from base.errors import UserError
from base.small_files import read_text
from base.workspace import ASSIGNMENTS_DIR, DOMAIN_MODEL_DIR
from curation import model_folders
from curation.domains import DIMS, FEATURES, MAX_CHARS, PREDICT_BATCH, DomainModel
from curation.model_folders import TFIDF
from curation.stages.base import GlobalStage, settings_json, shared_context
from curation.stages.parts import write_shard_rows
from curation.stages.survivors import shard_rows, surviving_batches

ASSIGNMENTS = pa.schema([("record", pa.int64()), ("domain", pa.int32()), ("domain_distance", pa.float32())])
SAMPLE_BATCH = 2048


def shard_sample(ctx, shard, size: int, seed: int) -> list[str]:
    """A uniform sample of `size` texts (all, if fewer) of a shard's documents still in: reservoir sampling
    (algorithm R) seeded by the seed and the shard, so a rerun draws the same texts."""
    rng = np.random.default_rng([seed, shard.rank, shard.index])
    reservoir: list[str] = []
    seen = 0
    for docs in surviving_batches(ctx, shard, SAMPLE_BATCH, columns=["record", "text"]):
        texts = docs["text"].to_pylist()
        slots = rng.integers(0, np.arange(seen + 1, seen + len(texts) + 1))  # each text's slot, kept if < size
        for text, slot in zip(texts, slots.tolist()):
            if len(reservoir) < size:
                reservoir.append(text[:MAX_CHARS])
            elif slot < size:
                reservoir[slot] = text[:MAX_CHARS]
        seen += len(texts)
    return reservoir


def fit_model(config, folder: str, *samples: list[str]) -> dict:
    """The shards' samples merged in shard order (a seeded subset of `sample` of them when there are more), the
    model fitted and saved; returns what the stage records. With fewer documents than `k` nothing is fitted."""
    texts = [text for sample in samples for text in sample]
    if len(texts) > config.sample:
        keep = np.sort(np.random.default_rng(config.seed).choice(len(texts), config.sample, replace=False))
        texts = [texts[i] for i in keep]
    if len(texts) < config.k:
        return {"sampled": len(texts)}
    model = DomainModel(config.k, config.seed, embedding=config.embedding).fit(texts)
    return {"sampled": len(texts), "model_digest": model.save(folder), "top_terms": model.top_terms()}


@functools.lru_cache(maxsize=4)
def cached_model(folder: str, digest: str) -> DomainModel:
    """The model read once per worker process; the digest in the key makes a refitted model read again."""
    return DomainModel.load(folder)


def assign_shard(ctx, shard, folder: str, digest: str) -> int:
    """Each of a shard's documents still in: its domain and distance, as the shard's part; returns how many."""
    model = cached_model(folder, digest)
    parts = []
    for docs in surviving_batches(ctx, shard, PREDICT_BATCH, columns=["record", "text"]):
        domains, distances = model.predict(docs["text"].to_pylist())
        parts.append(pa.table({"record": docs["record"], "domain": domains, "domain_distance": distances},
                              schema=ASSIGNMENTS))
    rows = pa.concat_tables(parts) if parts else ASSIGNMENTS.empty_table()
    return write_shard_rows(rows, DOMAINS.assignments_folder(ctx.workspace), shard.source.name, shard.index,
                            ASSIGNMENTS, ["record"])


class Domains(GlobalStage):
    name = "domains"
    on_client = True

    def enabled(self, ctx) -> bool:
        return ctx.config.domains is not None

    def inputs(self, ctx) -> str:
        """The settings, and a model folder's digest: changed files in the folder fit the domains again."""
        config = ctx.config.domains
        folder = () if config.embedding == TFIDF else (model_folders.digest(config.embedding),)
        return settings_json((asdict(config), config.clustered(ctx.config.sources), FEATURES, DIMS, MAX_CHARS,
                              *folder))

    def model_folder(self, ws) -> Path:
        return ws.stage_dir(self.name) / DOMAIN_MODEL_DIR

    def assignments_folder(self, ws) -> Path:
        """Each clustered document's domain and distance, a table by shard."""
        return ws.stage_dir(self.name) / ASSIGNMENTS_DIR

    def outputs(self, ws) -> list[Path]:
        return [self.model_folder(ws), self.assignments_folder(ws)]

    def clustered(self, ctx, shard) -> bool:
        return self.enabled(ctx) and shard.source.name in ctx.config.domains.clustered(ctx.config.sources)

    def run(self, ctx, shards, fingerprint, client=None) -> dict:
        import dask

        config, ws = ctx.config.domains, ctx.workspace
        chosen = [s for s in shards if self.clustered(ctx, s)]
        per_shard = math.ceil(config.sample / max(len(chosen), 1))
        shared = shared_context(client, ctx)
        samples = [dask.delayed(shard_sample)(shared, s, per_shard, config.seed) for s in chosen]
        folder = self.model_folder(ws)
        remove_tree(folder)
        fitted = client.compute(dask.delayed(fit_model)(config, str(folder), *samples), sync=True)
        if "model_digest" not in fitted:
            sources = ", ".join(config.clustered(ctx.config.sources))
            raise UserError(f"[domains]: {fitted['sampled']} documents of {sources} are left to cluster after "
                            f"filtering and dedup, fewer than k = {config.k}; lower k or cluster more sources")
        remove_tree(self.assignments_folder(ws))  # a part of a shard that this run has not is a previous run's
        assigned = client.compute([dask.delayed(assign_shard)(shared, s, str(folder), fitted["model_digest"])
                                   for s in chosen], sync=True)
        stats = {"k": config.k, "sources": config.clustered(ctx.config.sources), "names": config.names,
                 "sampled": fitted["sampled"], "assigned": int(sum(assigned)),
                 "model_digest": fitted["model_digest"], "top_terms": fitted["top_terms"]}
        mark_done(self.marker(ws), fingerprint, stats)
        return stats

    def domain_rows(self, ctx, shard) -> pa.Table:
        """`record`, `domain` and `domain_distance` of a shard's documents; none when it is not clustered."""
        if not self.clustered(ctx, shard):
            return ASSIGNMENTS.empty_table()
        return shard_rows(self.assignments_folder(ctx.workspace), shard, ASSIGNMENTS.names)


def stage_stats(ws) -> dict:
    """What the finished stage recorded: k, the sources, names, the sample's size, the digest and top terms."""
    return json.loads(read_text(DOMAINS.marker(ws)))


DOMAINS = Domains()
