"""The vocabulary as a byte trie, built once per vocabulary and shared by every request.

The trie is implicit: token byte strings sorted, a node is a range of them sharing a prefix, and
children are found by bisection and memoised on first use. A 262k vocabulary costs two arrays and a
sorted list instead of a million dict nodes. `FreeIndex` precomputes, for one "free" character class
(e.g. everything allowed raw inside a JSON string), which tokens are made only of such characters.
Knows nothing of parsers.
"""

from __future__ import annotations

import bisect
import threading
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from tokenloom.constrain.charset import JSON_STRING_FREE, CharSet, utf8_len, utf8_prefix_range
from tokenloom.constrain.native import NATIVE

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int32]


class Vocab(Protocol):
    """What constrain needs of `tokenloom.engine.vocab.Vocab` (kept as a Protocol: no engine import)."""

    @property
    def pieces(self) -> tuple[bytes, ...]: ...
    @property
    def special_ids(self) -> frozenset[int]: ...
    @property
    def eog_ids(self) -> frozenset[int]: ...
    @property
    def n_vocab(self) -> int: ...


class Node:
    """A trie node: keys[lo:hi] share the first `depth` bytes; keys[lo:end] are exactly that prefix."""

    __slots__ = ("_children", "depth", "end", "hi", "lo")

    def __init__(self, trie: ByteTrie, lo: int, hi: int, depth: int) -> None:
        self.lo, self.hi, self.depth = lo, hi, depth
        end = lo
        keys = trie.keys
        while end < hi and len(keys[end]) == depth:
            end += 1
        self.end = end
        self._children: dict[int, Node] | None = None

    def children(self, trie: ByteTrie) -> dict[int, Node]:
        if self._children is None:
            out: dict[int, Node] = {}
            keys, d, i = trie.keys, self.depth, self.end
            while i < self.hi:
                b = keys[i][d]
                j = (
                    self.hi
                    if b == 255
                    else bisect.bisect_left(keys, keys[i][:d] + bytes((b + 1,)), i, self.hi)
                )
                out[b] = Node(trie, i, j, d + 1)
                i = j
            self._children = out
        return self._children


