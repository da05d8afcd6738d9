"""Masks inside uniqueItems arrays: computed on the state's text-free twin, then made exact.

`json_unique.twin_state` drops the current item's text once the item is unlike every seen item, so
the states inside an item repeat (across characters of a run and across items) and their masks are
memoised and take the walk's fast paths. The twin forgets only what one token could still need: a
token that finishes the current item and then a whole later item equal to it. Such tokens hold a
comma followed by a complete JSON value; the vocabulary has few (3 in Gemma 3's), and they are judged
here from the exact state. A twin that forgot an unfinished item which may still repeat a seen one
also lets through the tokens completing that duplicate: all hold the item's closing byte ('"', '}' or
']'; 1,833 of Gemma 3's tokens hold one of them), so the allowed ones among those are judged from the
exact state too. Knows nothing of the engine.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import cast

import numpy as np

from tokenloom.constrain.json_unique import (
    CLOSE_BYTES,
    UniqFrame,
    canonical,
    completing_bytes,
    completion_rules,
    twin_forgets_repeatable,
)
from tokenloom.constrain.mask import MaskParts, feed_bytes, to_mask
from tokenloom.constrain.parser import ParserState
from tokenloom.constrain.trie import BoolArray, ByteTrie, IntArray
from tokenloom.json_brackets import BracketState, scan_brackets

_DECODER = json.JSONDecoder()
_LATER: dict[int, tuple[ByteTrie, IntArray, list[bytes]]] = {}  # id(trie) -> its later-item tokens
# (id(trie), closing bytes, after a quote) -> the tokens holding one (closing_tokens)
_CLOSING: dict[tuple[int, bytes, bool], tuple[ByteTrie, IntArray, list[bytes]]] = {}


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
        rows = [row for row in trie.rows_holding(b",").tolist() if holds_later_item(trie.keys[row])]
        hit = _LATER[id(trie)] = (trie, trie.ids[rows].astype(np.int32), [trie.keys[row] for row in rows])
    return hit[1], hit[2]


def closing_tokens(
    trie: ByteTrie, closers: bytes = CLOSE_BYTES, after_quote: bool = False
) -> tuple[IntArray, list[bytes]]:
    """The ids and bytes of the tokens holding one of `closers` (the bytes that can complete a
    string, object or array item), with a quote somewhere before it if `after_quote`; cached per trie."""
    key = (id(trie), closers, after_quote)
    hit = _CLOSING.get(key)
    if hit is None or hit[0] is not trie:
        rows = trie.rows_holding(closers).tolist()
        if after_quote:
            rows = [row for row in rows if _closer_after_quote(trie.keys[row], closers)]
        hit = (trie, trie.ids[rows].astype(np.int32), [trie.keys[row] for row in rows])
        _CLOSING[key] = hit
    return hit[1], hit[2]


def _closer_after_quote(piece: bytes, closers: bytes) -> bool:
    quote = piece.find(b'"')
    return quote >= 0 and any(c in piece[quote + 1 :] for c in closers)


def exact_parts(
    trie: ByteTrie, twin_parts: MaskParts, twin: ParserState, st: ParserState, pending: bytes
) -> MaskParts:
    """`twin_parts` (the mask of `st`'s twin `twin`) with the later-item tokens judged from `st` itself,
    and, when the twin forgot an unfinished item that may repeat a seen one, the allowed tokens that
    hold a closing byte as well."""
    # the twin allows a superset of what `st` does: its refusals stand
    ids, pieces = _later_allowed(trie, twin_parts, twin, pending)
    anew = None  # only closing-byte tokens may keep the twin's verdict: the later-item ones are fed
    if twin_forgets_repeatable(st):
        anew = _item_completed_anew(st, pending, trie)
        allowed = to_mask(twin_parts, trie.n_vocab)
        closing, closing_pieces = (
            closing_tokens(trie, *completing_bytes(st)) if not pending else closing_tokens(trie)
        )
        keep = allowed[closing]
        rules = completion_rules(st) if not pending else None
        if rules:  # only a token that may complete one of the items by its rule (see _may_complete)
            keep = _may_complete_some(closing_pieces, keep, rules)
        ids = np.concatenate((closing[keep], ids))
        pieces = [closing_pieces[at] for at in np.flatnonzero(keep).tolist()] + pieces
    if not len(ids):
        return twin_parts
    good = np.array(
        [
            (anew is not None and anew(piece)) or feed_bytes(st, pending, piece)[0] is not None
            for piece in pieces
        ],
        dtype=np.bool_,
    )
    base, packed, added, minus = twin_parts
    bad = ids[~good]
    if len(bad):
        if len(added):  # the ids the twin added that `st` refuses (a lookup table: isin sorts both)
            refused = np.zeros(trie.n_vocab, dtype=np.bool_)
            refused[bad] = True
            added = added[~refused[added]]
        minus = np.concatenate((minus, bad))
    return base, packed, np.concatenate((added, ids[good])), minus


def _item_completed_anew(st: ParserState, pending: bytes, trie: ByteTrie) -> Callable[[bytes], bool] | None:
    """For a state whose twin forgot one unfinished object or array item that may repeat a seen one
    (the same item text and seen items on every stack that forgot it, nothing nested forgotten): a test
    that a token the twin allows surely completes that item unlike every seen one, or leaves it
    unfinished. The twin's verdict then stands, since it differs from the exact state's only where a
    duplicate completes (a token that also holds a whole later item is judged from the exact state).
    Feeding such a token from the exact state made a parser state per character: 80 us a token, 25
    tokens a mask inside big object items. None: not that case."""
    if pending:
        return None
    tops = [
        stack[-1]
        for stack in st.stacks
        if stack and isinstance(stack[-1], UniqFrame) and stack[-1].forgets_repeatable()
    ]
    if not tops:
        return None
    top = tops[0]
    for other in tops:
        if not other.forgets_own() or (other.sub is not None and twin_forgets_repeatable(other.sub)):
            return None
        if other.text != top.text or other.seen != top.seen:
            return None
    if top.text is None or top.text[:1] not in ("{", "["):
        return None
    rule = scan_brackets(top.text, 0, (0, False, False))[0]
    later = set(later_item_tokens(trie)[1])
    text, seen = top.text, top.seen

    def anew(piece: bytes) -> bool:
        if piece in later:
            return False
        try:
            rest = piece.decode("utf-8")
        except UnicodeDecodeError:
            return False
        end = scan_brackets(rest, 0, rule)[1]
        if end < 0:
            return True  # the item stays unfinished: no duplicate can complete here
        try:
            return canonical(text + rest[:end]) not in seen
        except ValueError:
            return False

    return anew


def _later_allowed(
    trie: ByteTrie, twin_parts: MaskParts, twin: ParserState, pending: bytes
) -> tuple[IntArray, list[bytes]]:
    """The later-item tokens `twin_parts` allows, kept on the twin: every exact state of a twin asks
    again, and each answer searched the mask's id lists for them (50 us a mask)."""
    memo = twin.memo
    if memo is None:
        memo = twin.memo = {}
    key = (_LATER_KEY, trie, pending)
    hit = memo.get(key)
    if hit is None:
        later, later_pieces = later_item_tokens(trie)
        taken = np.flatnonzero(_allows(twin_parts, later)).tolist()
        hit = memo[key] = (later[taken], [later_pieces[at] for at in taken])
    return cast(tuple[IntArray, list[bytes]], hit)


_LATER_KEY = "unique_mask.later"  # where `_later_allowed` keeps its answer in a twin's memo


def _allows(parts: MaskParts, ids: IntArray) -> BoolArray:
    """Which of a few `ids` the mask `parts` allows (without unpacking it: it may be packed)."""
    base, packed, added, minus = parts
    ok: BoolArray
    if packed is not None:
        ok = ((packed[ids >> 3] >> (7 - (ids & 7))) & 1).astype(np.bool_)
    elif base is not None:
        ok = base[ids].copy()
    else:
        ok = np.zeros(len(ids), dtype=np.bool_)
    for at, token in enumerate(ids.tolist()):
        if token in minus:
            ok[at] = False
        if token in added:
            ok[at] = True
    return ok


def _may_complete_some(
    pieces: list[bytes], keep: BoolArray, rules: list[BracketState | frozenset[bytes]]
) -> BoolArray:
    """`keep` narrowed to the pieces that may complete an item by one of `rules`. Bracket rules come
    as one verdict per piece, kept per bracket state (a handful of depths, in or out of a string);
    the string rules are judged together, by one lookup of each kept piece's text before its first
    quote in all of their ends (a backslash there: may end any string). Rule by rule and piece by
    piece, an array of 20 seen items took 2-20 ms a mask."""
    ends: set[bytes] = set()
    out = np.zeros(len(keep), dtype=np.bool_)
    strings = False
    for rule in rules:
        if isinstance(rule, tuple):
            out |= _closes_from(pieces, rule)
        else:
            strings = True
            ends |= rule
    out &= keep
    if strings:
        for at in np.flatnonzero(keep & ~out).tolist():
            out[at] = _may_end_as(pieces[at], ends)
    return out


_CLOSES: dict[tuple[int, BracketState], tuple[list[bytes], BoolArray]] = {}  # see _closes_from
_MAX_CLOSES = 256  # bracket states kept per piece list (2 KB each for Gemma 3's closing tokens)


def _closes_from(pieces: list[bytes], state: BracketState) -> BoolArray:
    """Which pieces, read on from bracket `state`, close its outermost brace or bracket (cached)."""
    key = (id(pieces), state)
    hit = _CLOSES.get(key)
    if hit is None or hit[0] is not pieces:
        verdict = np.array([_may_complete(piece, state) for piece in pieces], dtype=np.bool_)
        if len(_CLOSES) >= _MAX_CLOSES:
            _CLOSES.clear()
        hit = _CLOSES[key] = (pieces, verdict)
    return hit[1]


def _may_complete(piece: bytes, rule: BracketState | frozenset[bytes]) -> bool:
    """Whether `piece` may complete a forgotten item as a duplicate: read on from the item's bracket
    state, it closes the object or array item's outermost brace or bracket (a cut character decodes
    to U+FFFD, never a bracket or quote); or (a string item) its first quote may end a seen string."""
    if isinstance(rule, tuple):
        return scan_brackets(piece.decode("utf-8", "replace"), 0, rule)[1] >= 0
    return _may_end_as(piece, rule)


def _may_end_as(piece: bytes, ends: AbstractSet[bytes]) -> bool:
    """Whether `piece`'s first quote may close a string item as one of `ends` (a backslash before it: may)."""
    quote = piece.find(b'"')
    return quote >= 0 and (piece[:quote] in ends or b"\\" in piece[:quote])
