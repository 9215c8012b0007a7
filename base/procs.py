"""Child processes that die with the process that started them. A ladder or a search starts `loom train`, which
may start torchrun, which starts the ranks; none of them may outlive its parent, however the parent dies (kill -9
included), or it keeps training and holds the run's lock. On Linux the kernel sends a child SIGKILL when its
parent dies (`prctl(PR_SET_PDEATHSIG)`); elsewhere nothing changes.

The parent puts its pid in the child's environment (`dying_with_this_process`); the child, first thing, asks for
the signal (`die_with_parent`). The pid closes the race: a parent that died before the child asked is no longer
its parent, and the child ends at once. A child that is not Loom's own code (torchrun's ranks are started by
torch) gets the pid through the environment its starter copies, set by Loom's code in that starter.

How they end: the `loom` command and each curation worker exit without a last garbage collection
(`exit_without_collecting`)."""

import atexit
import ctypes
import gc
import os
import signal
import sys
from pathlib import Path

PARENT_PID = "LOOM_PARENT_PID"
PR_SET_PDEATHSIG = 1  # linux/prctl.h
# `python -m trainer` puts the current folder first on sys.path; started from inside a workspace, its mixtures/
# folder would be taken for the `mixtures` package (a namespace package wins over an editable install's finder).
# With the folder that holds Loom's packages on PYTHONPATH, the real packages are found first.
PACKAGES_ROOT = str(Path(__file__).resolve().parents[1])


def loom_pythonpath() -> str:
    """PYTHONPATH for a child `python -m ...` of Loom's own: the folder that holds Loom's packages, then any the
    user set."""
    return os.pathsep.join(filter(None, [PACKAGES_ROOT, os.environ.get("PYTHONPATH")]))


def dying_with_this_process(env: dict[str, str]) -> dict[str, str]:
    """`env` for a child that calls `die_with_parent`: it will die with this process."""
    return {**env, PARENT_PID: str(os.getpid())}


def die_with_parent() -> None:
    """This process dies (SIGKILL) when the parent that asked for it (PARENT_PID) dies. The variable is taken out
    of the environment, so a process this one starts asks only if this one says so again."""
    expected = os.environ.pop(PARENT_PID, None)
    if not expected or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        return  # not allowed here (a sandbox): the process runs as before
    if str(os.getppid()) != expected:  # the parent died before the signal was asked for: it would never come
        os.kill(os.getpid(), signal.SIGKILL)


def exit_without_collecting() -> None:
    """At exit Python collects garbage once more, walking every object the process still holds (a worker's word
    memo, torch's modules): ~1 s of each `loom` command that trained and of each curation worker's exit (a training
    rank skips the interpreter's teardown altogether: trainer.distributed.exit_rank). Frozen, they are left to the
    operating system, which frees the memory anyway. Registered first, it runs after every other exit handler."""
    atexit.register(gc.freeze)
