"""A compiled mixture's folder (WORKSPACE/mixtures/NAME/) and the names of its files. A mixture is published in
builds, as curated data is in generations: each `loom mix build` writes a new build folder (builds/<id>/, holding
the files below) that never changes once published, and `current.json`, replaced atomically, names the current one.
A reader resolves that pointer once (`current_build`) and reads that build's files only (see mixtures.builds)."""

import json
from dataclasses import dataclass
from pathlib import Path

from base.parquet_files import read_parquet
from base.small_files import read_text
from base.store import as_path, is_remote
from base.workspace import (BUILDS_DIR, CURRENT_FILE, EVALS_DIR, LICENSES_FILE, PLAN_FILE,  # noqa: F401
                            READERS_LOCK, SCHEDULE_FILE, SEQUENCES_DIR, SUCCESS_FILE, VALIDATION_FILE)
from base.workspace import MIXTURE_SPEC_FILE as SPEC_FILE

# The files of a build (their names: base.workspace): the spec as resolved (SPEC_FILE); phases, components and
# fingerprints, what Schedule loads (SCHEDULE_FILE); phase x component, schema mixtures.plan.PLAN (PLAN_FILE); a
# sequence index per component (SEQUENCES_DIR); the held-out documents of each source, schema
# mixtures.heldout.hold_out (VALIDATION_FILE); a tokenized eval set per [eval.NAME], mixtures.evalsets (EVALS_DIR);
# the tokens the plan trains per phase and licence, schema mixtures.licenses.LICENSES (LICENSES_FILE).
# In the mixture's folder: CURRENT_FILE, {"build": ID}, the build readers see, and BUILDS_DIR, one folder per build.
# In a local build, READERS_LOCK, empty: each reader holds a shared flock on it while it reads; in a build on an
# object store, SUCCESS_FILE, written last: the build's commit.
BUILD_FILES = (SPEC_FILE, SCHEDULE_FILE, PLAN_FILE, SEQUENCES_DIR, VALIDATION_FILE, EVALS_DIR, LICENSES_FILE)


@dataclass(frozen=True)
class Build:
    """One published build of a mixture: where its files are. Build "" is a folder compiled before builds existed:
    the mixture's folder itself."""

    root: Path
    id: str

    @property
    def mixture(self) -> str:
        return (self.root.parent.parent if self.id else self.root).name

    @property
    def schedule(self) -> Path:
        return self.root / SCHEDULE_FILE

    @property
    def spec(self) -> Path:
        return self.root / SPEC_FILE

    @property
    def readers_lock(self) -> Path:
        return self.root / READERS_LOCK

    @property
    def success_marker(self) -> Path:
        return self.root / SUCCESS_FILE


def builds_dir(folder: Path) -> Path:
    return as_path(folder) / BUILDS_DIR


def current_file(folder: Path) -> Path:
    return as_path(folder) / CURRENT_FILE


def mixture_build(folder: Path, build_id: str) -> Build:
    folder = as_path(folder)
    return Build(builds_dir(folder) / build_id if build_id else folder, build_id)


def current_build(folder: Path) -> Build | None:
    """The build readers see: the one current.json names, read once per call; None where the mixture is not
    compiled. A folder compiled before builds has no current.json and is read as build "". On an object store a
    build counts only once its `_SUCCESS` marker is written."""
    folder = as_path(folder)
    try:
        build = mixture_build(folder, json.loads(read_text(current_file(folder)))["build"])
    except FileNotFoundError:
        return Build(folder, "") if (folder / SCHEDULE_FILE).is_file() else None
    if is_remote(folder) and not build.success_marker.exists():
        raise FileNotFoundError(f"{current_file(folder)} names build {build.id}, which has no {SUCCESS_FILE}")
    return build


def compiled_mixtures(mixtures: Path) -> dict[str, Build]:
    """Every compiled mixture under WORKSPACE/mixtures/, by name: its current build."""
    mixtures = as_path(mixtures)
    if not mixtures.exists():
        return {}
    found = {folder.name: current_build(folder) for folder in sorted(mixtures.iterdir(), key=lambda p: p.name)
             if folder.is_dir()}
    return {name: build for name, build in found.items() if build is not None}


def sequences_file(component: int) -> str:
    """A component's sequence index, relative to the build (schedule.json records it per component)."""
    return f"{SEQUENCES_DIR}/component-{component:03d}.parquet"


def eval_file(name: str) -> str:
    return f"{EVALS_DIR}/{name}.parquet"


def read_plan(folder: Path) -> list[dict]:
    """The plan of a build (its root)."""
    return read_parquet(as_path(folder) / PLAN_FILE).to_pylist()


def read_licenses(folder: Path) -> list[dict]:
    """The tokens per phase and licence of a build (its root); none for a build made before licenses.parquet."""
    path = as_path(folder) / LICENSES_FILE
    return read_parquet(path).to_pylist() if path.exists() else []
