"""sweeps.zygote: a sweep's runs forked from one process that imported torch. A forked run must be the `loom`
command it stands for (environment, output, exit code), take Ctrl-C as that command would while the zygote
does not, and end, reported, when the zygote dies. The ladder's kill -9 test (test_ladder.py) covers the
runner's own death."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from base.procs import dying_with_this_process
from sweeps.zygote import Zygote

# a query that runs for minutes in a workspace holding one metrics line: a run that is still running when told
BUSY = ["sql", "SELECT max(hash(range)) FROM range(100000000000)"]


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, str]:
    ws = tmp_path_factory.mktemp("zygote") / "ws"
    (ws / "runs" / "r").mkdir(parents=True)
    (ws / "runs" / "r" / "metrics.jsonl").write_text('{"step": 0, "loss": 1.0}\n')
    return dying_with_this_process({**os.environ, "OMP_NUM_THREADS": "1", "LOOM_WORKSPACE": str(ws)})


@pytest.fixture(scope="module")
def zygote(env):
    """One zygote for the tests that leave it alive (each start imports torch: ~3 s), started as from a terminal:
    pytest-xdist's workers ignore SIGINT, and a zygote started there passes that on (the test below)."""
    with started_with(signal.default_int_handler, env) as zygote:
        yield zygote


def started_with(on_ctrl_c, env) -> Zygote:
    """A zygote started by a runner whose SIGINT handling is `on_ctrl_c`."""
    before = signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        return Zygote(env)
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_forked_run_is_the_command_it_stands_for(zygote, env, tmp_path):
    """The same `loom` arguments and environment (the workspace given only by $LOOM_WORKSPACE) as a process of its
    own and as a fork: the same exit code and the same output, which the fork appends to its log."""
    argv = ["train", "--mixture", "nowhere"]
    alone = subprocess.run([sys.executable, "-m", "loom", *argv], env=env, capture_output=True, text=True)
    log = tmp_path / "run.log"
    log.write_text("$ the runner's line\n")
    assert zygote.start("loom", argv, env, log).wait(timeout=60) == alone.returncode == 2
    assert "mixture 'nowhere' is not compiled in " + env["LOOM_WORKSPACE"] in alone.stderr
    assert log.read_text() == "$ the runner's line\n" + alone.stdout + alone.stderr


def test_a_forked_run_takes_ctrl_c_with_python_s_handler_and_the_zygote_holds_it_back(zygote, env, tmp_path):
    """Once set up, a run has Python's SIGINT handler, unblocked, as `python -m loom` would (a Ctrl-C then ends it
    as loom's does: the search's interrupted test); the zygote keeps SIGINT blocked, so a Ctrl-C that reaches a
    run before that waits for it, and the zygote itself serves on."""
    busy = zygote.start("loom", BUSY, env, tmp_path / "run.log")
    try:
        wait_until_set_up(busy)
        assert signal.SIGINT in signal_set(busy.pid, "SigCgt")
        os.kill(zygote.pid, signal.SIGINT)
        assert signal.SIGINT in signal_set(zygote.pid, "SigBlk")
        assert zygote.start("loom", ["train", "--mixture", "nowhere"], env, tmp_path / "other.log").wait(60) == 2
    finally:
        busy.kill()
    assert busy.wait(timeout=60) == -signal.SIGKILL


def wait_until_set_up(run) -> None:
    """Until the run has unblocked SIGINT (the last thing the fork does before the command)."""
    deadline = time.monotonic() + 60
    while signal.SIGINT in signal_set(run.pid, "SigBlk"):
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.01)


def test_a_runner_that_ignores_ctrl_c_has_runs_that_do_and_a_zygote_that_dies_takes_them(env, tmp_path):
    """Started with SIGINT ignored (`nohup cmd &` in a script), the runs ignore it as processes of their own
    would have (before, a run was interrupted and the ladder that ignored it called the rung failed). Then the
    zygote killed: its run dies with it and reads -9, also once the zygote is closed."""
    with started_with(signal.SIG_IGN, env) as zygote:
        busy = zygote.start("loom", BUSY, env, tmp_path / "run.log")
        process = psutil.Process(busy.pid)
        wait_until_set_up(busy)
        assert signal.SIGINT in signal_set(busy.pid, "SigIgn")
        os.kill(zygote.pid, signal.SIGKILL)
        assert busy.wait(timeout=60) == -signal.SIGKILL
    assert busy.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 60
    while not ended(process):
        assert time.monotonic() < deadline, f"the run outlived its zygote: {process}"
        time.sleep(0.01)


def signal_set(pid: int, field: str) -> set[int]:
    """The signals in /proc/PID/status's FIELD (SigBlk, SigIgn, SigCgt) of a process."""
    line = next(line for line in open(f"/proc/{pid}/status") if line.startswith(field + ":"))
    mask = int(line.split()[1], 16)
    return {number for number in range(1, 65) if mask & (1 << (number - 1))}


def ended(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE  # dead, not yet reaped by whoever adopted it
    except psutil.NoSuchProcess:
        return True