class ByteTrie:
    """Sorted byte strings with their token ids, plus flat byte arrays for vectorised free-run checks."""

    def __init__(
        self,
        entries: list[tuple[bytes, int]],
        n_vocab: int,
        *,
        with_tails: bool = True,
        presorted: bool = False,
        valid: BoolArray | None = None,
    ) -> None:
        """`presorted`: `entries` come sorted and distinct. `valid`: rows (in sorted order) known to be
        UTF-8 on their own, not decoded again (tail tries: a valid token cut where a character starts)."""
        if not presorted:
            entries.sort()
        self.with_tails = with_tails  # tail tries index their own free runs row by row
        self.n_vocab = n_vocab
        self.keys = [k for k, _ in entries]
        n = len(self.keys)
        self.ids: IntArray = np.array([i for _, i in entries], dtype=np.int32)
        self.lengths = np.fromiter(map(len, self.keys), dtype=np.int16, count=n)
        self.max_len = int(self.lengths.max()) if n else 0
        # all keys end to end: per-class scans are one pass over ~2M bytes, not a padded matrix
        self.flat = np.frombuffer(b"".join(self.keys), dtype=np.uint8)
        self.offsets = np.zeros(n, dtype=np.int64)
        np.cumsum(self.lengths[:-1], out=self.offsets[1:])
        starts = ((self.flat & 0xC0) != 0x80).astype(np.int16)
        self.nchars = np.add.reduceat(starts, self.offsets).astype(np.int16) if n else starts
        self._cum_starts: npt.NDArray[np.int32] | None = None
        self._pos: npt.NDArray[np.int16] | None = None
        self._byte_cp: npt.NDArray[np.int32] | None = None
        self._multi: tuple[IntArray, IntArray, IntArray] | None = None
        self._row_of: IntArray | None = None
        self._chars_after: list[int] | None = None
        # not UTF-8 on their own: `invalid`; of those, `dead` can never follow a character boundary
        # (a stray continuation byte); the others end inside a character (byte fallback, split chars)
        self.invalid = np.zeros(n, dtype=np.bool_)
        self.dead = np.zeros(n, dtype=np.bool_)
        suspects = self._non_ascii_rows()
        if valid is not None:
            suspects = suspects[~valid[suspects]]
        for row in suspects.tolist():
            key = self.keys[row]
            try:
                key.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.invalid[row] = True
                self.dead[row] = not _ends_inside_char(key[exc.start :])
        self.root = Node(self, 0, n, 0)
        self._free: dict[CharSet, FreeIndex] = {}
        self._padding: Padding | None = None
        self._lock = threading.Lock()

    def _non_ascii_rows(self) -> npt.NDArray[np.intp]:
        """The rows holding a byte of 0x80 or more (the only ones that may not be UTF-8)."""
        if not len(self.keys):
            return np.zeros(0, dtype=np.intp)
        if int(self.lengths.min()) == 0:  # (reduceat cannot take an empty key)
            return np.flatnonzero(np.array([not key.isascii() for key in self.keys], dtype=np.bool_))
        return np.flatnonzero(np.maximum.reduceat(self.flat, self.offsets) >= 0x80)

    @property
    def cum_starts(self) -> npt.NDArray[np.int32]:
        """Per byte, the character starts before it (made on first use: tail tries never need it)."""
        if self._cum_starts is None:
            starts = ((self.flat & 0xC0) != 0x80).astype(np.int32)
            cum = np.zeros(len(self.flat) + 1, dtype=np.int32)
            np.cumsum(starts, out=cum[1:])
            self._cum_starts = cum
        return self._cum_starts

    @property
    def pos(self) -> npt.NDArray[np.int16]:
        """Per byte, its position in its key (made on first use: only the numpy scan needs it)."""
        if self._pos is None:
            self._pos = (np.arange(len(self.flat)) - np.repeat(self.offsets, self.lengths)).astype(np.int16)
        return self._pos

    def byte_at(
        self, rows: npt.NDArray[np.integer[Any]], index: npt.NDArray[np.int16] | int
    ) -> npt.NDArray[np.uint8]:
        """Byte `index` of each row's key (callers make sure the index is inside the key)."""
        return self.flat[self.offsets[rows] + index]  # type: ignore[no-any-return]

    def byte_cp(self) -> npt.NDArray[np.int32]:
        """The code point of the character each byte belongs to (meaningless in invalid tokens)."""
        if self._byte_cp is None:
            flat = self.flat.astype(np.int32)
            pad = np.concatenate([flat, np.zeros(3, dtype=np.int32)])
            nxt = [pad[k : k + len(flat)] & 0x3F for k in (1, 2, 3)]
            cp = np.where(
                flat < 0x80,
                flat,
                np.where(
                    flat < 0xE0,
                    ((flat & 0x1F) << 6) | nxt[0],
                    np.where(
                        flat < 0xF0,
                        ((flat & 0x0F) << 12) | (nxt[0] << 6) | nxt[1],
                        ((flat & 0x07) << 18) | (nxt[0] << 12) | (nxt[1] << 6) | nxt[2],
                    ),
                ),
            )
            # every byte takes the value computed at the start of its character
            start_at = np.nonzero((self.flat & 0xC0) != 0x80)[0]
            self._byte_cp = cp[start_at[np.maximum(self.cum_starts[1:] - 1, 0)]].astype(np.int32)
        return self._byte_cp

    def multi_byte_chars(self) -> tuple[IntArray, IntArray, IntArray]:
        """The bytes of multi-byte characters (flat positions), the distinct code points they belong
        to, and each byte's index among those: a class judges each distinct character once, not
        each of its million bytes."""
        if self._multi is None:
            where = np.flatnonzero(self.flat >= 0x80)
            cps, inverse = np.unique(self.byte_cp()[where], return_inverse=True)
            self._multi = (where.astype(np.int32), cps.astype(np.int32), inverse.ravel().astype(np.int32))
        return self._multi

    def row_of_byte(self) -> IntArray:
        """The row (sorted position) of the key each flat byte belongs to."""
        if self._row_of is None:
            self._row_of = np.repeat(np.arange(len(self.keys), dtype=np.int32), self.lengths)
        return self._row_of

    def chars_after_first(self, byte: int) -> int:
        """The most chars any key starting with `byte` holds after it (a char cut short at the key's
        end counts): how far a state must behave alike to judge all of them alike."""
        if self._chars_after is None:
            most = [0] * 256
            for key, n in zip(self.keys, self.nchars.tolist(), strict=True):
                if key and n - 1 > most[key[0]]:
                    most[key[0]] = n - 1
            self._chars_after = most
        return self._chars_after[byte]

    def rows_holding(self, values: bytes) -> npt.NDArray[np.intp]:
        """The rows (sorted positions) whose key holds one of the bytes `values`, in order."""
        return np.unique(self.row_of_byte()[np.isin(self.flat, np.frombuffer(values, dtype=np.uint8))])

    def chars_between(
        self, rows: npt.NDArray[np.integer[Any]], lo: int, his: npt.NDArray[np.int16]
    ) -> IntArray:
        """Characters that start in bytes lo..his[i] of each row's key."""
        base = self.offsets[rows]
        return self.cum_starts[base + his] - self.cum_starts[base + lo]  # type: ignore[no-any-return]

    def padding(self) -> Padding:
        """The tokens that begin with whitespace, split after it (built once, on first use)."""
        if self._padding is None:
            with self._lock:
                if self._padding is None:
                    self._padding = Padding(self)
        return self._padding

    def free_indexes(self) -> list[FreeIndex]:
        with self._lock:
            return list(self._free.values())

    def has_free_index(self, klass: CharSet) -> bool:
        """Whether the index of `klass` is built (the compile prepares some: api.prepare_runs)."""
        return klass in self._free

    def free_index(self, klass: CharSet) -> FreeIndex:
        idx = self._free.get(klass)  # a plain read is safe under the GIL; building takes the lock
        if idx is not None:
            return idx
        with self._lock:
            idx = self._free.get(klass)
            if idx is None:
                if len(self._free) > 64:
                    self._free.pop(next(k for k in self._free if k != JSON_STRING_FREE))
                idx = self._free[klass] = FreeIndex(self, klass, with_tails=self.with_tails)
            return idx


