"""The workspace folder: where it is, and where each of its parts lives. Every path a command reads or writes
inside a workspace is named here, and nowhere else."""

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_WORKSPACE = "loom-work"


def part_name(index: int, suffix: str | None = "parquet") -> str:
    """The file name of a source's `index`-th shard: part-00000.parquet (part-00000 without a suffix)."""
    return f"part-{index:05d}" + (f".{suffix}" if suffix else "")


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def locate(cls, option: str | None) -> "Workspace":
        """--workspace, else $LOOM_WORKSPACE, else ./loom-work."""
        return cls(Path(option or os.environ.get("LOOM_WORKSPACE") or DEFAULT_WORKSPACE).resolve())

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

    @property
    def curated(self) -> Path:
        return self.root / "curated"

    def curated_part(self, source: str, shard_index: int) -> Path:
        return self.curated / source / part_name(shard_index)

    @property
    def manifest(self) -> Path:
        return self.root / "manifest"

    def manifest_table(self, name: str) -> Path:
        """One of the manifest's Parquet tables: shards, documents, funnel, dedup_clusters, quality_buckets."""
        return self.manifest / f"{name}.parquet"

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
        return self.mixtures / name

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def run_dir(self, name: str) -> Path:
        return self.runs / name


def examples_dir() -> Path:
    """The bundled sample corpora, sources and mixtures (installed as the `examples` package data)."""
    spec = importlib.util.find_spec("examples")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the bundled examples are not installed; reinstall Loom with `make install`")
    return Path(list(spec.submodule_search_locations)[0])
