"""Training on the CPU without faulting in fresh memory every step. glibc's malloc hands each allocation above its
mmap threshold (32 MB at most) to mmap, and gives it back with munmap when it is freed. A training step allocates
its large activations and gradients (the logits alone are batch x sequence x vocabulary floats) afresh each step,
so each step zeroed hundreds of MB of new pages in the kernel: the quick ladder preset's smallest rung on the
quickstart workspace spent 42 s of its 47 in the kernel. With mmap off and the heap never trimmed, a block freed
by one step is reused by the next: 23 s, 3.8 s of it in the kernel, the same losses; the peak resident set
1.37 -> 1.87 GB (freed blocks are kept for the next step, not given back)."""

import ctypes
import sys

M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc's malloc.h
NEVER_TRIM = 2**31 - 1  # bytes free at the heap's top before it is given back (mallopt takes an int)


def keep_freed_memory() -> None:
    """Large blocks from the heap, kept when freed (glibc on Linux; elsewhere nothing changes)."""
    if not sys.platform.startswith("linux"):
        return
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(M_MMAP_MAX, 0)
        mallopt(M_TRIM_THRESHOLD, NEVER_TRIM)
