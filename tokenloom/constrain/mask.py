"""Allowed tokens = the vocabulary trie walked together with a parser state.

The walk follows only bytes the parser allows and decodes UTF-8 on the way (a token may end inside a
character: it is allowed when some completion of that character is). In free runs (inside a JSON
string, free text) it takes whole ranges of tokens at once from the `FreeIndex` and checks one by one
only the few tokens that leave the run. This module is the measured hot spot: it trades some
plainness for speed (numpy over token ranges, memo of token tails).
"""

from __future__ import annotations

import numpy as np

from tokenloom.constrain.charset import CharSet, utf8_len, utf8_prefix_range
from tokenloom.constrain.parser import ParserState
from tokenloom.constrain.trie import BoolArray, ByteTrie, IntArray, Node

# (a shared base mask or None, a private base as packed bits or None, extra token ids)
MaskParts = tuple[BoolArray | None, "np.ndarray | None", IntArray]
_BIG = 20_000  # more ids than this are folded into a packed base mask
_NON_ASCII = CharSet([(0x80, 0x10FFFF)])


def feed_bytes(st: ParserState | None, pending: bytes, data: bytes) -> tuple[ParserState | None, bytes]:
    """Advance by raw bytes (UTF-8 decoded on the way); (None, ...) once rejected."""
    for b in data:
        if st is None:
            break
        if not pending and b < 0x80:
            st = st.add_char(chr(b))
            continue
        pending += bytes((b,))
        need = utf8_len(pending[0])
        if need == 0 or (len(pending) > 1 and b & 0xC0 != 0x80):
            return None, pending
        if len(pending) == need:
            try:
                ch = pending.decode("utf-8")
            except UnicodeDecodeError:
                return None, pending
            st = st.add_char(ch)
            pending = b""
    if st is not None and pending:
        rng = utf8_prefix_range(pending)
        if rng is None or not st.allowed_chars().overlaps(*rng):
            return None, pending
    return st, pending


