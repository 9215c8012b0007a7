"""`Workspace.remove_mixture` (`loom mix rm`), `.remove_run` (`loom runs rm`) and `.gc` (`loom gc`): what they
remove, listed with the bytes it frees, and removed (or, with dry_run, only listed: the same list).

A held lock is never overridden, not even with force: a mixture being built or read (its lock, a build's shared
readers.lock), a run being trained (its lock). What a ladder or search still needs (sweeps.ownership.claims), and
a run's cooldown runs (removed with it), are refused unless force. `gc` removes the compiled builds of stale
mixtures (compiled on curated data no longer published; a workspace spec, mixtures/NAME.toml, is kept), the old
builds of current mixtures no reader holds (a rebuild removes them too, unless one was read then), the mixtures
and runs of sweeps whose folder was removed (their marks, sweeps.ownership), and the temporary files of writers
that died (base.atomic_files' names whose pid is gone). Only local workspaces; nothing outside the workspace is
touched (a symbolic link is removed as a link)."""

import os
import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from base.atomic_files import TEMPORARY_GLOB, remove_tree
from base.errors import UserError, did_you_mean
from base.lock import describe, exclusive, holder, is_held
from base.workspace import (BUILDS_DIR, COMPARE_DIR, EXPORTS_DIR, LADDERS_DIR, RUN_FILE, SEARCHES_DIR,
                            SWEEP_MARK_FILE, Workspace, mixture_lock, run_lock)

NEVER_OVERRIDDEN = "a held lock is never overridden, not even with --force"


@dataclass(frozen=True)
class Removal:
    path: Path
    bytes: int  # freed: the files only this path links (a file hard-linked elsewhere frees nothing)
    what: str  # why it goes: "mixture 'x'", "stale mixture 'x'", "old build of mixture 'x'", ...
    lock: str | None = None  # the lock target held while it is removed
    folder: bool = False  # a folder (not a file, nor a link)


@dataclass
class Cleanup:
    """What a removal removed (or, dry_run, would remove), and what `gc` kept and why (lines)."""

    removals: list[Removal] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def freed(self) -> int:
        return sum(r.bytes for r in self.removals)


def size_of(path: Path) -> int:
    """The bytes removing `path` frees: each file (links not followed) whose every hard link is below it, once."""
    if path.is_symlink() or not path.exists():
        return 0
    if not path.is_dir():
        return path.stat().st_size if path.stat().st_nlink == 1 else 0
    seen: dict[tuple[int, int], list] = {}
    for folder, _dirs, names in os.walk(path):
        for name in names:
            info = os.lstat(os.path.join(folder, name))
            entry = seen.setdefault((info.st_dev, info.st_ino), [info.st_size, info.st_nlink, 0])
            entry[2] += 1
    return sum(size for size, links, found in seen.values() if found >= links)


def removal(path: Path, what: str, lock: str | None = None) -> Removal:
    return Removal(path, size_of(path), what, lock, path.is_dir() and not path.is_symlink())


def local(ws, command: str) -> Workspace:
    files: Workspace = ws.files
    if files.remote:
        raise UserError(f"`loom {command}` works on a local workspace only ({files.root}); remove the objects with "
                        "your store's tools")
    return files


def lock_in_use(files: Workspace, target: str, what: str) -> str | None:
    """`what` is in use by ...: the line for a held lock, or None."""
    path = files.lock_file(target)
    if not is_held(path):
        return None
    return f"{what} is in use by {describe(holder(path))}; {NEVER_OVERRIDDEN}: wait for it to finish, or stop it"


def mixture_in_use(files: Workspace, name: str) -> str | None:
    from mixtures.builds import being_read

    what = f"mixture '{name}'"
    held = lock_in_use(files, mixture_lock(name), what)
    if held is not None:
        return held
    folder = files.mixture_dir(name)
    builds = sorted(p for p in (folder / BUILDS_DIR).glob("*") if p.is_dir()) if folder.is_dir() else []
    if folder.is_dir() and any(being_read(b) for b in [folder, *builds]):
        return (f"{what} is being read (a run training on it, an export, a report); {NEVER_OVERRIDDEN}: wait for it to "
                "finish, or stop it")
    return None


def spec_path(files: Workspace, name: str) -> Path:
    return files.mixtures / f"{name}.toml"


