"""`loom train --nproc N`: N ranks on this machine, started by torchrun, each running `python -m trainer`."""

import os
import subprocess
import sys

from loom.errors import UserError
from trainer.config import TrainConfig
from trainer.loop import Run
from trainer.options import config_to_args


def launch_ranks(config: TrainConfig, nproc: int) -> None:
    Run(config).check_world_size(nproc)  # bad input is refused here, once, before any rank starts
    threads = max(1, (os.cpu_count() or 1) // nproc)  # the cores shared out, unless the user chose
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
               "-m", "trainer", *config_to_args(config)]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads))}
    result = subprocess.run(command, env=env)
    if result.returncode:
        raise UserError(f"training failed in one of its {nproc} processes (exit {result.returncode}); "
                        "see their output above")
