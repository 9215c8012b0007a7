"""`python -m trainer.torchrun ARGS`: torchrun (`python -m torch.distributed.run ARGS`) that says only errors and
stops on Ctrl-C (or SIGTERM) without a traceback: by then it has stopped the ranks, and `loom train` says the one
line. It dies with `loom train`, and its ranks with it (base.procs: they inherit its environment)."""

import logging
import os
import sys

from base.procs import die_with_parent, dying_with_this_process

die_with_parent()  # first, before torch is imported: a `loom train` killed meanwhile is not outlived
os.environ.update(dying_with_this_process({}))  # the ranks copy this environment
os.environ.setdefault("LOGLEVEL", "ERROR")  # read by the elastic agent's loggers as they are made, on import

from torch.distributed.elastic.multiprocessing.api import SignalException  # noqa: E402
from torch.distributed.run import main  # noqa: E402

if __name__ == "__main__":
    logging.getLogger("torch.distributed.elastic").setLevel(logging.ERROR)  # "sending process ... SIGINT"
    try:
        main(sys.argv[1:])
    except SignalException as err:
        sys.exit(128 + int(err.sigval))  # as a shell reports a command a signal stopped