def remove_mixture(ws, name: str, force: bool = False, dry_run: bool = False) -> Cleanup:
    from base.names import check_name
    from sweeps.ownership import claimed_by, claims

    files = local(ws, "mix rm")
    check_name("mixture", name)
    paths = [p for p in (files.mixture_dir(name), spec_path(files, name)) if p.exists() or p.is_symlink()]
    if not paths:
        known = {p.stem if p.suffix == ".toml" else p.name for p in files.mixtures.glob("*")}
        raise UserError(f"mixture '{name}'{did_you_mean(name, sorted(known))} is not in {files.root} (neither "
                        f"mixtures/{name}/ nor mixtures/{name}.toml); "
                        "`loom mix list` shows the workspace's mixtures")
    refusal = mixture_in_use(files, name)
    if refusal is not None:
        raise UserError(refusal)
    owner = claimed_by(claims(files), name)
    if owner is not None and not force:
        raise UserError(f"mixture '{name}' is needed by {owner}; remove the {owner.split()[0]}'s folder first, or "
                        f"add --force to remove it anyway")
    return carry_out(files, Cleanup([removal(p, f"mixture '{name}'", mixture_lock(name)) for p in paths],
                                    dry_run=dry_run))


def cooldown_runs(files: Workspace, run: str) -> list[str]:
    """The cooldown runs of `run` there are (RUN-cooldown-STEPS, or a run.json whose branch names it)."""
    import json

    from sweeps.ownership import base_run

    found = []
    for folder in sorted(files.runs.glob("*")) if files.runs.is_dir() else []:
        if folder.name == run:
            continue
        try:
            branch = json.loads((folder / RUN_FILE).read_text(encoding="utf-8")).get("branch") or {}
        except (OSError, ValueError, AttributeError):
            branch = {}
        if base_run(folder.name) == run or (isinstance(branch, dict) and branch.get("run") == run):
            found.append(folder.name)
    return found


def remove_run(ws, name: str, force: bool = False, dry_run: bool = False) -> Cleanup:
    from base.names import check_name
    from sweeps.ownership import claimed_by, claims

    files = local(ws, "runs rm")
    check_name("run", name)
    if not (files.run_dir(name).exists() or files.run_dir(name).is_symlink()):
        known = sorted(p.name for p in files.runs.glob("*") if p.is_dir())
        raise UserError(f"run '{name}'{did_you_mean(name, known)} is not in {files.root} (no runs/{name}/); `loom status` "
                        "lists the runs")
    runs = [name, *cooldown_runs(files, name)]
    for run in runs:
        refusal = lock_in_use(files, run_lock(run), f"run '{run}'")
        if refusal is not None:
            raise UserError(refusal)
    owner = claimed_by(claims(files), name)
    if owner is not None and not force:
        raise UserError(f"run '{name}' is needed by {owner}; remove the {owner.split()[0]}'s folder first, or add "
                        "--force to remove it anyway")
    if len(runs) > 1 and not force:
        raise UserError(f"run '{name}' has cooldown runs ({', '.join(runs[1:])}), which go with it; add --force to "
                        "remove them all")
    return carry_out(files, Cleanup([removal(files.run_dir(r), f"run '{r}'", run_lock(r)) for r in runs],
                                    dry_run=dry_run))


def gc(ws, force: bool = False, dry_run: bool = False) -> Cleanup:
    files = local(ws, "gc")
    plan = Cleanup(dry_run=dry_run)
    leftovers(files, plan)
    gone = {r.path for r in plan.removals}
    stale_mixtures(files, plan, force, gone)
    old_builds(files, plan, {r.path for r in plan.removals})
    temporary_files(files, plan, {r.path for r in plan.removals})
    plan.removals.sort(key=lambda r: str(r.path))
    return carry_out(files, plan)


def leftovers(files: Workspace, plan: Cleanup) -> None:
    """The mixtures and runs (and the runs' cooldowns) a sweep made whose folder is gone."""
    from sweeps.ownership import marked_by, sweep_folder

    for kind, parent in (("mixture", files.mixtures), ("run", files.runs)):
        for folder in sorted(p.parent for p in parent.glob(f"*/{SWEEP_MARK_FILE}")):
            owner = marked_by(folder)
            if owner is None or sweep_folder(files, *owner).is_dir():
                continue
            for name in [folder.name, *(cooldown_runs(files, folder.name) if kind == "run" else [])]:
                add_unless_held(files, plan, kind, name, f"{kind} '{name}' of removed {owner[0]} '{owner[1]}'")


