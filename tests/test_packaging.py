"""Installing Loom prints no setuptools warning, and the wheel ships what `loom quickstart` reads from examples/.
The build backend's hooks run as pip runs them (pyproject_hooks: every UserWarning a hook raises is printed as a
BuildBackendWarning), on a copy of the repository, so that no build output lands in it."""

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import EXAMPLES, REPO

setuptools = pytest.importorskip("setuptools")
PACKAGES = ("base", "loom", "curation", "mixtures", "trainer", "reports", "sweeps", "examples")  # what a build reads

HOOK = """
import json, sys, warnings
import setuptools.build_meta as backend

with warnings.catch_warnings(record=True) as caught:
    built = getattr(backend, sys.argv[1])(sys.argv[2])
print(json.dumps({"file": built, "warnings": [str(w.message).splitlines()[0] for w in caught
                                              if issubclass(w.category, UserWarning)]}))
"""


def build(hook: str, source: Path, out: Path) -> dict:
    """The hook's output file and the first line of each warning pip would print."""
    out.mkdir(exist_ok=True)
    result = subprocess.run([sys.executable, "-c", HOOK, hook, str(out)], cwd=source, capture_output=True, text=True,
                            check=True, timeout=600)
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.skipif(int(setuptools.__version__.split(".")[0]) < 77, reason="pyproject.toml needs setuptools>=77")
def test_building_loom_warns_nothing_and_ships_the_examples(tmp_path):
    source = tmp_path / "loom"
    for package in PACKAGES:
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    for file in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / file, source / file)
    assert build("build_editable", source, tmp_path / "editable")["warnings"] == []  # `pip install -e .`
    wheel = build("build_wheel", source, tmp_path / "wheel")
    assert wheel["warnings"] == []

    shipped = set(zipfile.ZipFile(tmp_path / "wheel" / wheel["file"]).namelist())
    bundled = {str(p.relative_to(REPO)) for p in EXAMPLES.rglob("*") if p.is_file() and "__pycache__" not in p.parts
               and not p.name.startswith(".")}
    assert "examples/sources.toml" in bundled and bundled - shipped == set()
    floors = {f"{package}/__init__.py" for package in PACKAGES if package != "examples"}
    assert floors - shipped == set()  # every floor's package ships