class FreeIndex:
    """For one class K: per token (sorted order), where its first bad byte is and where its last bad
    character ends (0: the token is all K); `pure_id`/`nchars_id` by token id for the root bulk.

    A byte is bad when it is ASCII outside K, or non-ASCII while K lacks some non-ASCII character
    (then multi-byte characters are checked one by one by the walk). Tokens that are not valid UTF-8
    on their own (byte fallback, split characters) are always checked one by one.
    """

    def __init__(self, trie: ByteTrie, klass: CharSet, *, with_tails: bool = True) -> None:
        table = np.array([not klass.contains_cp(b) for b in range(128)] + [True] * 128, dtype=np.bool_)
        non_ascii = klass & CharSet([(0x80, 0x10FFFF)])
        all_non_ascii = non_ascii.ranges == ((0x80, 0x10FFFF),)
        if all_non_ascii:
            table[0x80:] = False
        bad = None
        if non_ascii.ranges and not all_non_ascii:  # judge multi-byte characters one by one
            los = np.array([lo for lo, _ in non_ascii.ranges], dtype=np.int64)
            his = np.array([hi for _, hi in non_ascii.ranges], dtype=np.int64)
            where, cps, inverse = trie.multi_byte_chars()
            at = np.searchsorted(los, cps, side="right") - 1
            inside = (at >= 0) & (cps <= his[np.maximum(at, 0)])
            bad = table.take(trie.flat)
            bad[where] = ~inside[inverse]
        self.first_bad, self.last_bad = scan_runs(trie, table, bad, native=NATIVE is not None)
        # A token ending inside a character stays in a run that takes every non-ASCII character (some
        # completion is in the run); otherwise it is checked byte by byte like any other.
        forced = trie.dead if all_non_ascii else trie.invalid
        # The tails (from the first bad byte on) of the mixed tokens, as a trie of their own: a state
        # is checked against all of them by one pruned walk, shared by every node that reaches it.
        # A narrow class (most tokens mixed) keeps tails only for tokens that leave it by closing or
        # escaping a JSON string; its other mixed tokens are grouped by the byte that leaves the run.
        if NATIVE is not None:
            self._group_native(trie, forced, with_tails)
        else:
            self._group_numpy(trie, forced, with_tails)
        self.tails: ByteTrie | None = None
        self.tail_id = np.full(len(trie.keys), -1, dtype=np.int32)
        if len(self.tail_rows):
            self.tails, self.tail_id[self.tail_rows] = tails_trie(
                trie, self.tail_rows, self.first_bad[self.tail_rows]
            )
        # what the mask walk derives from this index alone, by its own keys (see mask.py)
        self.derived: dict[object, object] = {}

    def _group_native(self, trie: ByteTrie, forced: BoolArray, with_tails: bool) -> None:
        """`_group_numpy` in two compiled passes over the rows (a counting sort for the groups)."""
        assert NATIVE is not None  # internal: called only when it was built
        n = len(trie.keys)
        self.first_bad_byte = np.empty(n, dtype=np.uint8)
        self.pure_id = np.zeros(trie.n_vocab, dtype=np.bool_)
        self.nchars_id = np.full(trie.n_vocab, 1 << 14, dtype=np.int16)
        mixed_rows = np.empty(n, dtype=np.int32)
        tail_rows = np.empty(n, dtype=np.int32)
        other_rows = np.empty(n, dtype=np.int32)
        self.other_bounds = np.empty(257, dtype=np.int64)
        exits = np.zeros(256, dtype=np.bool_)
        exits[_STRING_EXITS] = True
        n_mixed, n_tails, n_others, self.max_pure_chars = NATIVE.index_rows(
            self.first_bad, self.last_bad, forced, trie.dead, trie.lengths, trie.flat, trie.offsets, trie.ids,
            trie.nchars, exits, with_tails, MAX_TAIL_ROWS, self.first_bad_byte, self.pure_id, self.nchars_id,
            mixed_rows, tail_rows, other_rows, self.other_bounds,
        )  # fmt: skip
        self.mixed_rows = mixed_rows[:n_mixed]
        self.tail_rows = tail_rows[:n_tails]
        self.other_rows = other_rows[:n_others]

    def _group_numpy(self, trie: ByteTrie, forced: BoolArray, with_tails: bool) -> None:
        """The pure tokens by id (and their char counts); the mixed rows with a tail, and the others
        grouped by the byte that leaves the run: group b is `other_rows[other_bounds[b] :
        other_bounds[b + 1]]`."""
        self.first_bad[forced] = 0
        self.last_bad[forced] = trie.lengths[forced]
        has = (self.last_bad > 0) & ~trie.dead  # dead tokens are never allowed at a boundary
        self.first_bad = np.minimum(self.first_bad, trie.lengths)
        self.first_bad_byte = trie.flat[trie.offsets + np.minimum(self.first_bad, trie.lengths - 1)]
        self.mixed_rows = mixed_rows = np.flatnonzero(has).astype(np.int32)  # as the compiled grouping gives
        pure_rows = np.nonzero(self.last_bad == 0)[0]
        self.pure_id = np.zeros(trie.n_vocab, dtype=np.bool_)
        self.pure_id[trie.ids[pure_rows]] = True
        self.nchars_id = np.full(trie.n_vocab, 1 << 14, dtype=np.int16)
        self.nchars_id[trie.ids[pure_rows]] = trie.nchars[pure_rows]
        self.max_pure_chars = int(trie.nchars[pure_rows].max()) if len(pure_rows) else 0
        leaves_by = self.first_bad_byte[mixed_rows]
        narrow = len(mixed_rows) > MAX_TAIL_ROWS
        by_tail = np.isin(leaves_by, _STRING_EXITS) if narrow else np.ones(len(leaves_by), dtype=np.bool_)
        self.tail_rows = mixed_rows[by_tail] if with_tails else mixed_rows[:0]
        other = mixed_rows[~by_tail] if with_tails else mixed_rows
        order = np.argsort(self.first_bad_byte[other], kind="stable")
        self.other_rows = other[order]
        self.other_bounds = np.searchsorted(self.first_bad_byte[self.other_rows], np.arange(257))


