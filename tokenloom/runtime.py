"""Process-wide settings for a long-running server: how the garbage collector treats our heap.

The heap of a serving process is mostly long-lived: the vocabulary trie built at start, and the
interned parser states and masks of compiled grammars. CPython's full collections rescan all of it;
with the default thresholds that showed up as 100-400 ms pauses inside single token steps of
constrained decoding. Knows nothing of models or grammars.
"""

from __future__ import annotations

import gc

# Thresholds of CPython's three generations (its defaults: 700, 10, 10). A token step of constrained
# decoding allocates thousands of short-lived tuples that reference counting frees anyway, so young
# collections come after 20,000 allocations, and full ones after 100 middle ones. Garbage cycles are
# rare here (an evicted grammar and its states); they wait a little longer.
THRESHOLDS = (20_000, 20, 100)


def tune_gc() -> None:
    """Freeze what start-up built (never collectable) and collect less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
