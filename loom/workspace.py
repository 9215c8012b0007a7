"""The workspace folder: where it is, and where each of its parts lives."""

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from curation.layout import CurationLayout

DEFAULT_WORKSPACE = "loom-work"


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

    @property
    def mixtures(self) -> Path:
        return self.root / "mixtures"

    @property
    def curation(self) -> CurationLayout:
        return CurationLayout(self.root)


def examples_dir() -> Path:
    """The bundled sample corpora, sources and mixtures (installed as the `examples` package data)."""
    spec = importlib.util.find_spec("examples")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the bundled examples are not installed; reinstall Loom with `make install`")
    return Path(list(spec.submodule_search_locations)[0])
