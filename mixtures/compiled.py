"""A compiled mixture's folder (WORKSPACE/mixtures/NAME/): the names of its files, and its plan read back."""

from pathlib import Path

from loom.io import as_path, read_parquet

SPEC_FILE = "mixture.toml"  # the spec as resolved
SCHEDULE_FILE = "schedule.json"  # phases, components, fingerprints: what Schedule loads
PLAN_FILE = "plan.parquet"  # phase x component (schema mixtures.plan.PLAN)
SEQUENCES_DIR = "sequences"  # a sequence index per component
VALIDATION_FILE = "validation.parquet"  # the held-out documents of each source (schema: mixtures.heldout.hold_out)
EVALS_DIR = "evals"  # a tokenized eval set per [eval.NAME] (mixtures.evalsets)


def sequences_file(component: int) -> str:
    """A component's sequence index, relative to the folder (schedule.json records it per component)."""
    return f"{SEQUENCES_DIR}/component-{component:03d}.parquet"


def eval_file(name: str) -> str:
    return f"{EVALS_DIR}/{name}.parquet"


def read_plan(folder: Path) -> list[dict]:
    return read_parquet(as_path(folder) / PLAN_FILE).to_pylist()
