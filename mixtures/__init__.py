"""Mixture specs, the compiler (token allocation, 80/20 phases, epochs) and the schedule it writes."""

from pathlib import Path

from loom.workspace import Workspace
from mixtures.compiler import check_current, compile_mixture
from mixtures.schedule import Schedule, SequenceIndex
from mixtures.spec import MixtureSpec, find_spec, load_spec

__all__ = ["MixtureSpec", "Schedule", "SequenceIndex", "compile_mixture", "find_spec", "load_schedule", "load_spec"]


def load_schedule(folder: Path, layout: Workspace) -> Schedule:
    """A compiled schedule, refused when the workspace's curated data or tokenizer changed since."""
    schedule = Schedule.load(folder)
    check_current(schedule.meta, layout)
    return schedule
