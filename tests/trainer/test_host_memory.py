"""trainer.host_memory: a training step's large blocks come from the heap and stay there when freed, for the next
step, instead of being mapped from the kernel and given back each time (glibc's mallinfo2 counts both)."""

import subprocess
import sys

import pytest

HEAP_AND_MAPPED_BYTES = """
import ctypes, sys
import numpy as np
from trainer.host_memory import keep_freed_memory

class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Mallinfo2
if sys.argv[1] == "kept":
    keep_freed_memory()
block = np.ones(8 << 20)  # 64 MB, over glibc's largest mmap threshold
held = mallinfo2()
del block
freed = mallinfo2()
print(held.hblkhd, freed.arena)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_large_block_comes_from_the_heap_and_stays_there_when_freed():
    block = 8 << 23
    (mapped, _), (mapped_kept, heap_after_free) = (
        map(int, subprocess.run([sys.executable, "-c", HEAP_AND_MAPPED_BYTES, how], capture_output=True, text=True,
                                check=True).stdout.split()) for how in ("default", "kept"))
    assert mapped >= block  # by default: its own mapping, given back to the kernel when freed
    assert mapped_kept < block and heap_after_free >= block
