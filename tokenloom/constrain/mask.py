"""Allowed tokens = the vocabulary trie walked together with a parser state.

The walk follows only bytes the parser allows, decodes UTF-8 on the way (a token may end inside a
character: it is allowed when some completion of that character is), and in free runs (inside a JSON
string, free text) adds whole ranges of tokens at once from the `FreeIndex` and only descends toward
tokens that leave the run. This module is the measured hot spot: it trades some plainness for speed
(explicit stacks of arrays, no per-token Python work in free runs).
"""

from __future__ import annotations

import numpy as np

from tokenloom.constrain.charset import CharSet, utf8_len, utf8_prefix_range
from tokenloom.constrain.parser import ParserState
from tokenloom.constrain.trie import BoolArray, ByteTrie, FreeIndex, IntArray, Node

MaskParts = tuple[BoolArray | None, IntArray]


class _Walk:
    """One computation: collects id arrays and at most one shared base mask."""

    __slots__ = ("base", "parts", "root_trie")

    def __init__(self, root_trie: ByteTrie) -> None:
        self.root_trie = root_trie
        self.parts: list[IntArray] = []
        self.base: BoolArray | None = None

    def walk(self, trie: ByteTrie, node: Node, st: ParserState, pending: bytes) -> None:
        if node.end > node.lo and node.depth > 0:
            self.parts.append(trie.ids[node.lo : node.end])
        if pending:
            self._continue_char(trie, node, st, pending)
            return
        free = st.free_run()
        if free is not None:
            self._free(trie, node, st, free[0].klass, free[0].remaining)
            return
        allowed = st.allowed_chars()
        children = node.children(trie)
        first = allowed.first_bytes()
        for b in first if len(first) < len(children) else children:
            child = children.get(b)
            if child is None or b not in first:
                continue
            if b < 0x80:
                nxt = st.add_char(chr(b))
                if nxt is not None:
                    self.walk(trie, child, nxt, b"")
            else:
                self.walk(trie, child, st, bytes((b,)))

    def _continue_char(self, trie: ByteTrie, node: Node, st: ParserState, pending: bytes) -> None:
        allowed = st.allowed_chars()
        need = utf8_len(pending[0])
        for b, child in node.children(trie).items():
            if b & 0xC0 != 0x80:
                continue
            seq = pending + bytes((b,))
            if len(seq) == need:
                try:
                    ch = seq.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                nxt = st.add_char(ch)
                if nxt is not None:
                    self.walk(trie, child, nxt, b"")
            else:
                rng = utf8_prefix_range(seq)
                if rng is not None and allowed.overlaps(*rng):
                    self.walk(trie, child, st, seq)

    def _free(
        self, trie: ByteTrie, node: Node, st: ParserState, klass: CharSet, remaining: int | None
    ) -> None:
        idx = trie.free_index(klass)
        if node is self.root_trie.root:
            self._free_root(idx, st, remaining)
            return
        d = node.depth
        # bulk: longer tokens whose bytes from here on are all in the run (and fit, when bounded)
        ok = idx.last_bad[node.end : node.hi] <= d
        if remaining is not None:
            ok &= (trie.lengths[node.end : node.hi] - d) <= remaining
        self.parts.append(trie.ids[node.end : node.hi][ok])
        first = st.allowed_chars().first_bytes()
        for b, child in node.children(trie).items():
            if b not in first:
                continue
            if b < 0x80 and not klass.contains_cp(b):  # leaves the run, e.g. a closing quote
                nxt = st.add_char(chr(b))
                if nxt is not None:
                    self.walk(trie, child, nxt, b"")
                continue
            if child.max_of(idx, idx.last_bad) <= d and (
                remaining is None or child.max_of("len", trie.lengths) - d <= remaining
            ):
                continue  # every token below was taken in bulk
            if b < 0x80:
                nxt = st.add_char(chr(b))
                if nxt is not None:
                    self.walk(trie, child, nxt, b"")
            else:
                self.walk(trie, child, st, bytes((b,)))

    def _free_root(self, idx: FreeIndex, st: ParserState, remaining: int | None) -> None:
        if remaining is None:
            self.base = idx.pure
            self.walk(idx.rests_all, idx.rests_all.root, st, b"")
            return
        if remaining >= idx.max_pure_chars:
            self.base = idx.pure
        else:
            self.base = idx.pure & (idx.pure_chars <= remaining)
        for length, rest in idx.rests.items():
            if length <= remaining:
                self.walk(rest, rest.root, st.skip(length) if length else st, b"")


def compute(trie: ByteTrie, st: ParserState, pending: bytes = b"") -> MaskParts:
    """The allowed tokens from `st` (after `pending` bytes of an unfinished character)."""
    w = _Walk(trie)
    w.walk(trie, trie.root, st, pending)
    ids = np.unique(np.concatenate(w.parts)) if w.parts else np.zeros(0, dtype=np.int32)
    return w.base, ids.astype(np.int32, copy=False)


def to_mask(parts: MaskParts, n_vocab: int) -> BoolArray:
    base, ids = parts
    mask = base.copy() if base is not None else np.zeros(n_vocab, dtype=np.bool_)
    mask[ids] = True
    return mask