def add_unless_held(files: Workspace, plan: Cleanup, kind: str, name: str, what: str) -> None:
    if kind == "mixture":
        refusal, path, target = mixture_in_use(files, name), files.mixture_dir(name), mixture_lock(name)
    else:
        refusal = lock_in_use(files, run_lock(name), f"run '{name}'")
        path, target = files.run_dir(name), run_lock(name)
    if any(r.path == path for r in plan.removals):
        return
    if refusal is not None:
        plan.kept.append(f"{relative(files, path)}: {refusal}")
    else:
        plan.removals.append(removal(path, what, target))


def stale_mixtures(files: Workspace, plan: Cleanup, force: bool, gone: set) -> None:
    """Compiled mixtures the published data no longer matches: their folder (a workspace spec is kept)."""
    from loom.api.mixtures import STALE, compiled_state
    from mixtures import compiled_mixtures
    from sweeps.ownership import claimed_by, claims

    claimed = claims(files)
    for name in compiled_mixtures(files.mixtures):
        if files.mixture_dir(name) in gone or compiled_state(files, name) != STALE:
            continue
        owner = claimed_by(claimed, name)
        if owner is not None and not force:
            plan.kept.append(f"{relative(files, files.mixture_dir(name))}: stale, but {owner} needs it (--force "
                             "removes it)")
            continue
        add_unless_held(files, plan, "mixture", name, f"stale mixture '{name}'")


def old_builds(files: Workspace, plan: Cleanup, gone: set) -> None:
    """Each mixture's builds other than its current one that no reader holds."""
    from mixtures import compiled_mixtures
    from mixtures.builds import being_read

    for name, current in compiled_mixtures(files.mixtures).items():
        folder = files.mixture_dir(name)
        if folder in gone or is_held(files.lock_file(mixture_lock(name))):
            continue
        for build in sorted((folder / BUILDS_DIR).iterdir()) if (folder / BUILDS_DIR).is_dir() else []:
            if build.name == current.id:
                continue
            if not build.name.startswith(".") and being_read(build):
                plan.kept.append(f"{relative(files, build)}: an old build of mixture '{name}' being read")
                continue
            plan.removals.append(removal(build, f"old build of mixture '{name}'", mixture_lock(name)))


TEMPORARY_PID = re.compile(r"\.tmp-(\d+)$")


def temporary_files(files: Workspace, plan: Cleanup, gone: set) -> None:
    """base.atomic_files' temporary names left by writers that died, in the folders commands other than curation
    write (curation removes its own under its lock)."""
    folders = [files.mixtures, files.runs, files.root / LADDERS_DIR, files.root / SEARCHES_DIR,
               files.root / EXPORTS_DIR, files.root / COMPARE_DIR[0]]
    found = [p for p in files.root.glob(TEMPORARY_GLOB)]
    found += [p for folder in folders if folder.is_dir() for p in folder.rglob(TEMPORARY_GLOB)]
    for path in sorted(set(found)):
        pid = TEMPORARY_PID.search(path.name)
        if path.is_file() and pid and not alive(int(pid.group(1))) and not any(g in path.parents for g in gone):
            plan.removals.append(removal(path, "temporary file of a writer that died"))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def carry_out(files: Workspace, plan: Cleanup) -> Cleanup:
    """The removals done (unless dry_run), each under its target's lock; one whose lock was taken since the plan
    is kept, with the holder named."""
    if plan.dry_run:
        return plan
    done = []
    for item in plan.removals:
        try:
            with exclusive(files.lock_file(item.lock), item.what) if item.lock else nullcontext():
                remove(item.path)
        except UserError as err:
            plan.kept.append(f"{relative(files, item.path)}: {err}")
            continue
        done.append(item)
    plan.removals = done
    return plan


def remove(path: Path) -> None:
    """Through base.atomic_files.remove_tree; an old build renamed away first under its readers' lock."""
    from mixtures.builds import remove_build

    if path.parent.name == BUILDS_DIR and not path.name.startswith(".") and not path.is_symlink():
        remove_build(path)
    else:
        remove_tree(path)


def relative(files: Workspace, path: Path) -> str:
    return str(path)[len(str(files.root)) + 1:] + ("/" if path.is_dir() and not path.is_symlink() else "")

