"""Partial matches of markers at the end of streamed text; imports nothing of ours.

Shared by the engine's stop strings and the output parsers' markers: both hold back text that could
still grow into a marker.
"""

from __future__ import annotations


def partial_suffix_len(text: str, marker: str) -> int:
    """Length of the longest end of `text` that is a proper start of `marker`."""
    if not marker:
        return 0
    first, size = marker[0], len(text)
    i = text.find(first, max(0, size - len(marker) + 1))
    while i >= 0:  # only where the marker's first character occurs: cheap on plain text
        if marker.startswith(text[i:]):
            return size - i
        i = text.find(first, i + 1)
    return 0
