"""The workspace folder: where it is, and where each of its parts lives. Every path a command reads or writes
inside a workspace, every file name, glob and lock target in it, is named here and nowhere else
(tests/test_layout.py checks that no other module spells one). The root is a local folder (a Path) or a URL on an
object store (a UPath, see base.store.as_path); the same `/` joins name the parts of both."""

import importlib.util
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from base.store import as_path, is_remote, is_url

DEFAULT_WORKSPACE = "loom-work"

# ---- file names ----
# The workspace's own files and folders.
SOURCES_FILE = "sources.toml"
SPEC_GLOB = "*.toml"  # the workspace's own specs (mixtures/NAME.toml)
MODELS_DIR, TOKENIZER_FILE, QUALITY_MODEL_FILE = "models", "tokenizer.json", "quality.bin"
EVALS_DIR = "evals"  # eval sets: the workspace's (evals/NAME.jsonl), and a build's tokenized ones
LOCKS_DIR, WORK_DIR, GENERATIONS_DIR, PUBLISHED_FILE = "locks", "work", "generations", "published.json"
MIXTURES_DIR, RUNS_DIR, EXPORTS_DIR, LADDERS_DIR, SEARCHES_DIR = "mixtures", "runs", "exports", "ladders", "searches"
COMPARE_DIR = ("reports", "compare")  # `loom report compare NAME`: reports/compare/NAME.html
REPORT_FILE = "report.html"  # a mixture's, run's, ladder's or search's page in its folder; a generation's in manifest/
INDEX_FILE = "index.html"  # the workspace's index page
CARD_FILE = "README.md"  # `loom card`: a data card, Hugging Face's dataset-card file name; a mixture's in its folder,
# the curated data's in its generation's manifest/
PAGE_GLOB = "*.html"
SUCCESS_FILE = "_SUCCESS"  # on an object store, written last into a generation or a build: its commit
PART_GLOB = "part-*"  # a table's parts (part_name), any suffix
SPILL_DIR = ".duckdb_tmp"  # where DuckDB spills a `loom sql` query larger than memory (reports.views)

# In a published generation (Generation) and in curation's work/ (curation.stages).
CURATED_DIR, MANIFEST_DIR, QUARANTINE_DIR = "curated", "manifest", "quarantine"
PART_TABLES = ("documents", "funnel", "removed")  # manifest tables written per shard, as folders of parts
CURATION_INFO_FILE, DEDUP_REPORT_FILE = "curation.json", "dedup_report.json"  # in manifest/
PROVENANCE_TABLE = "provenance"  # manifest/provenance.parquet: each source's licence, origin and citation
# what a curation read (in manifest/: curation.inputs_record) and what a run was made from (in a run's folder:
# trainer.recorded_inputs), the record `loom reproduce` checks and rebuilds from
INPUTS_FILE = "inputs.json"
REPRODUCE_FILE = "reproduce.json"  # in a workspace `loom reproduce` fills: the run it reproduces (a rerun goes on)
DONE_MARKER = "_done"  # a stage's done-marker, beside its outputs
REMOVALS_DIR = "removals"  # a removing stage's removals table (curation.stages.base)
REMOVED_SAMPLE_DIR = "removed_sample"  # prepare's removed documents' text, per shard (curation.stages.prepare)
FILTERS_DIR, EVIDENCE_DIR = "filters", "evidence"  # decontaminate's, under work/<stage>/
CLUSTERS_DIR, BUCKETS_DIR = "clusters", "buckets"  # minhash_dedup's and quality_select's, under work/<stage>/
COPIES_DIR = "copies"  # exact_dedup's: each kept copy's number of exact copies, under work/<stage>/
DUP_COUNTS_DIR = "dup_counts"  # minhash_dedup's: each kept document's dup_count, under work/<stage>/
# domains' (curation.stages.domains), under work/domains/: the fitted model's folder and its two files, the
# sampled texts, and each document's domain (a table by shard)
DOMAIN_MODEL_DIR, DOMAIN_STATE_FILE, DOMAIN_SETTINGS_FILE = "model", "domains.npz", "domains.json"
DOMAIN_SAMPLES_DIR, ASSIGNMENTS_DIR = "samples", "assignments"

