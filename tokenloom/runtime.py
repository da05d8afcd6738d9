"""Process-wide settings for a long-running server: how the garbage collector treats our heap.

The heap of a serving process is mostly long-lived: the vocabulary trie built at start, and the
interned parser states and masks of compiled grammars. CPython's full collections rescan all of it;
with the default thresholds that showed up as 100-400 ms pauses inside single token steps of
constrained decoding. Collections long enough to show in inter-token gaps are logged (debug). Knows
nothing of models or grammars.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Any

logger = logging.getLogger(__name__)

# Thresholds of CPython's three generations (its defaults: 700, 10, 10). Full collections come after
# 100 middle ones, so the long-lived heap is rarely rescanned. Young collections come after 2,000
# allocations and middle ones after 20 young ones: a middle collection then scans at most ~40,000
# objects. With 20,000 young (800,000 scanned), a replay of the hard structured-output set paused
# up to 150 ms in single mask steps, and its total collection time was higher (0.53 s against 0.39 s):
# large scans run slower per object. Garbage cycles are rare here (an evicted grammar and its states).
THRESHOLDS = (2_000, 20, 100)
SLOW_COLLECTION_SECONDS = 0.05  # a collection this long shows in inter-token gaps: logged (debug)
_collection_started = 0.0


def tune_gc() -> None:
    """Freeze what start-up built (never collectable) and collect less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    if _time_collection not in gc.callbacks:
        gc.callbacks.append(_time_collection)


def _time_collection(phase: str, info: dict[str, Any]) -> None:
    """Logs the collections long enough to stall token streams (a pause of every Python thread)."""
    global _collection_started
    if phase == "start":
        _collection_started = time.perf_counter()
        return
    seconds = time.perf_counter() - _collection_started
    if seconds > SLOW_COLLECTION_SECONDS:
        logger.debug("gc: generation %d collection took %.3f s", info["generation"], seconds)
