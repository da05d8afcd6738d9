"""Inside a pattern string, the tokens the pattern lets through: its DFA run on the whole vocabulary at once.

A token that stays inside the string (no quote, no backslash) is decided by the pattern's DFA state alone
and the room left under maxLength: that verdict is computed for every token in one pass over the trie's
nodes, each distinct token prefix stepped once (compiled in _native.c; numpy without it; the DFA table over
the pattern's character classes is filled lazily, only the cells some token reaches, and bounded in states)
and kept per DFA state, so no pattern shape costs more than one pass, never a walk whose size grows with
nested or counted repeats.
Tokens that close or escape the string are few and left to the caller. Knows nothing of JSON frames or
parser states: it is handed a DFA state and the trie.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np
import numpy.typing as npt

from tokenloom.constrain.charset import JSON_STRING_FREE, CharSet, utf8_len
from tokenloom.constrain.native import NATIVE
from tokenloom.constrain.regex import DState, Regex
from tokenloom.constrain.trie import BoolArray, ByteTrie, span_positions

MAX_TABLE_CELLS = 400_000  # DFA states x character classes one pattern's table may hold before giving up
_MAX_VERDICTS = (
    64  # 32 KiB each (packed bits) for a 262k vocabulary  # DFA states whose verdicts one pattern keeps
)
_UNKNOWN, _DEAD, _STOP = -1, 0, 1  # table codes below the real states: not computed yet; the pattern
# died; a quote or backslash came
_STOP_CHARS = CharSet.of('"\\')

I32 = npt.NDArray[np.int32]


class _TrieViews:
    """What every pattern needs of one trie: its nodes level by level (a pattern's state after a prefix
    is the same for every token sharing it, so each distinct prefix is stepped once: about 590k nodes
    instead of 2M token bytes), and the rows holding a quote or backslash cut at the first of those.

    Level j holds the nodes of depth j + 1 in sorted order, each with the character its last byte
    ends (an index into `chars`; a byte inside a character: len(chars)); the children of a node of level
    j are a contiguous run of level j + 1 (`child_lo`/`child_hi`). Nodes are also numbered across all
    levels laid end to end (`base`): `valid_leaf` is where each valid row (sorted order) ends."""

    def __init__(self, trie: ByteTrie) -> None:
        n = len(trie.keys)
        lengths = trie.lengths.astype(np.int64)
        # the longest common prefix of each row with the row before it (sorted order), by following
        # only the pairs still equal (most part within a few bytes)
        lcp = np.zeros(n, dtype=np.int64)
        pairs = np.arange(1, n)
        for j in range(trie.max_len):
            pairs = pairs[(lengths[pairs] > j) & (lengths[pairs - 1] > j)]
            pairs = pairs[trie.flat[trie.offsets[pairs] + j] == trie.flat[trie.offsets[pairs - 1] + j]]
            if not len(pairs):
                break
            lcp[pairs] += 1
        # A character is stepped at its last byte, where the node's prefix has decided it (one lead byte
        # starts many characters); its earlier bytes keep the state. Which byte is last comes from the
        # lead byte's length, so a node's prefix alone says it (a lone lead byte keeps the state).
        lead_at = np.flatnonzero((trie.flat & 0xC0) != 0x80)[np.maximum(trie.cum_starts[1:] - 1, 0)]
        need = np.array([utf8_len(b) for b in range(256)], dtype=np.int64)[trie.flat[lead_at]]
        ends = np.arange(len(trie.flat)) - lead_at == need - 1
        cps = trie.byte_cp()
        self.chars = np.unique(cps[ends])
        uid = np.where(ends, np.searchsorted(self.chars, cps), len(self.chars)).astype(np.int32)
        self.level_rows: list[I32] = []  # the first row of each node, level by level
        self.level_chars: list[I32] = []
        for j in range(trie.max_len):
            rows = np.flatnonzero((lengths > j) & (lcp <= j)).astype(np.int32)
            self.level_rows.append(rows)
            self.level_chars.append(uid[trie.offsets[rows] + j])
        sizes = [len(rows) for rows in self.level_rows]
        self.base = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        self.child_lo: list[I32] = []
        self.child_hi: list[I32] = []
        self.parent: list[I32] = [np.zeros(0, dtype=np.int32)]  # of each node, as an index in all levels
        for j in range(trie.max_len - 1):
            parents = np.searchsorted(self.level_rows[j], self.level_rows[j + 1], side="right") - 1
            counts = np.bincount(parents, minlength=len(self.level_rows[j]))
            hi = np.cumsum(counts)
            self.child_lo.append((hi - counts).astype(np.int32))
            self.child_hi.append(hi.astype(np.int32))
            self.parent.append((self.base[j] + parents).astype(np.int32))
        last_byte = lengths - 1
        leaf = np.zeros(n, dtype=np.int64)  # the node where each row ends
        for j in range(trie.max_len):
            mine = np.flatnonzero(last_byte == j)
            leaf[mine] = self._node_at(mine, j + 1)
        self.n_nodes = int(self.base[-1])
        self.nchars_id = np.full(trie.n_vocab, 1 << 14, dtype=np.int16)
        self.nchars_id[trie.ids] = trie.nchars
        self.valid_leaf = leaf[~trie.invalid]  # the node where each valid row ends ...
        self.valid_ids = trie.ids[~trie.invalid]  # ... and its token id
        # The stops: the valid rows holding a quote or backslash, cut at the first of those. Per stop:
        # its row, whether it stops at a quote, the chars before it, the byte after a backslash (256:
        # none), the id of its text after a quote in `quote_tails`, and the node of its text before the
        # cut (-1: no text), whose state in a run is the pattern's state there.
        stops: list[int] = []
        quote: list[bool] = []
        chars: list[int] = []
        escaped: list[int] = []
        tail: list[int] = []
        cuts: list[int] = []
        tails: dict[bytes, int] = {}
        for row in trie.rows_holding(b'"\\').tolist():
            key = trie.keys[row]
            if trie.invalid[row]:
                continue
            cut = min(i for i in (key.find(b'"'), key.find(b"\\")) if i >= 0)
            after = key[cut + 1 :]
            stops.append(row)
            quote.append(key[cut] == 0x22)
            chars.append(len(key[:cut].decode("utf-8")))
            escaped.append(256 if key[cut] == 0x22 or not after else after[0])
            tail.append(tails.setdefault(after, len(tails)) if key[cut] == 0x22 else -1)
            cuts.append(cut)
        self.quote_tails = ByteTrie(list(tails.items()), len(tails), with_tails=False)
        self.empty_tail = tails.get(b"")  # tokens ending with the quote: nothing to check after it
        self.stop_rows = np.array(stops, dtype=np.int64)
        self.stop_quote = np.array(quote, dtype=np.bool_)
        self.stop_chars = np.array(chars, dtype=np.int32)
        self.stop_escaped = np.array(escaped, dtype=np.int64)
        self.stop_tail = np.array(tail, dtype=np.int64)
        cut_at = np.array(cuts, dtype=np.int64)
        self.stop_nodes = np.full(len(stops), -1, dtype=np.int64)
        for depth in np.unique(cut_at[cut_at > 0]).tolist():
            mine = np.flatnonzero(cut_at == depth)
            self.stop_nodes[mine] = self._node_at(self.stop_rows[mine], depth)
        self.invalid_rows = np.nonzero(trie.invalid)[0].tolist()
        # how many rows each first-level node holds: what share of the vocabulary a first char keeps
        self.first_weights = (
            np.diff(np.append(self.level_rows[0], n)) if trie.max_len else np.zeros(0, np.int64)
        )
        self._links: _Links | None = None

    def _node_at(self, rows: npt.NDArray[np.integer[Any]], depth: int) -> npt.NDArray[np.int64]:
        """The node of each row's first `depth` bytes (every row at least that long): the last node of
        that level starting at or before the row (a duplicate key shares its first copy's node)."""
        at = np.searchsorted(self.level_rows[depth - 1], rows, side="right") - 1
        nodes: npt.NDArray[np.int64] = (self.base[depth - 1] + at).astype(np.int64)
        return nodes

    def links(self) -> _Links:
        """The levels laid end to end, for the compiled run (made on its first use)."""
        if self._links is None:
            self._links = _Links(self)
        return self._links


class _Links:
    """Per node of all levels laid end to end: its char (as in `level_chars`), its parent (-1 at the
    first level) and its children's range, all as global node indices."""

    def __init__(self, views: _TrieViews) -> None:
        levels = len(views.level_rows)
        self.node_char: I32 = np.concatenate(views.level_chars).astype(np.int32)
        self.parent: I32 = np.concatenate(
            [np.full(len(views.level_rows[0]), -1, dtype=np.int32), *views.parent[1:]]
        ).astype(np.int32)
        last = np.zeros(len(views.level_rows[-1]) if levels else 0, dtype=np.int32)
        self.kid_lo: I32 = np.concatenate(
            [(views.base[j + 1] + views.child_lo[j]).astype(np.int32) for j in range(levels - 1)] + [last]
        )
        self.kid_hi: I32 = np.concatenate(
            [(views.base[j + 1] + views.child_hi[j]).astype(np.int32) for j in range(levels - 1)] + [last]
        )


class Verdict:
    """For one DFA state: the tokens that stay inside the string alive, and those that leave it."""

    __slots__ = ("feed_rows", "n_vocab", "packed", "quote_chars", "quote_ok", "quote_rows", "quote_tail")

    def __init__(
        self,
        packed: npt.NDArray[np.uint8],
        n_vocab: int,
        views: _TrieViews,
        at_stops: I32,
        table: PatternTable,
    ) -> None:
        """`packed`: by token id, no quote or backslash and the pattern survives it (packbits order);
        `at_stops`: the table row of the pattern's state before each stop's quote or backslash (below
        2: dead)."""
        self.packed = packed
        self.n_vocab = n_vocab
        alive = at_stops >= 2
        quote = alive & views.stop_quote
        self.quote_rows = views.stop_rows[quote]  # trie rows closing the string alive
        self.quote_chars = views.stop_chars[quote]  # chars before their quote
        self.quote_ok = table.accepting[at_stops[quote]]  # the pattern matches at their quote
        self.quote_tail = views.stop_tail[quote]
        escapes = np.flatnonzero(alive & ~views.stop_quote)
        # whether an escape may fit depends on the state and the escaped byte alone: judged once per pair
        pairs, inverse = np.unique(at_stops[escapes] * 257 + views.stop_escaped[escapes], return_inverse=True)
        fits = np.array(
            [_escape_may_fit(table.states[pair // 257 - 2], pair % 257) for pair in pairs.tolist()],
            dtype=np.bool_,
        )
        feed = views.stop_rows[escapes[fits[inverse.ravel()]]].tolist() if len(pairs) else []
        self.feed_rows = feed + views.invalid_rows  # left to the parser, token by token

    def inside(self) -> BoolArray:
        """A fresh bool mask of the tokens that stay inside the string alive."""
        return np.unpackbits(self.packed, count=self.n_vocab).view(np.bool_)


_ESCAPED = {ord("n"): "\n", ord("t"): "\t", ord("r"): "\r", ord("b"): "\b", ord("f"): "\f"}
_ESCAPED.update({ord(c): c for c in '"\\/'})


def _escape_may_fit(at: DState, escaped: int) -> bool:
    """Whether the escape whose byte after the backslash is `escaped` (256: the token ends at the
    backslash) may be a char the pattern takes next."""
    if escaped in (256, ord("u")):
        return True
    ch = _ESCAPED.get(escaped)
    return ch is not None and at.step(ch) is not None


class PatternTable:
    """One pattern on one trie: its character classes, the DFA table filled lazily (only the cells some
    token reaches), verdicts per state."""

    def __init__(self, regex: Regex, trie: ByteTrie, views: _TrieViews) -> None:
        cuts = {0, 0x110000, *regex.bounds}
        for cs in (JSON_STRING_FREE, _STOP_CHARS):
            for lo, hi in cs.ranges:
                cuts.update((lo, hi + 1))
        bounds = np.array(sorted(cuts), dtype=np.int64)
        reps = [int(b) for b in bounds[:-1]]  # one code point stands for its whole class
        self.regex_class = [regex.class_of(cp) for cp in reps]
        self.trie = trie
        self.views = views
        classes = np.searchsorted(bounds, views.chars, side="right") - 1
        self.keep = len(reps)  # the extra column: a continuation byte keeps the state
        self.width = self.keep + 1
        self.char_class = np.append(np.minimum(classes, self.keep - 1), self.keep).astype(np.int32)
        # a fresh row: quote/backslash stop, raw control chars kill, the rest is found when first needed
        self.blank = np.array(
            [
                _STOP if cp in (0x22, 0x5C) else (_UNKNOWN if JSON_STRING_FREE.contains_cp(cp) else _DEAD)
                for cp in reps
            ]
            + [_UNKNOWN],
            dtype=np.int32,
        )
        self.max_states = max(1, MAX_TABLE_CELLS // self.width)
        self.index: dict[DState, int] = {}
        self.states: list[DState] = []
        self.table = np.zeros((2, self.width), dtype=np.int32)  # rows _DEAD and _STOP: absorbing
        self.table[_STOP, :] = _STOP
        self.accepting = np.zeros(2, dtype=np.bool_)  # per table row: its state matches (rows 0, 1: no)
        self.verdicts: OrderedDict[DState, Verdict] = OrderedDict()
        self.lock = threading.Lock()
        self.too_big = False
        self.native = NATIVE is not None  # the compiled run; the numpy one without it (and in tests)

    def _number(self, d: DState) -> int | None:
        """The table row of `d`, made on first sight; None past the bound on states."""
        hit = self.index.get(d)
        if hit is not None:
            return hit
        if len(self.states) >= self.max_states:
            return None
        row = self.index[d] = len(self.states) + 2
        self.states.append(d)
        if self.table.shape[0] <= row:
            self._grow(2 * self.table.shape[0])
        self.table[row] = self.blank
        self.table[row, self.keep] = row
        if len(self.accepting) <= row:
            self.accepting = np.concatenate((self.accepting, np.zeros(len(self.accepting) + 2, np.bool_)))
        self.accepting[row] = d.accepting
        return row

    def _grow(self, rows: int) -> None:
        """Room for `rows` table rows (a new array: never while the compiled run reads the table)."""
        grown = np.zeros((rows, self.width), np.int32)
        grown[: self.table.shape[0]] = self.table
        self.table = grown

    def _cell(self, cell: int) -> int:
        """One table cell (a flat index), asked by the compiled run when it meets it: computed in place,
        as the run cannot follow a table that moves, so a new state past the rows reserved (or past
        the bound on states) is left unknown (-1), for the run to stop there and `_fill` to resume."""
        row, k = divmod(cell, self.width)
        nxt = self.states[row - 2].step_class_index(self.regex_class[k])
        got = _DEAD
        if nxt is not None:
            hit = self.index.get(nxt)
            if hit is None:
                if len(self.states) + 2 >= self.table.shape[0]:
                    return _UNKNOWN
                hit = self._number(nxt)
                if hit is None:
                    return _UNKNOWN
            got = hit
        self.table[row, k] = got
        return got

    def _mostly_alive(self, start: int) -> bool:
        """Whether the tokens whose first char keeps the pattern alive from `start` are a large share of
        the vocabulary. Then the run in order over every node (about 5 ns a node) beats the breadth-first
        one, which costs about 15 ns for each node it reaches but reaches only the live ones."""
        views = self.views
        classes = self.char_class[views.level_chars[0]]
        got = self.table[start, classes]
        for k in np.unique(classes[got == _UNKNOWN]).tolist():
            self._cell(start * self.width + k)
        got = self.table[start, classes]
        kept = int(views.first_weights[(got >= 2) | (got == _UNKNOWN)].sum())
        return kept * _BREADTH_FIRST_COST > len(self.trie.keys)

    def _fill(self, cells: I32) -> bool:
        """Compute the unknown table cells `cells` (flat indices); False past the bound on states."""
        width, regex_class, states = self.width, self.regex_class, self.states
        for cell in cells.tolist():
            row, k = divmod(cell, width)
            nxt = states[row - 2].step_class_index(regex_class[k])
            got = _DEAD if nxt is None else self._number(nxt)
            if got is None:
                return False
            self.table[row, k] = got
        return True

    def verdict(self, d: DState) -> Verdict | None:
        """The verdict of every token from `d` (None when the pattern's automaton is too big)."""
        with self.lock:
            hit = self.verdicts.get(d)
            if hit is not None:
                self.verdicts.move_to_end(d)
                return hit
            start = None if self.too_big else self._number(d)
            made = None if start is None else self._run(start)
            if made is None:
                self.too_big = True
                return None
            self.verdicts[d] = made
            if len(self.verdicts) > _MAX_VERDICTS:
                self.verdicts.popitem(last=False)
            return made

    def _step(self, state: I32, classes: I32) -> I32 | None:
        """The next table state of each row (cells seen for the first time are filled first)."""
        cells = state * self.width  # int32: the table holds at most MAX_TABLE_CELLS cells
        cells += classes
        nxt = self.table.ravel()[cells]
        unknown = nxt < 0
        if unknown.any():
            if not self._fill(np.unique(cells[unknown])):
                return None
            nxt = self.table.ravel()[cells]
        return nxt

    def _run(self, start: int) -> Verdict | None:
        """Every trie node from `start`, expanding only the children of nodes still alive (a
        continuation byte keeps the state); None when the table outgrows its bound."""
        state = self._states_native(start) if self.native else self._states_numpy(start)
        if state is None:
            return None
        bl, n_vocab = self.views, self.trie.n_vocab
        if self.native:
            assert NATIVE is not None  # internal: set only when it was built
            packed = np.zeros((n_vocab + 7) // 8, dtype=np.uint8)
            NATIVE.alive_bits(state, bl.valid_leaf, bl.valid_ids, packed)
        else:
            inside = np.zeros(n_vocab, dtype=np.bool_)
            inside[bl.valid_ids[state[bl.valid_leaf] >= 2]] = True
            packed = np.packbits(inside)
        at = np.where(bl.stop_nodes >= 0, state[np.maximum(bl.stop_nodes, 0)], start)
        return Verdict(packed, n_vocab, bl, at, self)

    def _states_native(self, start: int) -> I32 | None:
        """Each node's table state, by the compiled run: it asks `_cell` for each cell not computed yet
        as it meets it, in order over every node or breadth first from the roots over the live ones
        (`_mostly_alive`). Where a cell needs a row not reserved, it stops; the cells are then filled
        here and it resumes from the nodes that met them."""
        assert NATIVE is not None  # internal: called only when it was built
        links = self.views.links()
        pending = np.empty(self.views.n_nodes, dtype=np.int32)
        if self._mostly_alive(start):
            state = np.empty(self.views.n_nodes, dtype=np.int32)  # the first run writes every node
            roots = _NO_ROOTS  # the first run goes over every node in order
        else:
            state = np.zeros(self.views.n_nodes, dtype=np.int32)  # nodes never reached stay dead
            roots = np.arange(int(self.views.base[1]), dtype=np.int32)
        while True:
            if self.table.shape[0] < len(self.states) + 2 + _SPARE_ROWS:
                self._grow(max(2 * self.table.shape[0], len(self.states) + 2 + _SPARE_ROWS))
            count = NATIVE.dfa_run(
                self.table, self.width, start, self.char_class, links.node_char, links.parent,
                links.kid_lo, links.kid_hi, roots, state, pending, self._cell,
            )  # fmt: skip
            if not count:
                return state
            roots = pending[:count].copy()
            up = links.parent[roots]
            before = np.where(up >= 0, state[np.maximum(up, 0)], start)
            if not self._fill(np.unique(before * self.width + self.char_class[links.node_char[roots]])):
                return None

    def _states_numpy(self, start: int) -> I32 | None:
        """Each node's table state, level by level in numpy (the reference for the compiled run)."""
        bl = self.views
        char_class = self.char_class
        state = np.zeros(bl.n_nodes, dtype=np.int32)  # nodes never reached count as dead
        first = self._step(
            np.full(len(bl.level_rows[0]), start, dtype=np.int32), char_class[bl.level_chars[0]]
        )
        if first is None:
            return None
        state[: len(first)] = first
        live = np.flatnonzero(first >= 2)
        for j in range(1, len(bl.level_rows)):
            if not len(live):
                break
            if 2 * len(live) > len(bl.level_rows[j - 1]):  # most alive: the whole level, no expanding
                nxt = self._step(state[bl.parent[j]], char_class[bl.level_chars[j]])
                if nxt is None:
                    return None
                state[bl.base[j] : bl.base[j + 1]] = nxt
                live = np.flatnonzero(nxt >= 2)
                continue
            lo, hi = bl.child_lo[j - 1][live], bl.child_hi[j - 1][live]
            counts = hi - lo
            total = int(counts.sum())
            if not total:
                break
            nodes = span_positions(lo, counts)
            parents = np.repeat(state[bl.base[j - 1] + live], counts)
            nxt = self._step(parents, char_class[bl.level_chars[j][nodes]])
            if nxt is None:
                return None
            state[bl.base[j] + nodes] = nxt
            live = nodes[nxt >= 2]
        return state


_NO_ROOTS = np.zeros(0, dtype=np.int32)
_SPARE_ROWS = 64  # rows reserved before a compiled run, for the states it finds
_BREADTH_FIRST_COST = 3  # a node reached breadth first against one gone over in order (see _mostly_alive)
_TABLES_LOCK = threading.Lock()


def table_for(regex: Regex, trie: ByteTrie) -> PatternTable:
    """The pattern's table on this trie, kept on the regex (a regex lives as long as its grammar)."""
    with _TABLES_LOCK:
        tables = regex.tables
        hit = tables.get(id(trie))
        if hit is not None and hit[0] is trie:
            return hit[1]  # type: ignore[return-value]
        views = _VIEWS.get(id(trie))
        if views is None or views[0] is not trie:
            views = _VIEWS[id(trie)] = (trie, _TrieViews(trie))
        made = PatternTable(regex, trie, views[1])
        tables[id(trie)] = (trie, made)
        return made


_VIEWS: dict[int, tuple[ByteTrie, _TrieViews]] = {}


class CostlyStates:
    """What the trie walk learned of one pattern on one trie: the states it found too costly, and how
    many new states in a row went over its budget (`strikes`). Each failed try costs the walk's whole
    budget (a few ms) before the vectorised pass (pattern_verdict) starts anyway, so past
    `MAX_STRIKES` the pattern's new states skip the walk, all but one in `PROBE_EVERY`: that one is
    walked, and a walk that finishes clears the strikes (a pattern may be costly only near its start)."""

    __slots__ = ("skipped", "states", "strikes")

    def __init__(self) -> None:
        self.states: set[DState] = set()
        self.strikes = 0
        self.skipped = 0  # new states skipped since the last probe

    def skip_walk(self, d: DState) -> bool:
        """Whether to go to the vectorised pass for `d` without trying the walk (counts the skip)."""
        if d in self.states:
            return True
        if self.strikes < MAX_STRIKES:
            return False
        self.skipped += 1
        if self.skipped < PROBE_EVERY:
            return True
        self.skipped = 0
        return False

    def walked(self, d: DState, *, over_budget: bool) -> None:
        if over_budget:
            self.states.add(d)
            self.strikes += 1
        else:
            self.strikes = 0
            self.skipped = 0


MAX_STRIKES = 2
PROBE_EVERY = 4


def costly_patterns(trie: ByteTrie, d: DState) -> CostlyStates:
    """What the walk learned of `d`'s pattern on this trie (callers update it); kept on the regex
    beside its tables, without building one."""
    with _TABLES_LOCK:
        key = ("costly", id(trie))
        hit = d.regex.tables.get(key)
        if hit is None or hit[0] is not trie:
            hit = d.regex.tables[key] = (trie, CostlyStates())
        return hit[1]  # type: ignore[return-value]


def pattern_verdict(trie: ByteTrie, d: DState) -> tuple[Verdict, _TrieViews] | None:
    """The verdict of every token from pattern state `d` (None when the pattern's automaton is too big)."""
    table = table_for(d.regex, trie)
    verdict = table.verdict(d)
    return None if verdict is None else (verdict, table.views)