class _Walk:
    """One computation: collects id arrays and at most one base mask."""

    __slots__ = ("base", "parts", "trie")

    def __init__(self, trie: ByteTrie) -> None:
        self.trie = trie
        self.parts: list[IntArray] = []
        self.base: BoolArray | None = None

    def walk(self, node: Node, st: ParserState, pending: bytes) -> None:
        trie = self.trie
        if node.end > node.lo and node.depth > 0:
            self.parts.append(trie.ids[node.lo : node.end])
        if pending:
            self._continue_char(node, st, pending)
            return
        free = st.free_run()
        if free is not None:
            self._free(node, st, free[0].klass, free[0].remaining, None)
            return
        children = node.children(trie)
        first = st.allowed_chars().first_bytes()
        dele = st.delegate()
        if dele is not None:
            table = _byte_table(dele[0])
            run = dele[1].free_run()
            assert run is not None  # internal: delegate() only returns free targets
            self._free(node, dele[1], run[0].klass, None, table)
            first = first - frozenset(np.nonzero(table)[0].tolist())
        for b in first if len(first) < len(children) else children:
            child = children.get(b)
            if child is None or b not in first:
                continue
            if b < 0x80:
                nxt = st.add_char(chr(b))
                if nxt is not None:
                    self.walk(child, nxt, b"")
            else:
                self.walk(child, st, bytes((b,)))

    def _continue_char(self, node: Node, st: ParserState, pending: bytes) -> None:
        allowed = st.allowed_chars()
        need = utf8_len(pending[0])
        for b, child in node.children(self.trie).items():
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
                    self.walk(child, nxt, b"")
            else:
                rng = utf8_prefix_range(seq)
                if rng is not None and allowed.overlaps(*rng):
                    self.walk(child, st, seq)

    def _free(
        self, node: Node, st: ParserState, klass: CharSet, remaining: int | None, only: BoolArray | None
    ) -> None:
        """Bulk-add the tokens that stay in the run from here; check the others one by one.

        `only` (a 256-entry table) restricts this to tokens whose next byte it marks (delegation).
        """
        trie = self.trie
        idx = trie.free_index(klass)
        d = node.depth
        if d == 0:
            fits = remaining is None or remaining >= idx.max_pure_chars
            base = idx.pure_id if fits else idx.pure_id & (idx.nchars_id <= remaining)  # type: ignore[operator]
            rows = idx.mixed_rows
            if only is not None:
                base = base & only[trie.first_byte_id]
                rows = rows[only[trie.byte_at(rows, 0)]]
            self.base = base
        else:
            lo, hi = node.end, node.hi
            last_bad = idx.last_bad[lo:hi]
            ok = last_bad <= d
            if only is not None:
                span = np.arange(lo, hi)
                longer = trie.lengths[lo:hi] > d
                sel = np.zeros(hi - lo, dtype=np.bool_)
                sel[longer] = only[trie.byte_at(span[longer], d)]
                ok &= sel
                last_bad = np.where(sel, last_bad, 0)
            if remaining is not None:
                before = sum(1 for b in trie.keys[lo][:d] if b & 0xC0 != 0x80)
                ok &= (trie.nchars[lo:hi] - before) <= remaining
            self.parts.append(trie.ids[lo:hi][ok])
            rows = lo + np.nonzero(last_bad > d)[0]
        if not len(rows):
            return
        first_bad = idx.first_bad[rows]
        # filter on the first byte that leaves the run: it must be allowed by the state reached there
        # (the same state when unlimited; one of the next <= 48 states of a bounded run)
        table = np.zeros(256, dtype=np.bool_)
        table[list(st.allowed_chars().first_bytes())] = True
        if remaining is not None:
            for k in range(1, min(remaining, trie.max_len) + 1):
                table[list(st.skip(k).allowed_chars().first_bytes())] = True
        rows = rows[(first_bad < d) | table[idx.first_bad_byte[rows]]]
        memo: dict[bytes, bool] = {}
        keys = trie.keys
        good: list[int] = []
        for row in rows.tolist():
            key = keys[row]
            fb = int(idx.first_bad[row])
            if remaining is None and fb >= d:
                tail = key[fb:]
                ok_tail = memo.get(tail)
                if ok_tail is None:
                    ok_tail = memo[tail] = feed_bytes(st, b"", tail)[0] is not None
            else:
                ok_tail = feed_bytes(st, b"", key[d:])[0] is not None
            if ok_tail:
                good.append(row)
        if good:
            self.parts.append(trie.ids[good])


def _byte_table(klass: CharSet) -> BoolArray:
    """Bytes that start a character of `klass` (lead bytes only when all of their characters are in)."""
    table = np.zeros(256, dtype=np.bool_)
    table[[b for b in range(0x80) if klass.contains_cp(b)]] = True
    if (klass & _NON_ASCII) == _NON_ASCII:
        table[0xC2:0xF5] = True
    return table


def compute(trie: ByteTrie, st: ParserState, pending: bytes = b"") -> MaskParts:
    """The allowed tokens from `st` (after `pending` bytes of an unfinished character)."""
    w = _Walk(trie)
    w.walk(trie.root, st, pending)
    ids = np.concatenate(w.parts) if w.parts else np.zeros(0, dtype=np.int32)
    shared = w.base is not None and any(w.base is idx.pure_id for idx in trie.free_indexes())
    if len(ids) <= _BIG and (w.base is None or shared):
        return w.base, None, ids.astype(np.int32, copy=False)
    full = w.base.copy() if w.base is not None else np.zeros(trie.n_vocab, dtype=np.bool_)
    full[ids] = True
    return None, np.packbits(full), np.zeros(0, dtype=np.int32)


def to_mask(parts: MaskParts, n_vocab: int) -> BoolArray:
    base, packed, ids = parts
    if packed is not None:
        mask = np.unpackbits(packed, count=n_vocab).view(np.bool_)
    else:
        mask = base.copy() if base is not None else np.zeros(n_vocab, dtype=np.bool_)
    mask[ids] = True
    return mask