def tails_trie(
    trie: ByteTrie, rows: npt.NDArray[np.integer[Any]], starts: npt.NDArray[np.integer[Any]]
) -> tuple[ByteTrie, IntArray]:
    """The keys of `rows` from `starts` on (their tails), each distinct tail once, as a trie of their
    own, and each row's tail number: a state judges them all by one pruned walk of that trie. Built
    sorted, with the validity of each tail taken from its token where it can be (a narrow class's
    group of 15,108 multi-byte tails: 46 -> 17 ms)."""
    keys = trie.keys
    cuts = starts.tolist()
    tails = [keys[row][start:] for row, start in zip(rows.tolist(), cuts, strict=True)]
    # Numbered in sorted order (the tail trie's rows are its ids). Whole tokens (cut at 0) come sorted
    # when the rows do, and are distinct: one sorted run, merged with the few cut ones by one pass of
    # the sort, not a sort of them all (most of the time of a big group's trie).
    whole = [tail for tail, start in zip(tails, cuts, strict=True) if not start]
    cut = {tail for tail, start in zip(tails, cuts, strict=True) if start}
    number = {tail: i for i, tail in enumerate(dict.fromkeys(sorted(whole + list(cut))))}
    distinct = list(number)
    numbers = np.array([number[tail] for tail in tails], dtype=np.int32)
    # a valid token's tail from where a character starts is valid too: only the others are decoded
    lengths = trie.lengths[rows]
    at_start = (trie.byte_at(rows, np.minimum(starts, lengths - 1)) & 0xC0) != 0x80
    valid = np.zeros(len(distinct), dtype=np.bool_)
    valid[numbers[at_start & ~trie.invalid[rows] & (starts < lengths)]] = True
    entries = list(zip(distinct, range(len(distinct)), strict=True))
    return ByteTrie(entries, len(distinct), with_tails=False, presorted=True, valid=valid), numbers


