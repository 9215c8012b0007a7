"""Loom's processes exit without a last garbage collection: the `loom` command and a curation worker register it
(base.procs.exit_without_collecting) first, so it runs after every other exit handler. (A training rank ends with
os._exit: trainer.distributed.exit_rank.)"""

import subprocess
import sys

import pytest

from helpers import REPO

# An exit handler registered before the entry point runs after the ones it registers: it sees what they left.
FROZEN_AT_EXIT = "import atexit, gc, sys; atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0)); "


def exits_frozen(code: str) -> bool:
    done = subprocess.run([sys.executable, "-c", FROZEN_AT_EXIT + code], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    return done.stdout.strip().splitlines()[-1] == "frozen True"


def test_a_process_that_registers_it_leaves_its_objects_uncollected_at_exit():
    assert exits_frozen("from base.procs import exit_without_collecting; exit_without_collecting()")
    assert not exits_frozen("import base.procs")


@pytest.mark.parametrize("entry", [
    "from loom.cli import main; main(['--help'])",
    "from curation.dask_worker import dask_setup; dask_setup(None)",
])
def test_the_loom_command_and_every_curation_worker_register_it(entry):
    assert exits_frozen(entry)
