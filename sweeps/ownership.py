"""Which sweep a mixture or run belongs to. A sweep names what it makes SWEEP-LABEL (a ladder's rungs, a search's
proxies and confirm runs), so a name alone cannot say whose it is: each mixture a sweep compiles, and the run of
the same name, carries a mark (mixtures/NAME/sweep.json, runs/NAME/sweep.json: the sweep's kind and name), and a
sweep's own folder lists what it still needs (ladder.toml's rungs, search.toml's designs, search.json's confirm
runs). `loom gc` removes what a removed sweep left (a mark naming a sweep whose folder is gone), and `loom mix rm`,
`loom runs rm` refuse what an existing sweep still needs. A workspace's sweeps run before marks existed are
known by their folder's listing only: once the folder is gone, what they left is the user's to remove."""

import json
import tomllib
from pathlib import Path

from base.atomic_files import write_text
from base.small_files import read_text
from base.workspace import (LADDER_SPEC_FILE, LADDERS_DIR, SEARCH_FILE, SEARCH_SPEC_FILE, SEARCHES_DIR,
                            SWEEP_MARK_FILE, Workspace)
from trainer.cooldowns import COOLDOWN_INFIX

LADDER, SEARCH = "ladder", "search"
CONFIRM_LABELS = ("searched", "proportional", "uniform", "unimax")  # a search's confirm runs: SEARCH-LABEL


def mark(ws: Workspace, kind: str, sweep: str, names) -> None:
    """Marks each of `names` (a mixture and the run of the same name) as made by sweep `sweep` of `kind`."""
    record = json.dumps({"kind": kind, "name": sweep}) + "\n"
    for name in names:
        for folder in (ws.mixture_dir(name), ws.run_dir(name)):
            path = folder / SWEEP_MARK_FILE
            if not path.exists() or read_text(path) != record:
                write_text(record, path)


def marked_by(folder: Path) -> tuple[str, str] | None:
    """(kind, sweep name) of the sweep that made this mixture's or run's folder, or None (not a sweep's, or made
    before marks)."""
    try:
        record = json.loads(read_text(folder / SWEEP_MARK_FILE))
        return record["kind"], record["name"]
    except (FileNotFoundError, NotADirectoryError, ValueError, KeyError, TypeError):
        return None


def sweep_folder(ws: Workspace, kind: str, name: str) -> Path:
    return ws.ladder_dir(name) if kind == LADDER else ws.search_dir(name)


def describe(kind: str, name: str) -> str:
    return f"{kind} '{name}'"


def base_run(run: str) -> str:
    """A cooldown run's main run (RUN-cooldown-STEPS -> RUN); any other run's own name."""
    head, infix, tail = run.rpartition(COOLDOWN_INFIX)
    return head if infix and tail.isdigit() else run


def claims(ws: Workspace) -> dict[str, str]:
    """Every mixture and run name an existing ladder or search still needs -> the sweep, described: the names its
    folder lists, the marked ones whose sweep's folder exists, and a search's chosen mixture (mixtures/NAME.toml
    and its compiled folder)."""
    found = {}
    for spec in sorted((ws.root / LADDERS_DIR).glob(f"*/{LADDER_SPEC_FILE}")):
        name = spec.parent.name
        for rung in _toml(spec).get("rung", []):
            found[f"{name}-{rung.get('name')}"] = describe(LADDER, name)
    searches = ws.root / SEARCHES_DIR
    for folder in sorted(p for p in searches.iterdir() if p.is_dir()) if searches.is_dir() else []:
        name = folder.name
        listed = [d.get("name") for d in _toml(folder / SEARCH_SPEC_FILE).get("design", [])]
        for label in [*listed, *CONFIRM_LABELS, *_confirm_labels(folder)]:
            found[f"{name}-{label}"] = describe(SEARCH, name)
        found[name] = describe(SEARCH, name)
    for parent in (ws.mixtures, ws.runs):
        for mark_file in sorted(parent.glob(f"*/{SWEEP_MARK_FILE}")):
            owner = marked_by(mark_file.parent)
            if owner is not None and sweep_folder(ws, *owner).is_dir():
                found.setdefault(mark_file.parent.name, describe(*owner))
    return found


def claimed_by(claimed: dict[str, str], name: str) -> str | None:
    """The sweep that needs mixture or run `name` (a cooldown run: the one that needs its main run)."""
    return claimed.get(name) or claimed.get(base_run(name))


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(read_text(path))
    except (FileNotFoundError, tomllib.TOMLDecodeError):
        return {}


def _confirm_labels(folder: Path) -> list[str]:
    try:
        confirm = json.loads(read_text(folder / SEARCH_FILE)).get("confirm") or {}
    except (FileNotFoundError, ValueError):
        return []
    return [run.get("mixture") for run in confirm.get("runs", [])]
