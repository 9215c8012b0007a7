"""Mixture specs, the compiler (token allocation, 80/20 phases, epochs) and the schedule it writes. What other
packages use of a mixture is imported from here."""

from pathlib import Path
from typing import Callable

from base.atomic_files import remove_temporary_files
from base.lock import exclusive
from base.workspace import Generation, Workspace, mixture_lock
from mixtures.builds import current_schedule, load_meta, publish_build, reading
from mixtures.cells import cell_label, cell_wildcards
from mixtures.compile import check_current, compile_mixture, mixture_tokenizer
from mixtures.compiled import (PLAN_FILE, SCHEDULE_FILE, Build, compiled_mixtures, current_build, read_licenses,
                               read_plan)
from mixtures.manifest import shard_sources
from mixtures.schedule import Schedule, SequenceIndex, schedule_fingerprint, target_shares
from mixtures.sequences import RowGroupCache, SequenceReader
from mixtures.spec import MixtureSpec, find_spec, load_spec, spec_files

__all__ = ["PLAN_FILE", "SCHEDULE_FILE", "Build", "MixtureSpec", "RowGroupCache", "Schedule", "SequenceIndex",
           "SequenceReader", "build_mixture", "cell_label", "cell_wildcards", "compile_mixture", "compiled_mixtures",
           "current_build", "current_schedule", "find_spec", "load_meta", "load_schedule", "load_spec",
           "mixture_tokenizer", "read_plan", "reading", "schedule_fingerprint", "shard_sources", "spec_files",
           "target_shares"]


def build_mixture(spec: MixtureSpec, ws: Workspace, note: Callable[[str], None] = lambda line: None
                  ) -> tuple[Build, dict]:
    """Compiles `spec` into a new build of mixtures/NAME/ and publishes it (see mixtures.builds), holding the
    mixture's lock (a second writer is refused in one line; `note` is told of a lock taken over) with the temporary
    files a killed build left removed first. Every caller, `loom mix build` and a sweep alike, compiles through it."""
    folder = ws.mixture_dir(spec.name)
    with exclusive(ws.lock_file(mixture_lock(spec.name)), f"mixture '{spec.name}' in {ws.root}", note):
        remove_temporary_files(folder)
        return publish_build(folder, lambda out: compile_mixture(spec, ws, out))


def load_schedule(folder: Path, layout: Workspace) -> tuple[Schedule, Generation]:
    """A compiled schedule (`folder`: a build's root) and the generation of curated data it reads, refused when the
    workspace has published other curated data or changed its tokenizer since."""
    schedule = Schedule.load(folder)
    return schedule, check_current(schedule.meta, layout)
