"""A sweep's runs, forked from one process that has imported torch already (a zygote). A toy proxy's `loom train`
took ~4.4 s of CPU, ~2.7 s of it importing torch and torch._dynamo (AdamW's first step imports it), to train for
0.7 s; a ladder or a search of a dozen runs paid that a dozen times. The zygote imports them once (~3 s), and
each run, a fork of it, takes ~1.7 s. A run is `python -m MODULE ARGV` (the runner's `loom train`) as a process of
its own would be: its environment (threads included), its output appended to its log, Ctrl-C, its exit code.

The runner and the zygote speak JSON lines over the zygote's stdin and stdout: a run to start ({"module", "argv",
"env", "log"}) is answered with its pid ({"started": pid}), and a run that ended is reported ({"ended": pid,
"returncode": code}, a signal's as -signal, as subprocess gives it). The zygote dies with the runner and each run
with the zygote (base.procs), so a ladder killed with kill -9 still takes every run with it."""

import json
import os
import runpy
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

from base.errors import EXIT_INTERRUPTED, INTERRUPTED
from base.procs import PARENT_PID, die_with_parent, exit_without_collecting

PRELOADED = ("torch", "torch._dynamo", "torch.optim")  # what every run imports, and pays most of its start for


class Zygote:
    """The runner's side: starts the zygote, asks it for runs, and reads what it reports. Used as a context
    manager; leaving it ends the zygote (a run still running ends with it)."""

    def __init__(self, env: dict[str, str]):
        self._process = subprocess.Popen([sys.executable, "-m", "sweeps.zygote"], env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.pid = self._process.pid
        self._reports = self._process.stdout.fileno()
        os.set_blocking(self._reports, False)
        self._unread = b""
        self._started: list[int] = []  # pids reported started, not yet handed to `start`'s caller
        self._forked: list[int] = []
        self._ended: dict[int, int] = {}
        self._gone = False  # the zygote has ended

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *exc) -> None:
        self._read()
        self._process.stdin.close()  # the zygote's end of input: it exits
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()
        self._end()

    def start(self, module: str, argv: list[str], env: dict[str, str], log: Path) -> "ForkedRun":
        """`python -m MODULE ARGV` in a fork of the zygote, with `env` and its output appended to `log`."""
        request = {"module": module, "argv": argv, "env": env, "log": str(log)}
        try:
            self._process.stdin.write(json.dumps(request).encode() + b"\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            self.wait_for_news(None)  # its end: raised below
        while not self._started:
            if self._gone:
                raise RuntimeError(f"the zygote that starts runs ended (exit {self._process.wait()}); "
                                   "its error is above")
            self.wait_for_news(None)
        return ForkedRun(self, self._started.pop(0))

    def returncode(self, pid: int) -> int | None:
        if not self._gone:
            self._read()
        return self._ended.get(pid)

    def wait_for_news(self, seconds: float | None) -> None:
        """Waits up to `seconds` (None: for ever) for the zygote to report something, or to end."""
        if not self._gone:
            select.select([self._reports], [], [], seconds)
            self._read()

    def _read(self) -> None:
        """Takes in every whole report line there is, until the zygote ends."""
        try:
            while chunk := os.read(self._reports, 65536):
                self._unread += chunk
                *lines, self._unread = self._unread.split(b"\n")
                for report in map(json.loads, lines):
                    if "started" in report:
                        self._started.append(report["started"])
                        self._forked.append(report["started"])
                    else:
                        self._ended[report["ended"]] = report["returncode"]
        except BlockingIOError:
            return
        self._end()

    def _end(self) -> None:
        """The zygote has ended: a run it had not reported ended with it (SIGKILL, base.procs)."""
        self._gone = True
        self._ended = {**dict.fromkeys(self._forked, -signal.SIGKILL), **self._ended}


class ForkedRun:
    """A run forked by the zygote, with the part of subprocess.Popen's interface a sweep uses."""

    def __init__(self, zygote: Zygote, pid: int):
        self._zygote, self.pid = zygote, pid

    @property
    def returncode(self) -> int | None:
        return self._zygote.returncode(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"run {self.pid}", timeout)
            self._zygote.wait_for_news(left)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def serve() -> None:
    """The zygote: imports PRELOADED, then forks a run for each request on stdin until stdin ends, reporting
    each run's start and end on stdout. Ctrl-C from the terminal is for the runs and the runner, not for it."""
    die_with_parent()
    exit_without_collecting()
    # Blocked, not ignored: a run inherits the mask, so a Ctrl-C sent to it before it is ready waits for it. A run
    # takes it as the zygote would have (Python's handler, or ignored where the runner was started ignoring it).
    on_ctrl_c = signal.getsignal(signal.SIGINT)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    for module in PRELOADED:
        __import__(module)
    woken, wake = os.pipe()  # a run that ends (SIGCHLD) wakes the loop as a request does
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    unread, running, me = b"", set(), os.getpid()
    while True:
        ready, _, _ = select.select([0, woken], [], [])
        if woken in ready:
            _drain(woken)
        _report_ended(running)
        if 0 not in ready:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            return  # the runner is done (a run still running dies with this process)
        *lines, unread = (unread + chunk).split(b"\n")
        for request in map(json.loads, lines):
            pid = os.fork()
            if pid == 0:
                _become_the_run(request, me, on_ctrl_c, closing=(woken, wake))
            running.add(pid)
            _report({"started": pid})


def _become_the_run(request: dict, zygote: int, on_ctrl_c, closing: tuple[int, ...]) -> None:
    """In the fork: the run's environment, output and signals, then `python -m MODULE ARGV`; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in closing:
            os.close(fd)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        nothing = os.open(os.devnull, os.O_RDONLY)
        for fd, target in ((nothing, 0), (log, 1), (log, 2)):
            os.dup2(fd, target)
        os.close(log)
        os.close(nothing)
        os.environ.clear()
        os.environ.update({**request["env"], PARENT_PID: str(zygote)})  # it dies with the zygote
        signal.signal(signal.SIGINT, on_ctrl_c)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a Ctrl-C that came already lands here
        import torch

        threads = os.environ.get("OMP_NUM_THREADS", "")
        if threads.isdigit() and int(threads) > 0:  # OpenMP read it at the zygote's import, not at this run's
            torch.set_num_threads(int(threads))
        sys.argv = [request["module"], *request["argv"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)  # as `python -m MODULE ARGV`
        code = 0
    except SystemExit as exit:  # as the interpreter reads sys.exit's argument
        code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
        if code == 1 and not isinstance(exit.code, int):
            print(exit.code, file=sys.stderr)
    except KeyboardInterrupt:  # before loom's own handler was in place: the same end
        print(INTERRUPTED, file=sys.stderr)
        code = EXIT_INTERRUPTED
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)


def _report_ended(running: set[int]) -> None:
    for pid in list(running):
        ended, status = os.waitpid(pid, os.WNOHANG)
        if ended:
            running.discard(pid)
            _report({"ended": pid, "returncode": os.waitstatus_to_exitcode(status)})


def _report(message: dict) -> None:
    os.write(1, json.dumps(message).encode() + b"\n")


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


if __name__ == "__main__":
    serve()