# In a compiled mixture's folder (mixtures/NAME/; what they hold: mixtures.compiled) and in each of its builds.
CURRENT_FILE, BUILDS_DIR = "current.json", "builds"
READERS_LOCK = "readers.lock"  # in a local build: each reader holds a shared flock on it while it reads
MIXTURE_SPEC_FILE, SCHEDULE_FILE, PLAN_FILE = "mixture.toml", "schedule.json", "plan.parquet"
SEQUENCES_DIR, VALIDATION_FILE = "sequences", "validation.parquet"
LICENSES_FILE = "licenses.parquet"  # a build's tokens per phase and licence (mixtures.licenses)

# In a run's folder (what they hold: trainer.metrics, trainer.checkpoint).
RUN_FILE, METRICS_FILE = "run.json", "metrics.jsonl"
CHECKPOINTS_DIR, CHECKPOINT_GLOB, TRAINER_STATE_FILE = "checkpoints", "step-*", "trainer_state.json"
BRANCHES_DIR = "branches"  # a WSD run's stable-phase checkpoints its cooldowns start from (trainer.cooldowns), kept

# In an export's folder (mixtures.export; each format's own files are its writer's).
EXPORT_FILE, EXPORT_PROGRESS_FILE = "export.json", "progress.json"

# In a ladder's and a search's folder (sweeps).
LADDER_SPEC_FILE = "ladder.toml"  # the spec as resolved
LADDER_FIT_FILE = "fit.json"  # its rungs, fits and predictions (sweeps.results)
LADDER_POINTS_FILE = "points.parquet"  # one row per rung and metric
SEARCH_SPEC_FILE, SEARCH_FILE = "search.toml", "search.json"
LOGS_DIR = "logs"  # a rung's or a proxy's `loom train` output
SWEEP_MARK_FILE = "sweep.json"  # in a mixture's and a run's folder a sweep made: which sweep (sweeps.ownership)

# A published site (`loom publish NAME`: reports.site): sites/NAME/, the workspace's pages at their own paths (so
# their relative links hold), its index.html, and the published manifest's tables as one file each beside the
# curation report (generations/G/manifest/TABLE.parquet).
SITES_DIR = "sites"


def checkpoint_name(step: int) -> str:
    """A checkpoint's folder in CHECKPOINTS_DIR (CHECKPOINT_GLOB finds them; the name orders them by step)."""
    return f"step-{step:07d}"


def staging_name(name: str) -> str:
    """Where a folder is built before it is renamed to `name` (a mixture's build): a temporary name of base.store's
    (TEMPORARY_GLOB), so that a killed writer's leftovers are removed by the next one."""
    return f".{name}.tmp-{os.getpid()}"


def removing_name(name: str) -> str:
    """What a folder (an old build) is renamed to before it is deleted, so that no reader resolves it meanwhile."""
    return f".{name}.removing-{os.getpid()}"


# ---- globs: what `loom sql`'s views read, relative to the folder they read it in ----
CURATED_FILES = f"{CURATED_DIR}/*/{PART_GLOB}.parquet"  # in a generation
QUARANTINE_FILES = f"{QUARANTINE_DIR}/*/*.jsonl"  # in a generation
SEQUENCE_FILES = f"{SEQUENCES_DIR}/*.parquet"  # in a build
LADDER_POINTS = f"{LADDERS_DIR}/*/{LADDER_POINTS_FILE}"  # in the workspace
RUN_METRICS = f"{RUNS_DIR}/*/{METRICS_FILE}"  # in the workspace


def manifest_table(name: str) -> str:
    """A manifest table relative to its generation: a folder of parts (PART_TABLES) or one Parquet file."""
    return f"{MANIFEST_DIR}/{name}" if name in PART_TABLES else f"{MANIFEST_DIR}/{name}.parquet"


def manifest_files(name: str) -> str:
    """A manifest table's files relative to its generation: its file, or its folder's parts as a glob (DuckDB reads a
    glob's files in name order)."""
    return f"{manifest_table(name)}/*.parquet" if name in PART_TABLES else manifest_table(name)


