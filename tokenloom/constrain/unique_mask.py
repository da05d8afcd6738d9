"""Masks inside uniqueItems arrays: computed on the state's text-free twin, then made exact.

`json_unique.twin_state` drops the current item's text once the item is unlike every seen item, so
the states inside an item repeat (across characters of a run and across items) and their masks are
memoised and take the walk's fast paths. The twin forgets only what one token could still need: a
token that finishes the current item and then a whole later item equal to it. Such tokens hold a
comma followed by a complete JSON value; the vocabulary has few (3 in Gemma 3's), and they are judged
here from the exact state. Knows nothing of the engine.
"""

from __future__ import annotations

import json

import numpy as np

from tokenloom.constrain.mask import MaskParts, feed_bytes
from tokenloom.constrain.parser import ParserState
from tokenloom.constrain.trie import ByteTrie, IntArray

_DECODER = json.JSONDecoder()
_LATER: dict[int, tuple[ByteTrie, IntArray, list[bytes]]] = {}  # id(trie) -> its later-item tokens


def holds_later_item(piece: bytes) -> bool:
    """Whether some comma in `piece` is followed (after whitespace) by a complete JSON value."""
    text = piece.decode("utf-8", "replace")
    at = text.find(",")
    while at >= 0:
        rest = text[at + 1 :].lstrip(" \t\n\r")
        try:
            _DECODER.raw_decode(rest)
            return True
        except ValueError:
            at = text.find(",", at + 1)
    return False


def later_item_tokens(trie: ByteTrie) -> tuple[IntArray, list[bytes]]:
    """The ids and bytes of the tokens that may finish one item and a whole later one (cached)."""
    hit = _LATER.get(id(trie))
    if hit is None or hit[0] is not trie:
        rows = [row for row, key in enumerate(trie.keys) if b"," in key and holds_later_item(key)]
        hit = _LATER[id(trie)] = (trie, trie.ids[rows].astype(np.int32), [trie.keys[row] for row in rows])
    return hit[1], hit[2]


def exact_parts(trie: ByteTrie, twin_parts: MaskParts, st: ParserState, pending: bytes) -> MaskParts:
    """`twin_parts` (the mask of `st`'s twin) with the later-item tokens judged from `st` itself."""
    ids, pieces = later_item_tokens(trie)
    if not len(ids):
        return twin_parts
    good = np.array([feed_bytes(st, pending, piece)[0] is not None for piece in pieces], dtype=np.bool_)
    base, packed, added, minus = twin_parts
    keep = ~np.isin(added, ids[~good])
    return base, packed, np.concatenate((added[keep], ids[good])), np.concatenate((minus, ids[~good]))
