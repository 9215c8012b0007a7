"""Where curation reads and writes inside a workspace folder."""

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CurationLayout:
    root: Path

    @property
    def curated(self) -> Path:
        return self.root / "curated"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest"

    @property
    def quarantine(self) -> Path:
        return self.root / "quarantine"

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def work(self) -> Path:
        """Intermediate per-stage outputs; kept so that a rerun can skip finished shards."""
        return self.root / "work"

    @property
    def tokenizer(self) -> Path:
        return self.models / "tokenizer.json"

    def curated_part(self, source: str, shard_index: int) -> Path:
        return self.curated / source / f"part-{shard_index:05d}.parquet"

    def stage_part(self, stage: str, source: str, shard_index: int, suffix: str = "parquet") -> Path:
        return self.work / stage / source / f"part-{shard_index:05d}.{suffix}"

    def quarantine_part(self, source: str, shard_index: int) -> Path:
        return self.quarantine / source / f"part-{shard_index:05d}.jsonl"
