"""Where JSON brackets close, scanning text that may stop anywhere; imports nothing of ours.

Shared by the tool-section parser (where a call's argument object ends in streamed output) and the
uniqueItems masks (whether a token can complete an unfinished object or array item).
"""

from __future__ import annotations

BracketState = tuple[int, bool, bool]  # JSON bracket depth, inside a string, after a backslash


def scan_brackets(text: str, start: int, state: BracketState) -> tuple[BracketState, int]:
    """Scan `text` from `start`: the state after the first return to depth 0 and the index after it,
    or the state at the end and -1. Strings are skipped; depth never goes below 0."""
    depth, in_string, escaped = state
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth = max(depth - 1, 0)
            if depth == 0:
                return (depth, in_string, escaped), i + 1
    return (depth, in_string, escaped), -1