PAD_BYTES = b" \t\n\r"  # the whitespace JSON allows between tokens


class Padding:
    """The tokens that begin with whitespace (137k of Gemma's 262k), each as its leading whitespace and
    the rest. Where a state's top frame is optional whitespace that leaves no trace, such a token is
    allowed when its whitespace fits and the state below takes its rest: one walk over the trie of the
    distinct rests judges them all, instead of the same rests walked again after every run of spaces.

    `only_ids`/`only_len`: the whitespace-only tokens and their lengths, shortest first. The others
    (`ids`, `lead` whitespace bytes) are grouped by their rest (numbered as in the `rests` trie): rest r's
    tokens are [rest_bounds[r], rest_bounds[r + 1])."""

    def __init__(self, trie: ByteTrie) -> None:
        keys = trie.keys
        lead = np.array([len(k) - len(k.lstrip(PAD_BYTES)) for k in keys], dtype=np.int16)
        rows = np.flatnonzero(lead > 0)
        whole = lead[rows] == trie.lengths[rows]
        shortest = np.argsort(lead[rows[whole]], kind="stable")
        self.only_ids: IntArray = trie.ids[rows[whole]][shortest]
        self.only_len = lead[rows[whole]][shortest]
        mixed = rows[~whole]
        numbered: dict[bytes, int] = {}
        rest_of = [numbered.setdefault(keys[row][lead[row] :], len(numbered)) for row in mixed.tolist()]
        self.rests = ByteTrie(list(numbered.items()), len(numbered), with_tails=False)
        rest = np.array(rest_of, dtype=np.int32)
        order = np.argsort(rest, kind="stable")
        self.ids: IntArray = trie.ids[mixed][order]
        self.lead = lead[mixed][order]
        self.rest_bounds = np.searchsorted(rest[order], np.arange(len(numbered) + 1))


