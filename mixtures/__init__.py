"""Mixture specs, the compiler (token allocation, 80/20 phases, epochs) and the schedule it writes. What other
packages use of a mixture is imported from here."""

from pathlib import Path

from loom.workspace import Workspace
from mixtures.compile import check_current, compile_mixture
from mixtures.compiled import PLAN_FILE, SCHEDULE_FILE, read_plan
from mixtures.manifest import shard_sources
from mixtures.schedule import Schedule, SequenceIndex, target_shares
from mixtures.spec import MixtureSpec, find_spec, load_spec, spec_files

__all__ = ["PLAN_FILE", "SCHEDULE_FILE", "MixtureSpec", "Schedule", "SequenceIndex", "compile_mixture", "find_spec",
           "load_schedule", "load_spec", "read_plan", "shard_sources", "spec_files", "target_shares"]


def load_schedule(folder: Path, layout: Workspace) -> Schedule:
    """A compiled schedule, refused when the workspace's curated data or tokenizer changed since."""
    schedule = Schedule.load(folder)
    check_current(schedule.meta, layout)
    return schedule
