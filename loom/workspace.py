"""The workspace folder: where it is, and where each of its parts lives. Every path a command reads or writes
inside a workspace is named here, and nowhere else. The root is a local folder (a Path) or a URL on an object
store (a UPath, see loom.io.as_path); the same `/` joins name the parts of both."""

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from loom.io import as_path, is_remote, is_url

DEFAULT_WORKSPACE = "loom-work"
LADDER_FIT_FILE = "fit.json"  # in a ladder's folder: its rungs, fits and predictions (sweeps.results)
PART_TABLES = ("documents", "funnel")  # manifest tables written per shard, as folders of parts


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

    @property
    def remote(self) -> bool:
        """On an object store: no rename, no hard link, no flock (see curation.publish and loom.lock)."""
        return is_remote(self.root)

    @property
    def sources_file(self) -> Path:
        return self.root / "sources.toml"

    # ---- models ----

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def tokenizer(self) -> Path:
        return self.models / "tokenizer.json"

    @property
    def quality_model(self) -> Path:
        return self.models / "quality.bin"

    # ---- curation ----
    # Curated data is published in generations: each one a folder with its curated Parquet, manifest and
    # quarantine that never changes once published; `published.json`, replaced atomically, names the current one.

    @property
    def generations(self) -> Path:
        return self.root / "generations"

    def generation(self, generation_id: str) -> "Generation":
        """Generation "" is a workspace's own top-level folders (see `published`)."""
        folder = self.generations / generation_id if generation_id else self.root
        return Generation(folder, generation_id)

    @property
    def published_file(self) -> Path:
        return self.root / "published.json"

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
        return self.root / "locks"

    def lock_file(self, target: str) -> Path:
        """The lock of one writable target: `workspace`, `mixture-NAME` or `run-NAME`."""
        return self.locks / f"{target}.lock"

    @property
    def work(self) -> Path:
        """Intermediate per-stage outputs; kept so that a rerun can skip finished shards."""
        return self.root / "work"

    def stage_dir(self, stage: str) -> Path:
        return self.work / stage

    def stage_part(self, stage: str, source: str, shard_index: int, suffix: str = "parquet") -> Path:
        return self.stage_dir(stage) / source / part_name(shard_index, suffix)

    # ---- mixtures and runs ----

    @property
    def mixtures(self) -> Path:
        """Compiled mixtures (mixtures/NAME/), and the workspace's own specs (mixtures/NAME.toml)."""
        return self.root / "mixtures"

    def mixture_dir(self, name: str) -> Path:
        """A mixture's folder: its builds and current.json (the paths inside are mixtures.compiled's), report.html."""
        return self.mixtures / name

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def run_dir(self, name: str) -> Path:
        return self.runs / name

    def export_dir(self, name: str) -> Path:
        """A mixture's exports (`loom mix export`): one folder per format, and per phase when one is exported."""
        return self.root / "exports" / name

    def ladder_dir(self, name: str) -> Path:
        """A ladder's folder: ladder.toml as resolved, fit.json, points.parquet, report.html, logs/."""
        return self.root / "ladders" / name

    def search_dir(self, name: str) -> Path:
        """A mixture search's folder: search.toml as resolved, search.json, report.html, logs/."""
        return self.root / "searches" / name


@dataclass(frozen=True)
class Generation:
    """One published state of the curated data: where its parts are. Paths inside it (the manifest's shard paths)
    are relative to its root."""

    root: Path
    id: str

    @property
    def curated(self) -> Path:
        return self.root / "curated"

    def relative(self, path) -> str:
        """A path inside the generation as the manifest spells it: relative to its root."""
        return str(path)[len(str(self.root)) + 1:]

    @property
    def success_marker(self) -> Path:
        """Written last into a generation built in place on an object store: the generation's commit."""
        return self.root / "_SUCCESS"

    def curated_part(self, source: str, shard_index: int) -> Path:
        return self.curated / source / part_name(shard_index)

    @property
    def manifest(self) -> Path:
        return self.root / "manifest"

    def manifest_table(self, name: str) -> Path:
        """One of the manifest's Parquet tables: shards, documents, funnel, dedup_clusters, quality_buckets. The
        per-document ones (PART_TABLES) are folders of parts, one per curated shard, whose rows in file-name
        order are the table's rows in order; pyarrow reads such a folder as one table."""
        return self.manifest / (name if name in PART_TABLES else f"{name}.parquet")

    def manifest_part(self, name: str, ordinal: int) -> Path:
        """The part of a per-document table written for the shard at `ordinal` in publish order (source rank, then
        shard index): manifest/<name>/part-NNNNN.parquet."""
        return self.manifest_table(name) / part_name(ordinal)

    def manifest_files(self, name: str) -> Path:
        """What SQL reads for a manifest table: its file, or its folder's parts as a glob (DuckDB reads a glob's
        files in name order)."""
        table = self.manifest_table(name)
        return table / "*.parquet" if name in PART_TABLES else table

    @property
    def curation_info(self) -> Path:
        """What the data was curated with: the tokenizer and its fingerprint, the quality model, the sources."""
        return self.manifest / "curation.json"

    @property
    def curation_report(self) -> Path:
        return self.manifest / "report.html"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    def quarantine_part(self, source: str, shard_index: int) -> Path:
        return self.quarantine / source / part_name(shard_index, "jsonl")


def examples_dir() -> Path:
    """The bundled sample corpora, sources and mixtures (installed as the `examples` package data)."""
    spec = importlib.util.find_spec("examples")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the bundled examples are not installed; reinstall Loom with `make install`")
    return Path(list(spec.submodule_search_locations)[0])
