"""Giving back the memory llama.cpp touched at start-up only to fill it with zeros.

llama.cpp clears a context's KV-cache buffers when it creates them, so every page of them is resident
before a single token is stored (8 slots of 2,048 tokens: 324 MiB). A private anonymous page dropped
with MADV_DONTNEED reads as zeros again and is allocated only when written: the contents stay the same
and memory grows as the cache fills. Linux only; knows nothing of models beyond that.
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

CHUNK = 1 << 20  # pages are checked and dropped a MiB at a time
_MADV_DONTNEED = 4
_ZEROS = bytes(CHUNK)

Ranges = list[tuple[int, int]]


def anonymous_ranges() -> Ranges:
    """(start, end) of this process's private writable mappings that back no file (none off Linux)."""
    if not sys.platform.startswith("linux"):
        return []
    ranges = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) != 5 or fields[1] != "rw-p":  # a sixth field names a file, [heap] or [stack]
            continue
        low, high = fields[0].split("-")
        ranges.append((int(low, 16), int(high, 16)))
    return ranges


def release_zeroed_pages(before: Ranges) -> int:
    """Drop every all-zero MiB of the anonymous memory mapped since `before` was taken (the buffers of a
    context just created); returns the bytes released.

    The check and the drop of each MiB run while this thread holds the GIL (both calls are made
    without releasing it, and the switch interval is raised so the interpreter does not hand it over
    between them), so no Python thread can write there in between; the context's own threads have not
    run yet.
    """
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.PyDLL(None)  # PyDLL: the GIL stays held during each call
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
    resident = ctypes.create_string_buffer(CHUNK // mmap.PAGESIZE)
    released = 0
    ranges = _subtract(anonymous_ranges(), before)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        for start, end in ranges:
            first = -(-start // CHUNK) * CHUNK
            for offset in range(first, end - CHUNK + 1, CHUNK):
                if libc.mincore(offset, CHUNK, resident) != 0 or not any(resident.raw):
                    continue  # never touched: nothing to give back (reading it would only map zeros)
                if (
                    ctypes.string_at(offset, CHUNK) == _ZEROS
                    and libc.madvise(offset, CHUNK, _MADV_DONTNEED) == 0
                ):
                    released += CHUNK
    finally:
        sys.setswitchinterval(interval)
    logger.debug("released %d MiB of zero-filled context memory", released >> 20)
    return released


def _subtract(ranges: Ranges, old: Ranges) -> Ranges:
    """The parts of `ranges` outside every range of `old` (page-aligned, as mappings are)."""
    out = []
    for start, end in ranges:
        pieces = [(start, end)]
        for low, high in old:
            pieces = [
                part
                for a, b in pieces
                for part in ((a, min(b, low)), (max(a, high), b))
                if part[1] - part[0] >= mmap.PAGESIZE
            ]
        out.extend(pieces)
    return out
