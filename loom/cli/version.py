"""`loom --version`: the installed package's version, and the git commit when Loom runs from a checkout."""

import subprocess
from importlib import metadata
from pathlib import Path

import loom

CHECKOUT = Path(loom.__file__).resolve().parents[1]  # the folder holding the loom package: a clone, when run from one


def version_line() -> str:
    """`loom 0.1.0`, or `loom 0.1.0 (git 2714af7 in /src/loom)` from a checkout; `+ changes` when files differ from
    that commit."""
    commit = git_commit(CHECKOUT)
    return f"loom {package_version()}" + (f" (git {commit} in {CHECKOUT})" if commit else "")


def package_version() -> str:
    try:
        return metadata.version("loom")
    except metadata.PackageNotFoundError:  # run from a clone that is not installed (PYTHONPATH)
        return loom.__version__


def git_commit(folder: Path) -> str | None:
    """The short commit `folder` is checked out at, with ` + changes` when tracked files differ from it; None when
    it is not a git checkout (an installed copy) or git is not there."""
    if not (folder / ".git").exists():
        return None
    try:
        commit = git(folder, "rev-parse", "--short", "HEAD")
        changed = git(folder, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + (" + changes" if changed else "")


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True,
                          timeout=10).stdout.strip()
