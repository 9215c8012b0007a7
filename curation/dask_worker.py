"""Loaded into every worker process of a local cluster (LocalCluster's `preload`). Ctrl-C in a terminal reaches
each process of the command; the client stops its local workers itself, so they ignore it rather than each
print a traceback as they die."""

import signal


def dask_setup(worker) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
