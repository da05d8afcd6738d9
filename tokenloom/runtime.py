"""Process-wide settings for a long-running server: how the garbage collector treats our heap.

The heap of a serving process is mostly long-lived: the vocabulary trie built at start, and the
interned parser states and masks of compiled grammars. CPython's full collections rescan all of it;
with the default thresholds that showed up as 100-400 ms pauses inside single token steps of
constrained decoding. Knows nothing of models or grammars.
"""

from __future__ import annotations

import gc

# Oldest-generation collections run after this many younger ones (CPython's default is 10).
# Garbage cycles are rare here (an evicted grammar and its states); they wait a little longer.
FULL_COLLECTION_EVERY = 100


def tune_gc() -> None:
    """Freeze what start-up built (never collectable) and run full collections less often."""
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
