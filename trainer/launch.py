"""`loom train --nproc N`: N ranks on this machine, started by torchrun, each running `python -m trainer`."""

import os
import subprocess
import sys
from pathlib import Path

from loom.errors import UserError
from trainer.config import TrainConfig
from trainer.loop import Run
from trainer.options import config_to_args


# `python -m trainer` puts the current folder first on sys.path; started from inside a workspace, its mixtures/
# folder would be taken for the `mixtures` package (a namespace package wins over an editable install's finder).
# With the folder that holds Loom's packages on PYTHONPATH, the real packages are found first.
PACKAGES_ROOT = str(Path(__file__).resolve().parents[1])


def launch_ranks(config: TrainConfig, nproc: int) -> None:
    Run(config).check_world_size(nproc)  # bad input is refused here, once, before any rank starts
    threads = max(1, (os.cpu_count() or 1) // nproc)  # the cores shared out, unless the user chose
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               "-m", "trainer", *config_to_args(config)]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads)),
           "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGES_ROOT, os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(command, env=env)
    if result.returncode:
        raise UserError(f"training failed in one of its {nproc} processes (exit {result.returncode}); "
                        "see their output above")