# ---- lock targets: locks/TARGET.lock, each taken by the package that writes what it guards (docs/design.md) ----
WORKSPACE_LOCK = "workspace"  # curation's outputs: work/, generations/, published.json, models/


def mixture_lock(name: str) -> str:
    return f"mixture-{name}"


def run_lock(name: str) -> str:
    return f"run-{name}"


def export_lock(folder: str) -> str:
    return f"export-{folder}"


def ladder_lock(name: str) -> str:
    return f"ladder-{name}"


def search_lock(name: str) -> str:
    return f"search-{name}"


def site_lock(name: str) -> str:
    return f"site-{name}"


def part_name(index: int, suffix: str | None = "parquet") -> str:
    """The file name of a source's `index`-th shard: part-00000.parquet (part-00000 without a suffix)."""
    return f"part-{index:05d}" + (f".{suffix}" if suffix else "")


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def locate(cls, option: str | None) -> "Workspace":
        """--workspace, else $LOOM_WORKSPACE, else ./loom-work: a folder, or a URL (s3://bucket/prefix)."""
        where = option or os.environ.get("LOOM_WORKSPACE") or DEFAULT_WORKSPACE
        return cls(as_path(where.rstrip("/")) if is_url(where) else as_path(where).resolve())

    def loom_command(self) -> str:
        """`loom`, with `-w` naming this workspace unless it is the one found without it: the start of a command a
        message prints, so that it runs as printed."""
        return "loom" if Workspace.locate(None) == self else f"loom -w {shlex.quote(str(self.root))}"

    @property
    def remote(self) -> bool:
        """On an object store: no rename, no hard link, no flock (see curation.publish and base.lock)."""
        return is_remote(self.root)

    @property
    def sources_file(self) -> Path:
        return self.root / SOURCES_FILE

    # ---- models ----

    @property
    def models(self) -> Path:
        return self.root / MODELS_DIR

    @property
    def tokenizer(self) -> Path:
        return self.models / TOKENIZER_FILE

    @property
    def quality_model(self) -> Path:
        return self.models / QUALITY_MODEL_FILE

    # ---- curation ----
    # Curated data is published in generations: each one a folder with its curated Parquet, manifest and
    # quarantine that never changes once published; `published.json`, replaced atomically, names the current one.

    @property
    def generations(self) -> Path:
        return self.root / GENERATIONS_DIR

    def generation(self, generation_id: str) -> "Generation":
        """Generation "" is a workspace's own top-level folders (see `published`)."""
        folder = self.generations / generation_id if generation_id else self.root
        return Generation(folder, generation_id)

    @property
    def published_file(self) -> Path:
        return self.root / PUBLISHED_FILE

    def published(self) -> "Generation":
        """The generation readers see: the one published.json names, read once per call. A workspace curated
        before generations existed has none; its own curated/ and manifest/ folders are read as generation "".
        On an object store a generation counts only once its `_SUCCESS` marker is written (see curation.publish)."""
        try:
            gen = self.generation(json.loads(self.published_file.read_text(encoding="utf-8"))["generation"])
        except FileNotFoundError:
            return self.generation("")
        if self.remote and not gen.success_marker.exists():
            raise FileNotFoundError(f"{self.published_file} names generation {gen.id}, which has no {gen.success_marker.name}")
        return gen

    @property
    def locks(self) -> Path:
        return self.root / LOCKS_DIR

    def lock_file(self, target: str) -> Path:
        """The lock of one writable target: WORKSPACE_LOCK, or one that a function above names."""
        return self.locks / f"{target}.lock"

    @property
    def work(self) -> Path:
        """Intermediate per-stage outputs; kept so that a rerun can skip finished shards."""
        return self.root / WORK_DIR

    def stage_dir(self, stage: str) -> Path:
        return self.work / stage

    def stage_part(self, stage: str, source: str, shard_index: int, suffix: str = "parquet") -> Path:
        return self.stage_dir(stage) / source / part_name(shard_index, suffix)

    # ---- mixtures and runs ----

    @property
    def mixtures(self) -> Path:
        """Compiled mixtures (mixtures/NAME/), and the workspace's own specs (mixtures/NAME.toml)."""
        return self.root / MIXTURES_DIR

    def mixture_dir(self, name: str) -> Path:
        """A mixture's folder: its builds and current.json (the paths inside are mixtures.compiled's), report.html."""
        return self.mixtures / name

    def mixture_card(self, name: str) -> Path:
        """`loom card NAME`: the mixture's data card, beside its report.html."""
        return self.mixture_dir(name) / CARD_FILE

    @property
    def runs(self) -> Path:
        return self.root / RUNS_DIR

    def run_dir(self, name: str) -> Path:
        return self.runs / name

    @property
    def reproduce_file(self) -> Path:
        """In a workspace `loom reproduce` fills: the run folder it reproduces, so that a rerun goes on."""
        return self.root / REPRODUCE_FILE

    def export_dir(self, name: str) -> Path:
        """A mixture's exports (`loom mix export`): one folder per format, and per phase when one is exported."""
        return self.root / EXPORTS_DIR / name

    def ladder_dir(self, name: str) -> Path:
        """A ladder's folder: ladder.toml as resolved, fit.json, points.parquet, report.html, logs/."""
        return self.root / LADDERS_DIR / name

    def search_dir(self, name: str) -> Path:
        """A mixture search's folder: search.toml as resolved, search.json, report.html, logs/."""
        return self.root / SEARCHES_DIR / name

    @property
    def sites(self) -> Path:
        return self.root / SITES_DIR

    def site_dir(self, name: str) -> Path:
        """A published site (`loom publish NAME`): a static folder to copy anywhere and open (reports.site)."""
        return self.sites / name


