"""Allowed tokens = the vocabulary trie walked together with a parser state.

The walk follows only bytes the parser allows and decodes UTF-8 on the way (a token may end inside a
character: it is allowed when some completion of that character is). In free runs (inside a JSON
string, free text) it takes whole ranges of tokens at once from the `FreeIndex` and checks one by one
only the few tokens that leave the run. Between JSON tokens, a token's leading whitespace and its rest
are judged apart (`_padded`, over the trie of rests), and inside a costly pattern string the pattern's
DFA judges the whole vocabulary at once (pattern_mask.py). This module is the measured hot spot: it
trades some plainness for speed (numpy over token ranges, memo of token tails).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from tokenloom.constrain.charset import ANY, WHITESPACE, CharSet, utf8_len, utf8_prefix_range
from tokenloom.constrain.interpreted import let_others_run
from tokenloom.constrain.native import NATIVE
from tokenloom.constrain.parser import ParserState, Stack, feed_text
from tokenloom.constrain.pattern_mask import costly_patterns, pattern_verdict
from tokenloom.constrain.regex import DState
from tokenloom.constrain.trie import (
    BoolArray,
    ByteTrie,
    FreeIndex,
    IntArray,
    Node,
    Padding,
    span_positions,
    tails_trie,
)

# (a shared base mask or None, a private base as packed bits or None, ids added, ids taken from the base)
MaskParts = tuple[BoolArray | None, "np.ndarray | None", IntArray, IntArray]
Rows = npt.NDArray[np.integer[Any]]  # positions in the trie's sorted order
_BIG = 20_000  # more ids than this are folded into a packed base mask
_NON_ASCII = CharSet([(0x80, 0x10FFFF)])
_SMALL = 64  # subtrees up to this many tokens are checked without numpy
# Tokens fed one by one (and nodes visited) in a pattern string before the walk hands over to the
# pattern's DFA run over the whole vocabulary (pattern_mask.py): cheap patterns keep their fast paths.
WALK_BUDGET = 2_000
_TINY = 6  # subtrees up to this many tokens are checked token by token, without walking them
# Steps of a walk (nodes visited, tokens fed) between two calls of plain Python: compiled, the walk runs no
# bytecode of its own, and only at bytecode does the mask worker let the scheduler thread have the
# interpreter and take its timeout (engine/masking.py). A regex walked over the whole trie held it 0.5 s.
YIELD_EVERY = 1_024
_SINCE_YIELD: Final[list[int]] = [0]  # steps of all walks together since then (most walks are short)


def _tick(steps: int) -> None:
    """Counts walk steps (a loop over token rows counts again what its walk spent on it, so it passes
    through plain Python at least as often); past YIELD_EVERY, one call of plain Python."""
    since = _SINCE_YIELD
    since[0] += steps
    if since[0] >= YIELD_EVERY:
        since[0] = 0
        let_others_run()


def feed_bytes(st: ParserState | None, pending: bytes, data: bytes) -> tuple[ParserState | None, bytes]:
    """Advance by raw bytes (UTF-8 decoded on the way); (None, ...) once rejected."""
    if not pending and data.isascii():
        return feed_text(st, data.decode("ascii")), b""
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


class _OverBudget(Exception):
    """The walk fed more tokens one by one than its budget allows (a pattern its fast paths miss)."""


class _Walk:
    """One computation: collects id arrays and at most one base mask.

    `budget` (shared with the walks of tail tries it starts) counts nodes visited and tokens fed one by
    one; past it the walk stops with `_OverBudget`. None: unbounded.
    """

    __slots__ = ("base", "budget", "minus", "parts", "trie")

    def __init__(self, trie: ByteTrie, budget: list[int] | None = None) -> None:
        self.trie = trie
        self.parts: list[IntArray] = []
        self.base: BoolArray | None = None
        self.minus: list[IntArray] = []  # ids taken out of `base` (before `parts` are added)
        self.budget = budget

    def spend(self, n: int) -> None:
        _tick(n)
        budget = self.budget
        if budget is not None:
            budget[0] -= n
            if budget[0] < 0:
                raise _OverBudget

    def walk(self, node: Node, st: ParserState, pending: bytes) -> None:
        trie = self.trie
        self.spend(1)
        if node.end > node.lo and node.depth > 0:
            self.parts.append(trie.ids[node.lo : node.end])
        if pending:
            self._continue_char(node, st, pending)
            return
        if node.depth and node.hi - node.end <= _TINY:
            # a handful of tokens left: feeding them beats analysing every state on the way
            keys, d = trie.keys, node.depth
            good = [
                row for row in range(node.end, node.hi) if feed_bytes(st, b"", keys[row][d:])[0] is not None
            ]
            if good:
                self.parts.append(trie.ids[good])
            return
        free = st.free_run()
        if free is not None:
            if free[0].stateful:
                self._free_stateful(node, st, free[0].klass, free[0].exits)
            else:
                self._free(node, st, free[0].klass, free[0].remaining, None)
            return
        first = st.allowed_chars().first_bytes()
        dele = st.delegate()
        if dele is not None and node.depth == 0 and self._delegated_root(node, st, dele):
            return
        if dele is not None:
            table, table_bytes = _byte_table(dele[0])
            run = dele[1].free_run()
            assert run is not None  # internal: delegate() only returns free targets
            self._free(node, dele[1], run[0].klass, None, table)
            first = first - table_bytes
        elif len(first) == 1 and self._follow_forced(node, st):
            return
        self.walk_children(node, st, first)

    def _delegated_root(self, root: Node, st: ParserState, dele: tuple[CharSet, ParserState]) -> bool:
        """The root of a state that hands most chars to one free state F (a property name that may be
        any name, with known names to follow): every token is judged as from F, in bulk, except where
        a token stays on a known name's path up to a byte F's run does not take (a quote, a
        backslash); only those subtrees are walked, with their true states. The plain delegated walk
        runs F's bulk check again at every node of every known name. A known path whose tokens all
        stay in the run is left to the bulk check only where its state says it takes any such run (a
        name under additional properties); elsewhere a state on it may refuse a char of the run that F
        takes (a pattern branch that narrows after its first char). False: not applicable here."""
        target = dele[1]
        run = target.free_run()
        if run is None or run[0].remaining is not None or run[0].stateful:
            return False
        klass = run[0].klass
        aside: list[Node] = []  # subtrees F would misjudge: left out of the bulk check
        walks: list[tuple[Node, ParserState, bytes]] = []  # ... and walked with their true states
        reach = target.allowed_chars().first_bytes()
        if not self._known_paths(root, st, target, klass, reach, aside, walks):
            return False
        trie = self.trie
        idx = trie.free_index(klass)
        self.base = idx.pure_id
        for sub in aside:
            self.minus.append(trie.ids[sub.lo : sub.hi])
        self._root_rows(idx, target, None, sorted((sub.lo, sub.hi) for sub in aside))
        for sub, state, pending in walks:
            self.walk(sub, state, pending)
        return True

    def _known_paths(
        self,
        node: Node,
        st: ParserState,
        target: ParserState,
        klass: CharSet,
        reach: frozenset[int],
        aside: list[Node],
        walks: list[tuple[Node, ParserState, bytes]],
    ) -> bool:
        """Follow the children of `node` that `st` does not hand to `target`: a char of `klass` that
        leads to a state delegating to the same target is followed further; any other child that
        `st` or `target` (first bytes `reach`) takes is set aside and walked with its true state (the
        bytes neither takes are refused either way). False when `st` does not delegate to `target`."""
        dele = st.delegate()
        if dele is None or dele[1] is not target or st.free_run() is not None:
            return False
        self.spend(1)
        _, handed = _byte_table(dele[0])  # leave the known names: judged as from `target`, rightly
        first = st.allowed_chars().first_bytes()
        children = node.children(self.trie)
        for b in (first | reach) - handed:
            child = children.get(b)
            if child is None:
                continue
            aside.append(child)
            if b not in first:
                continue  # refused here (whatever `target` would say)
            if b >= 0x80:
                walks.append((child, st, bytes((b,))))
                continue
            nxt = st.add_char(chr(b))
            if nxt is None:
                continue
            if klass.contains_cp(b):
                if (
                    _takes_any_run(nxt)
                    and int(self.trie.free_index(klass).last_bad[child.lo : child.hi].max()) <= child.depth
                ):
                    aside.pop()  # every token below stays in the run, which this name takes whole
                    continue
                mine: list[Node] = []
                mine_walks: list[tuple[Node, ParserState, bytes]] = []
                if self._known_paths(child, nxt, target, klass, reach, mine, mine_walks):
                    aside.pop()  # on a known path: only what it sets aside leaves the bulk check
                    aside.extend(mine)
                    walks.extend(mine_walks)
                    continue
            walks.append((child, nxt, b""))
        return True

    def _follow_forced(self, node: Node, st: ParserState) -> bool:
        """Down the one path the state allows (a property name in schema order, a literal), only as
        far as tokens go: the tokens ending on the way are all in, one dict lookup and one memoised
        step per byte instead of a full walk step; where the path stops being forced, the walk goes
        on. False when `st` does not force an ASCII char."""
        literal = _forced_literal(st)
        if literal is not None:
            self._follow_literal(node, *literal)
            return True
        byte = _forced_byte(st)
        nxt = st.add_char(chr(byte)) if byte is not None else None
        if byte is None or nxt is None:
            return False
        ids, most = self.trie.ids, self.trie.max_len
        steps = 0
        while True:
            steps += 1
            child = node.children(self.trie).get(byte)
            if child is None:
                break
            after = _forced_byte(nxt)
            then = nxt.add_char(chr(after)) if after is not None else None
            if after is None or then is None or steps >= most:
                self.walk(child, nxt, b"")
                break
            if child.end > child.lo:
                self.parts.append(ids[child.lo : child.end])
            if child.hi == child.end:
                break  # no token goes further
            node, byte, nxt = child, after, then
        self.spend(steps)
        return True

    def _follow_literal(self, node: Node, data: bytes, after: ParserState) -> None:
        """Down the trie along `data`, the text the state at `node` must read next (a known name's
        rest, an enum's text): the tokens ending on the way are all in; those going past its end are
        walked from `after`, the state once it is read."""
        trie, ids = self.trie, self.trie.ids
        self.spend(len(data))
        for byte in data:
            child = node.children(trie).get(byte)
            if child is None:
                return
            if child.end > child.lo:
                self.parts.append(ids[child.lo : child.end])
            if child.hi == child.end:
                return  # no token goes further
            node = child
        self.walk_children(node, after, after.allowed_chars().first_bytes())

    def walk_children(self, node: Node, st: ParserState, first: frozenset[int]) -> None:
        """Follow the children of `node` whose byte is in `first`, one by one."""
        children = node.children(self.trie)
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
            rows: Rows = idx.mixed_rows
            if only is not None:
                # tokens are sorted, so those starting with an excluded byte are a few ranges to drop
                for child in _excluded(node, trie, only):
                    self.minus.append(trie.ids[child.lo : child.hi])
                rows = rows[only[trie.byte_at(rows, 0)]]
            self.base = base
            if only is None:
                self._root_rows(idx, st, remaining)
                return
        elif node.hi - node.end <= _SMALL:
            self._free_small(idx, node, st, remaining, only)
            return
        else:
            lo, hi = node.end, node.hi
            last_bad = idx.last_bad[lo:hi]
            ok = last_bad <= d
            if only is not None:
                sel = np.ones(hi - lo, dtype=np.bool_)
                for child in _excluded(node, trie, only):
                    sel[child.lo - lo : child.hi - lo] = False
                ok &= sel
                last_bad = np.where(sel, last_bad, 0)
            if remaining is not None:
                before = sum(1 for b in trie.keys[lo][:d] if b & 0xC0 != 0x80)
                ok &= (trie.nchars[lo:hi] - before) <= remaining
            self.parts.append(trie.ids[lo:hi][ok])
            rows = lo + np.nonzero(last_bad > d)[0]
        if not len(rows):
            return
        if idx.tails is not None:
            rows = self._by_tails(idx, idx.tails, rows, d, st, remaining)
            if not len(rows):
                return
        first_bad = idx.first_bad[rows]
        table = self._exit_table(st, remaining)
        self._check_rows(idx, rows[(first_bad < d) | table[idx.first_bad_byte[rows]]], d, st, remaining)

    def _exit_table(self, st: ParserState, remaining: int | None) -> BoolArray:
        """Bytes that may leave the run: allowed by the state reached there (the same state when
        unlimited; one of the next <= 48 states of a bounded run)."""
        table = np.zeros(256, dtype=np.bool_)
        table[list(st.allowed_chars().first_bytes())] = True
        if remaining is not None:
            table[list(st.skip_chars(min(remaining, self.trie.max_len)).first_bytes())] = True
        return table

    def _root_rows(
        self,
        idx: FreeIndex,
        st: ParserState,
        remaining: int | None,
        spans: list[tuple[int, int]] | None = None,
    ) -> None:
        """The mixed tokens of a free run at the root: by tails, then the leaving-byte groups; the rows
        in the sorted [lo, hi) `spans` left out (the caller judges them)."""
        if idx.tails is not None and remaining is None:
            ids, tail_ids = _root_tails(idx, self.trie, spans)
            self.parts.append(ids[_accepted_tails(idx.tails, st, self.budget)[tail_ids]])
        elif idx.tails is not None:
            self._by_tails(idx, idx.tails, _outside(idx.tail_rows, spans), 0, st, remaining)
        if not len(idx.other_rows):
            return  # a wide class: every mixed token had a tail
        bounds = idx.other_bounds
        groups: list[Rows] = []
        for b in np.nonzero(self._exit_table(st, remaining))[0].tolist():
            lo, hi = int(bounds[b]), int(bounds[b + 1])
            group = None
            if remaining is None and hi - lo >= _GROUP_TAILS:
                self.spend(hi - lo)  # as feeding them would: a budgeted walk hands over before the build
                group = _group_tails(idx, self.trie, b)
            if group is not None:
                taken = idx.other_rows[lo:hi][_accepted_tails(group[0], st, self.budget)[group[1]]]
                self.parts.append(self.trie.ids[_outside(taken, spans)])
            elif hi > lo:
                groups.append(idx.other_rows[lo:hi])
        rows = _outside(np.concatenate(groups), spans) if groups else None
        if rows is not None and len(rows):
            self._check_rows(idx, rows, 0, st, remaining)

    def _check_rows(self, idx: FreeIndex, rows: Rows, d: int, st: ParserState, remaining: int | None) -> None:
        """Feed each row's bytes from `d` on (its tail alone when unlimited: memoised by tail)."""
        trie = self.trie
        memo: dict[bytes, bool] = {}
        keys = trie.keys
        good: list[int] = []
        self.spend(len(rows))
        for row in rows.tolist():
            _tick(1)
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

    def _free_stateful(self, node: Node, st: ParserState, klass: CharSet, exits: CharSet | None) -> None:
        """A run no `klass` string can kill, though each char moves the state: the tokens made of
        `klass` are all in; each other token that leaves it on one of `exits` is checked from the
        state its run reaches."""
        trie = self.trie
        idx = trie.free_index(klass)
        d = node.depth
        table = np.zeros(256, dtype=np.bool_)
        table[list((exits if exits is not None else ANY).first_bytes())] = True
        if d == 0:
            self.base = idx.pure_id
            bounds = idx.other_bounds
            groups = [idx.tail_rows[table[idx.first_bad_byte[idx.tail_rows]]]]
            groups += [idx.other_rows[bounds[b] : bounds[b + 1]] for b in np.nonzero(table)[0].tolist()]
            rows: Rows = np.concatenate(groups)
        else:
            lo, hi = node.end, node.hi
            last_bad = idx.last_bad[lo:hi]
            self.parts.append(trie.ids[lo:hi][last_bad <= d])
            rows = lo + np.nonzero(last_bad > d)[0]
            rows = rows[(idx.first_bad[rows] < d) | table[idx.first_bad_byte[rows]]]
        keys, tails = trie.keys, idx.tails
        if tails is not None:  # tokens that leave the run at once: all from `st`, in one lookup
            now = (idx.first_bad[rows] == d) & (idx.tail_id[rows] >= 0)
            mine = rows[now]
            self.parts.append(trie.ids[mine[_accepted_tails(tails, st, self.budget)[idx.tail_id[mine]]]])
            rows = rows[~now]
        reached: dict[bytes, ParserState | None] = {}
        good: list[int] = []
        self.spend(len(rows))
        for row in rows.tolist():
            _tick(1)
            key = keys[row]
            first_bad = int(idx.first_bad[row])
            if tails is not None and first_bad >= d:
                prefix = key[d:first_bad]
                if prefix in reached:
                    at = reached[prefix]
                else:
                    at, pending = feed_bytes(st, b"", prefix)
                    reached[prefix] = at = at if not pending else None
                tail_id = int(idx.tail_id[row])
                if at is None:
                    continue
                if tail_id >= 0:
                    if _accepted_tails(tails, at, self.budget)[tail_id]:
                        good.append(row)
                elif feed_bytes(at, b"", key[first_bad:])[0] is not None:
                    good.append(row)
            elif feed_bytes(st, b"", key[d:])[0] is not None:
                good.append(row)
        if good:
            self.parts.append(trie.ids[good])

    def _free_small(
        self, idx: FreeIndex, node: Node, st: ParserState, remaining: int | None, only: BoolArray | None
    ) -> None:
        """`_free` for a small subtree: row by row in plain Python beats a dozen numpy calls."""
        keys, d = self.trie.keys, node.depth
        tails = idx.tails if remaining is None else None
        good: list[int] = []
        self.spend(node.hi - node.end)
        for row in range(node.end, node.hi):
            key = keys[row]
            if only is not None and not only[key[d]]:
                continue
            if remaining is None and idx.last_bad[row] <= d:
                good.append(row)
            elif tails is not None and idx.first_bad[row] >= d:
                if _accepted_tails(tails, st, self.budget)[idx.tail_id[row]]:
                    good.append(row)
            elif feed_bytes(st, b"", key[d:])[0] is not None:
                good.append(row)
        if good:
            self.parts.append(self.trie.ids[good])

    def _by_tails(
        self, idx: FreeIndex, tails: ByteTrie, rows: Rows, d: int, st: ParserState, remaining: int | None
    ) -> Rows:
        """Settle the rows whose first bad byte is at or after `d` by their tail; return the others."""
        first_bad = idx.first_bad[rows]
        later = (first_bad >= d) & (idx.tail_id[rows] >= 0)
        mine = rows[later]
        if len(mine):
            tail_ids = idx.tail_id[mine]
            ids = self.trie.ids
            if remaining is None:
                self.parts.append(ids[mine[_accepted_tails(tails, st, self.budget)[tail_ids]]])
            else:
                skipped = self.trie.chars_between(mine, d, first_bad[later])
                fits = skipped <= remaining
                for k in np.unique(skipped[fits]).tolist():
                    sel = fits & (skipped == k)
                    at = st if k == 0 else st.skip(k)
                    self.parts.append(ids[mine[sel][_accepted_tails(tails, at, self.budget)[tail_ids[sel]]]])
        return rows[~later]


def _forced_literal(st: ParserState) -> tuple[bytes, ParserState] | None:
    """The text a one-stack state must read next and the state after it, when its top frame says
    (`forced_text`: a property name that can only be one known name, an enum's remaining text)."""
    if len(st.stacks) != 1 or not st.stacks[0]:
        return None
    stack = st.stacks[0]
    got = stack[-1].forced_text()
    if got is None or len(got[1]) != 1:
        return None
    text, (frames,) = got
    return text.encode("utf-8"), st.grammar.state((stack[:-1] + frames,))


def _forced_byte(st: ParserState) -> int | None:
    """The one ASCII char `st` allows next, if it allows just one."""
    ranges = st.allowed_chars().ranges
    if len(ranges) != 1 or ranges[0][0] != ranges[0][1] or ranges[0][0] >= 0x80:
        return None
    return ranges[0][0]


def _takes_any_run(st: ParserState) -> bool:
    """Whether some stack's top frame says any run of its free chars keeps it alive (a property name
    where additional properties are allowed): then `st` refuses no string of its delegate's run."""
    return any(stack and stack[-1].takes_any_name() for stack in st.stacks)


_MAX_DERIVED = 64  # root tail selections one FreeIndex keeps (one per set of known names set aside)


def _root_tails(
    idx: FreeIndex, trie: ByteTrie, spans: list[tuple[int, int]] | None
) -> tuple[IntArray, IntArray]:
    """The ids and tail numbers of the root's tokens judged by their tail (`_by_tails` from the root of
    an unlimited run), outside `spans`: the same for every state of a run, kept on the index. The
    delegated root of an object's names sets the same known names aside at every position, and
    selected these rows again each time."""
    key = ("root tails", tuple(spans) if spans else ())
    hit = idx.derived.get(key)
    if hit is None:
        rows = _outside(idx.tail_rows, spans)
        mine = rows[idx.tail_id[rows] >= 0]
        if len(idx.derived) >= _MAX_DERIVED:
            idx.derived.clear()
        hit = idx.derived[key] = (trie.ids[mine], idx.tail_id[mine])
    return hit  # type: ignore[return-value]


_GROUP_TAILS = 256  # a leaving-byte group this big is judged through a trie of its tails (_group_tails)
_GROUP_ROWS = 80_000  # the rows of all group tails one FreeIndex keeps (a few MB): past it, fed as before
_GROUP_ROWS_KEY = "group rows"  # where a FreeIndex counts them


def _group_tails(idx: FreeIndex, trie: ByteTrie, byte: int) -> tuple[ByteTrie, IntArray] | None:
    """The tails (from the first bad byte on) of a narrow class's tokens that leave its run at `byte`,
    as a trie of their own, and each group row's tail number; kept on the index. A state then judges
    them by one pruned walk, memoised on the state, as the wide classes' tails are. Fed one by one,
    the 61,030 tokens holding an "a" under a name pattern that reads "a" differently took 153 ms over
    a few states of one schema. None once the index keeps _GROUP_ROWS rows of them."""
    key = ("group tails", byte)
    hit = idx.derived.get(key)
    if hit is None:
        rows = idx.other_rows[int(idx.other_bounds[byte]) : int(idx.other_bounds[byte + 1])]
        kept = int(idx.derived.get(_GROUP_ROWS_KEY, 0))  # type: ignore[call-overload]
        if kept + len(rows) > _GROUP_ROWS:
            return None
        if len(idx.derived) >= _MAX_DERIVED:
            idx.derived.clear()
            kept = 0
        idx.derived[_GROUP_ROWS_KEY] = kept + len(rows)
        hit = idx.derived[key] = tails_trie(trie, rows, idx.first_bad[rows])
    return hit  # type: ignore[return-value]


def _outside(rows: Rows, spans: list[tuple[int, int]] | None) -> Rows:
    """The rows in none of the sorted, disjoint [lo, hi) spans."""
    if not spans or not len(rows):
        return rows
    los = np.array([lo for lo, _ in spans])
    his = np.array([hi for _, hi in spans])
    at = np.searchsorted(los, rows, side="right") - 1
    inside = (at >= 0) & (rows < his[np.maximum(at, 0)])
    return rows[~inside]


def _excluded(node: Node, trie: ByteTrie, only: BoolArray) -> list[Node]:
    """The children of `node` whose byte `only` does not mark."""
    children = node.children(trie)
    return [child for b, child in children.items() if not only[b]]


def _memo(st: ParserState) -> dict[object, object]:
    """What the mask walk keeps on a state (made on first use; the state drops it when forgotten)."""
    memo = st.memo
    if memo is None:
        memo = st.memo = {}
    return memo


def _accepted_tails(tails: ByteTrie, st: ParserState, budget: list[int] | None) -> BoolArray:
    """Which tails (all starting with a byte outside the run) `st` accepts; memoised on the state.

    Below an ASCII first byte, the tails are judged from the state that byte leads to and memoised on
    that state too: many states close the same way (a string at each count under maxLength, each
    state of a pattern that may end there: the quote leads back to one same state). That state stands
    in by its representative over the longest tail below the byte (ParserState.mask_rep): a backslash
    at each count of a string far from its maxLength leads to states that differ only past them."""
    memo = _memo(st)
    hit = memo.get(tails)
    if hit is None:
        acc = np.zeros(tails.n_vocab, dtype=np.bool_)
        walk = _Walk(tails, budget)
        children = tails.root.children(tails)
        first = st.allowed_chars().first_bytes()
        for b in first if len(first) < len(children) else children:
            child = children.get(b)
            if child is None or b not in first:
                continue
            if b >= 0x80:
                walk.walk(child, st, bytes((b,)))
                continue
            nxt = st.add_char(chr(b))
            if nxt is not None:
                below = nxt.mask_rep(tails.chars_after_first(b))
                acc[_accepted_below(tails, child, b, below, budget)] = True
        for part in walk.parts:
            acc[part] = True
        memo[tails] = hit = acc
    return hit  # type: ignore[return-value]


def _accepted_below(
    tails: ByteTrie, child: Node, byte: int, st: ParserState, budget: list[int] | None
) -> IntArray:
    """The tails below the root's `child` (first byte `byte`) that `st`, the state after that byte,
    accepts; memoised on `st`."""
    memo = _memo(st)
    key = (tails, byte)
    hit = memo.get(key)
    if hit is None:
        walk = _Walk(tails, budget)
        walk.walk(child, st, b"")
        memo[key] = hit = _joined(walk.parts)
    return hit  # type: ignore[return-value]


_BYTE_TABLES: dict[CharSet, tuple[BoolArray, frozenset[int]]] = {}


def _byte_table(klass: CharSet) -> tuple[BoolArray, frozenset[int]]:
    """Bytes that start a character of `klass` (lead bytes only when all of their characters are in)."""
    hit = _BYTE_TABLES.get(klass)
    if hit is not None:
        return hit
    table = np.zeros(256, dtype=np.bool_)
    table[[b for lo, hi in klass.ranges if lo < 0x80 for b in range(lo, min(hi, 0x7F) + 1)]] = True
    if (klass & _NON_ASCII) == _NON_ASCII:
        table[0xC2:0xF5] = True
    if len(_BYTE_TABLES) > 4096:
        _BYTE_TABLES.clear()
    hit = _BYTE_TABLES[klass] = (table, frozenset(np.nonzero(table)[0].tolist()))
    return hit


def _pattern_top(st: ParserState) -> tuple[DState, int, int, int | None] | None:
    """The pattern string every stack of `st` is reading (one same top frame), if any."""
    top = st.common_top()
    return top.pattern() if top is not None else None


def _pattern_parts(
    trie: ByteTrie, st: ParserState, hint: tuple[DState, int, int, int | None]
) -> MaskParts | None:
    """Inside a pattern string: the DFA's verdict on every token that stays inside; those that close it
    by their tail after the quote (from the state the string returns to); the few others one by one."""
    d, count, min_len, max_len = hint
    got = pattern_verdict(trie, d)
    if got is None:
        return None
    verdict, views = got
    full = verdict.inside()
    if max_len is not None and max_len - count < trie.max_len:
        full &= views.nchars_id <= max_len - count
    total = count + verdict.quote_chars
    ok = verdict.quote_ok & (total >= min_len)
    if max_len is not None:
        ok &= total <= max_len
    if ok.any():
        parent = st.closed()
        after = _accepted_tails(views.quote_tails, parent, None).copy()
        if views.empty_tail is not None:
            after[views.empty_tail] = True
        rows = verdict.quote_rows[ok]
        full[trie.ids[rows[after[verdict.quote_tail[ok]]]]] = True
    keys = trie.keys
    good: list[int] = []
    for row in verdict.feed_rows:
        _tick(1)
        if feed_bytes(st, b"", keys[row])[0] is not None:
            good.append(row)
    full[trie.ids[good]] = True
    empty = np.zeros(0, dtype=np.int32)
    return None, np.packbits(full), empty, empty


_MAX_SPLIT = 8  # alternatives (anyOf of patterns, say) masked one by one, then joined


def _reads_pattern(stack: Stack) -> bool:
    return bool(stack) and stack[-1].pattern() is not None


def _union(trie: ByteTrie, alternatives: tuple[ParserState, ...]) -> MaskParts:
    """A token is allowed from a set of alternatives when one of them allows it: masked one at a time,
    a pattern string or a free string among them takes its own fast path instead of holding up the
    joint walk (which follows every token such a string takes, character by character)."""
    full = np.zeros(trie.n_vocab, dtype=np.bool_)
    for alt in alternatives:
        full |= to_mask(compute(trie, alt), trie.n_vocab)
    empty = np.zeros(0, dtype=np.int32)
    return None, np.packbits(full), empty, empty


def _worth_splitting(st: ParserState) -> tuple[ParserState, ...] | None:
    """The alternatives of `st` when masking them one by one pays: some reads a pattern, or some is in
    a free run that the joint state is not (an anyOf of an enum and a string)."""
    if len(st.stacks) == 1 and not (st.stacks[0] and st.stacks[0][-1].splits()):
        return None
    alts = st.alternatives()
    if not 1 < len(alts) <= _MAX_SPLIT:
        return None
    if any(_reads_pattern(alt.stacks[0]) for alt in alts):
        return alts
    if st.free_run() is None and any(alt.free_run() is not None for alt in alts):
        return alts
    return None


def _padding(st: ParserState) -> tuple[int, ParserState] | None:
    """(room, below) when the top frame of every stack of `st` says (`unpadded`) how many more
    whitespace chars it takes (the same for all) and what is left once they stop (nothing, or itself
    taking no more), and the state `below` of what is left takes no whitespace: then a token's leading
    whitespace and its rest are judged apart (`_padded`)."""
    rooms: set[int] = set()
    lefts: dict[Stack, None] = {}
    for stack in st.stacks:
        got = stack[-1].unpadded() if stack else None
        if got is None:
            return None
        room, left = got
        rooms.add(room)
        lefts[stack[:-1] if left is None else (*stack[:-1], left)] = None
    if len(rooms) != 1:
        return None
    below = st.grammar.state(tuple(lefts))
    if below is st or not (below.allowed_chars() & WHITESPACE).is_empty():
        return None  # (below is st: a frame that takes no more whitespace is walked as it is)
    return rooms.pop(), below


def _padded(trie: ByteTrie, room: int, below: ParserState) -> MaskParts:
    """The tokens `below` takes as they are; the whitespace-only ones that fit in `room`; and those
    whose leading whitespace fits and whose rest `below` takes, by one walk over the trie of rests
    (the plain walk follows every run of spaces, tabs and newlines the vocabulary holds and walks the
    same rests again after each)."""
    base, packed, ids, minus = _below_parts(trie, below)
    pad = trie.padding()
    padded, leads = _padded_rows(pad, below)
    more = np.concatenate(
        (
            pad.only_ids[: int(np.searchsorted(pad.only_len, room, side="right"))],
            padded[: int(np.searchsorted(leads, room, side="right"))],
        )
    ).astype(np.int32, copy=False)
    if packed is None and len(ids) + len(more) + len(minus) <= _BIG:
        return base, None, np.concatenate((ids, more)), minus
    full = to_mask((base, packed, ids, minus), trie.n_vocab)
    full[more] = True
    empty = np.zeros(0, dtype=np.int32)
    return None, np.packbits(full), empty, empty


_MEMO_BELOW_IDS = 4_096  # the largest id lists a state below whitespace keeps of its own mask


def _below_parts(trie: ByteTrie, below: ParserState) -> MaskParts:
    """`compute(trie, below)`, memoised on `below` when small: whitespace states differing only in
    the room left (or in what they sit on) share the state below them (about 40% of them repeat one)."""
    memo = _memo(below)
    key = ("below", trie)
    hit = memo.get(key)
    if hit is None:
        hit = compute(trie, below)
        _, packed, ids, minus = hit
        if packed is None and len(ids) + len(minus) <= _MEMO_BELOW_IDS:
            memo[key] = hit
    return hit  # type: ignore[return-value]


def _padded_rows(pad: Padding, below: ParserState) -> tuple[IntArray, npt.NDArray[np.int16]]:
    """The tokens whose rest after their leading whitespace `below` takes, and their whitespace
    lengths, shortest first: the tokens of whitespace states with any room left over the same state
    below are a prefix of them (one search, where each such state selected them again first byte by
    first byte). Memoised on `below` when small."""
    memo = _memo(below)
    key = ("padded rows", pad)
    hit = memo.get(key)
    if hit is None:
        taken = _rests_taken(pad.rests, below, below.allowed_chars().first_bytes())
        los = pad.rest_bounds[taken]
        at = span_positions(los, pad.rest_bounds[taken + 1] - los)
        leads = pad.lead[at]
        shortest = np.argsort(leads, kind="stable")
        hit = (pad.ids[at][shortest], leads[shortest])
        if len(at) <= _MEMO_BELOW_IDS:
            memo[key] = hit
    return hit  # type: ignore[return-value]


def _rests_taken(rests: ByteTrie, below: ParserState, first: frozenset[int]) -> IntArray:
    """The rests (tokens after their leading whitespace) `below` takes, by one walk over their trie;
    memoised on `below`."""
    memo = _memo(below)
    key = ("rests", rests)
    hit = memo.get(key)
    if hit is None:
        walk = _Walk(rests)
        walk.walk_children(rests.root, below, first)
        memo[key] = hit = _joined(walk.parts)
    return hit  # type: ignore[return-value]


def compute(trie: ByteTrie, st: ParserState, pending: bytes = b"") -> MaskParts:
    """The allowed tokens from `st` (after `pending` bytes of an unfinished character)."""
    alts = _worth_splitting(st) if not pending else None
    if alts is not None:
        return _union(trie, alts)
    pad = _padding(st) if not pending and trie.with_tails else None
    if pad is not None:
        return _padded(trie, *pad)
    hint = _pattern_top(st) if not pending else None
    costly = costly_patterns(trie, hint[0]) if hint is not None else None
    if hint is not None and costly is not None and costly.skip_walk(hint[0]):
        parts = _pattern_parts(trie, st, hint)
        if parts is not None:
            return parts
    w = _Walk(trie, [WALK_BUDGET] if hint is not None else None)
    try:
        w.walk(trie.root, st, pending)
        if hint is not None and costly is not None:
            costly.walked(hint[0], over_budget=False)
    except _OverBudget:
        assert hint is not None and costly is not None  # internal: only pattern walks have a budget
        costly.walked(hint[0], over_budget=True)
        parts = _pattern_parts(trie, st, hint)
        if parts is None:  # the pattern's automaton is too big for the vectorised path: walk it all
            w = _Walk(trie)
            w.walk(trie.root, st, pending)
        else:
            return parts
    ids = _joined(w.parts)
    minus = _joined(w.minus)
    shared = w.base is not None and any(w.base is idx.pure_id for idx in trie.free_indexes())
    if len(ids) + len(minus) <= _BIG and (w.base is None or shared):
        return w.base, None, ids, minus
    full = w.base.copy() if w.base is not None else np.zeros(trie.n_vocab, dtype=np.bool_)
    full[minus] = False
    full[ids] = True
    empty = np.zeros(0, dtype=np.int32)
    return None, np.packbits(full), empty, empty


def _joined(parts: list[IntArray]) -> IntArray:
    return np.concatenate(parts).astype(np.int32, copy=False) if parts else np.zeros(0, dtype=np.int32)


def to_mask(parts: MaskParts, n_vocab: int) -> BoolArray:
    base, packed, ids, minus = parts
    if packed is None and NATIVE is not None and ids.dtype == np.int32 and minus.dtype == np.int32:
        mask = np.empty(n_vocab, dtype=np.bool_)
        NATIVE.fill_mask(
            mask,
            b"" if base is None else np.ascontiguousarray(base),
            np.ascontiguousarray(minus),
            np.ascontiguousarray(ids),
        )
        return mask
    if packed is not None:
        mask = np.unpackbits(packed, count=n_vocab).view(np.bool_)
    else:
        mask = base.copy() if base is not None else np.zeros(n_vocab, dtype=np.bool_)
    mask[minus] = False
    mask[ids] = True
    return mask
