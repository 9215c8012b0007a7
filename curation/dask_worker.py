"""Loaded into every worker process of a local cluster (LocalCluster's `preload`). Ctrl-C in a terminal reaches
each process of the command; the client stops its local workers itself, so they ignore it rather than each
print a traceback as they die. Arrow allocates from the system's malloc: its default mimalloc pool keeps the
pages a task freed for the next, so a worker's peak in the global stages grew with the partitions it had read
(bench/README.md, scale.py). A worker exits without a last garbage collection (base.procs)."""

import signal

from base.procs import exit_without_collecting


def dask_setup(worker) -> None:
    import pyarrow as pa

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pa.set_memory_pool(pa.system_memory_pool())
    exit_without_collecting()