def scan_runs(
    trie: ByteTrie, table: BoolArray, bad: BoolArray | None, *, native: bool
) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """Per row: the position of its first bad byte (1 << 14: none) and the end of its last (0: none).
    A byte is bad where `bad` says so, or, without `bad`, where the 256-entry `table` marks its value.
    `native`: by the compiled scan (one pass, no 2M-entry temporaries); else by numpy."""
    if native:
        assert NATIVE is not None  # internal: callers ask for it only when it was built
        first = np.empty(len(trie.keys), dtype=np.int16)
        last = np.empty(len(trie.keys), dtype=np.int16)
        flags = np.zeros(0, dtype=np.bool_) if bad is None else bad
        NATIVE.scan_runs(trie.flat, table, flags, trie.offsets, trie.lengths, first, last)
        return first, last
    return _first_last(trie, table.take(trie.flat) if bad is None else bad)


def _first_last(trie: ByteTrie, bad: BoolArray) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16]]:
    """`scan_runs` in numpy, from a flag per byte.

    A row whose first and last bytes are both bad is settled by those two (most rows, for a narrow
    class); the others from their bad bytes' positions, which come row by row: a row's first and
    last are where the row number changes (both cheaper than segmented reductions over every byte)."""
    n = len(trie.keys)
    ends = trie.offsets + trie.lengths
    first_is_bad, last_is_bad = bad.take(trie.offsets), bad.take(ends - 1)
    first = np.where(first_is_bad, 0, 1 << 14).astype(np.int16)
    last = np.where(last_is_bad, trie.lengths, 0).astype(np.int16)
    open_rows = np.flatnonzero(~(first_is_bad & last_is_bad))
    if not len(open_rows):
        return first, last
    if 2 * len(open_rows) < n:  # only their bytes
        lengths = trie.lengths.take(open_rows).astype(np.int64)
        flat_at = span_positions(trie.offsets.take(open_rows), lengths)
        hit = bad.take(flat_at)
        where = flat_at[hit]
        rows = np.repeat(open_rows.astype(np.int32), lengths)[hit]
    else:
        where = np.flatnonzero(bad)
        rows = trie.row_of_byte().take(where)
    if len(where):
        breaks = np.flatnonzero(rows[1:] != rows[:-1]) + 1
        firsts = np.concatenate(([0], breaks))
        lasts = np.concatenate((breaks - 1, [len(where) - 1]))
        first[rows.take(firsts)] = trie.pos.take(where.take(firsts))
        last[rows.take(lasts)] = trie.pos.take(where.take(lasts)) + 1
    return first, last


def span_positions(
    starts: npt.NDArray[np.integer[Any]], counts: npt.NDArray[np.integer[Any]]
) -> npt.NDArray[np.int64]:
    """The positions of the spans [starts[i], starts[i] + counts[i]) laid end to end, in two numpy
    calls instead of a concatenation of one arange per span."""
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))


def _ends_inside_char(tail: bytes) -> bool:
    """Whether `tail` (from the first undecodable byte) is the start of one valid character."""
    return utf8_len(tail[0]) > 1 and len(tail) < utf8_len(tail[0]) and utf8_prefix_range(tail) is not None


MAX_TAIL_ROWS = 40_000  # more mixed tokens than this: a narrow class (e.g. the chars of [a-z0-9-])
_STRING_EXITS = np.array([ord('"'), ord("\\")], dtype=np.uint8)
_TRIES: dict[int, tuple[object, ByteTrie]] = {}
_TRIES_LOCK = threading.Lock()


def trie_for(vocab: Vocab) -> ByteTrie:
    """The shared trie of `vocab` (cached by identity of its pieces; special tokens left out)."""
    key = id(vocab.pieces)
    with _TRIES_LOCK:  # held while building: two first constrained requests build it once, not twice
        hit = _TRIES.get(key)
        if hit is not None and hit[0] is vocab.pieces:
            return hit[1]
        special = vocab.special_ids
        entries = [(p, i) for i, p in enumerate(vocab.pieces) if p and i not in special]
        trie = ByteTrie(entries, vocab.n_vocab)
        trie.free_index(JSON_STRING_FREE)  # every JSON schema needs it: build it up front
        trie.byte_cp()  # and classes with some non-ASCII characters need this (0.2 s)
        trie.padding().rests.free_index(JSON_STRING_FREE)  # and whitespace between JSON tokens (0.2 s)
        _TRIES[key] = (vocab.pieces, trie)
        return trie