@dataclass(frozen=True)
class Generation:
    """One published state of the curated data: where its parts are. Paths inside it (the manifest's shard paths)
    are relative to its root."""

    root: Path
    id: str

    @property
    def curated(self) -> Path:
        return self.root / CURATED_DIR

    def relative(self, path) -> str:
        """A path inside the generation as the manifest spells it: relative to its root."""
        return str(path)[len(str(self.root)) + 1:]

    @property
    def success_marker(self) -> Path:
        """Written last into a generation built in place on an object store: the generation's commit."""
        return self.root / SUCCESS_FILE

    def curated_part(self, source: str, shard_index: int) -> Path:
        return self.curated / source / part_name(shard_index)

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_DIR

    def manifest_table(self, name: str) -> Path:
        """One of the manifest's Parquet tables: shards, documents, funnel, dedup_clusters, quality_buckets,
        contamination, domains. The per-document ones (PART_TABLES) are folders of parts, one per curated shard,
        whose rows in file-name order are the table's rows in order; pyarrow reads such a folder as one table."""
        return self.root / manifest_table(name)

    def manifest_part(self, name: str, ordinal: int) -> Path:
        """The part of a per-document table written for the shard at `ordinal` in publish order (source rank, then
        shard index): manifest/<name>/part-NNNNN.parquet."""
        return self.manifest_table(name) / part_name(ordinal)

    def manifest_files(self, name: str) -> Path:
        """What SQL reads for a manifest table: its file, or its folder's parts as a glob (DuckDB reads a glob's
        files in name order)."""
        return self.root / manifest_files(name)

    @property
    def curation_info(self) -> Path:
        """What the data was curated with: the tokenizer and its fingerprint, the quality model, the sources."""
        return self.manifest / CURATION_INFO_FILE

    @property
    def inputs_record(self) -> Path:
        """What the curation read: its sources.toml, each input file's size and digest, the models (INPUTS_FILE)."""
        return self.manifest / INPUTS_FILE

    @property
    def curation_report(self) -> Path:
        return self.manifest / REPORT_FILE

    @property
    def card(self) -> Path:
        """`loom card`: the data card of this generation's curated data, beside its report.html."""
        return self.manifest / CARD_FILE

    @property
    def quarantine(self) -> Path:
        return self.root / QUARANTINE_DIR

    def quarantine_part(self, source: str, shard_index: int) -> Path:
        return self.quarantine / source / part_name(shard_index, "jsonl")


def examples_dir() -> Path:
    """The bundled sample corpora, sources and mixtures (installed as the `examples` package data)."""
    spec = importlib.util.find_spec("examples")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the bundled examples are not installed; reinstall Loom with `make install`")
    return Path(list(spec.submodule_search_locations)[0])
