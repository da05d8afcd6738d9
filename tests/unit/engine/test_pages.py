"""Zero-filled memory mapped after a snapshot is given back and still reads as zeros; data is untouched."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tokenloom.engine.pages import CHUNK, _subtract, anonymous_ranges, release_zeroed_pages

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")


def resident_anon_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon line")


@linux_only
def test_zeroed_pages_are_released_and_read_as_zeros() -> None:
    before = anonymous_ranges()
    zeros = np.ones(64 * CHUNK, dtype=np.uint8)
    zeros[:] = 0  # resident, and all zero: like a KV buffer llama.cpp has just cleared
    data = np.full(16 * CHUNK, 7, dtype=np.uint8)
    resident = resident_anon_kib()
    released = release_zeroed_pages(before)
    assert released >= 62 * CHUNK  # all of it but the partial MiB at either end
    assert resident - resident_anon_kib() >= 60 * CHUNK // 1024
    assert not zeros.any()
    assert (data == 7).all()
    zeros[::4096] = 1  # written again: pages come back as used
    assert int(zeros.sum()) == 64 * CHUNK // 4096


@linux_only
def test_memory_mapped_before_the_snapshot_is_left_alone() -> None:
    zeros = np.ones(64 * CHUNK, dtype=np.uint8)
    zeros[:] = 0
    resident = resident_anon_kib()
    release_zeroed_pages(anonymous_ranges())
    assert resident - resident_anon_kib() < 32 * CHUNK // 1024
    assert not zeros.any()


def test_subtract_keeps_only_the_new_parts() -> None:
    page = 4096
    assert _subtract([(0, 10 * page)], [(2 * page, 4 * page)]) == [(0, 2 * page), (4 * page, 10 * page)]
    assert _subtract([(0, 10 * page)], [(0, 10 * page)]) == []
    assert _subtract([(0, 10 * page)], [(20 * page, 30 * page)]) == [(0, 10 * page)]
