"""The vocabulary as a byte trie, built once per vocabulary and shared by every request.

The trie is implicit: token byte strings sorted, a node is a range of them sharing a prefix, and
children are found by bisection and memoised on first use. A 262k vocabulary costs two arrays and a
sorted list instead of a million dict nodes. `FreeIndex` precomputes, for one "free" character class
(e.g. everything allowed raw inside a JSON string), which tokens are made only of such characters.
Knows nothing of parsers.
"""

from __future__ import annotations

import bisect
import re
import threading
from typing import Protocol

import numpy as np
import numpy.typing as npt

from tokenloom.constrain.charset import JSON_STRING_FREE, CharSet

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

    __slots__ = ("_children", "depth", "end", "hi", "lo", "maxes")

    def __init__(self, trie: ByteTrie, lo: int, hi: int, depth: int) -> None:
        self.lo, self.hi, self.depth = lo, hi, depth
        end = lo
        keys = trie.keys
        while end < hi and len(keys[end]) == depth:
            end += 1
        self.end = end
        self._children: dict[int, Node] | None = None
        self.maxes: dict[object, int] = {}

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

    def max_of(self, key: object, values: npt.NDArray[np.int16]) -> int:
        """Largest of `values[lo:hi]`, memoised per array (`key` names it)."""
        m = self.maxes.get(key)
        if m is None:
            m = self.maxes[key] = int(values[self.lo : self.hi].max()) if self.hi > self.lo else 0
        return m


class ByteTrie:
    """Sorted byte strings with their token ids; `root` is the whole vocabulary."""

    def __init__(self, entries: list[tuple[bytes, int]], n_vocab: int) -> None:
        entries.sort()
        self.n_vocab = n_vocab
        self.keys = [k for k, _ in entries]
        self.ids: IntArray = np.array([i for _, i in entries], dtype=np.int32)
        self.lengths = np.array([len(k) for k in self.keys], dtype=np.int16)
        self.root = Node(self, 0, len(self.keys), 0)
        self._free: dict[CharSet, FreeIndex] = {}
        self._lock = threading.Lock()

    def free_index(self, klass: CharSet) -> FreeIndex:
        with self._lock:
            idx = self._free.get(klass)
            if idx is None:
                idx = self._free[klass] = FreeIndex(self, klass)
            return idx


class FreeIndex:
    """For one class K: per token, where its last non-K byte ends (0: all K), plus K-free splits.

    `pure` marks tokens made only of K characters (by id), `pure_chars` their length in characters.
    The other tokens are grouped by what follows their longest K-only prefix (`rests`, one trie per
    prefix length in characters, and `rests_all` merged), so a walk from a free state only visits
    the few distinct tails instead of every token.
    """

    def __init__(self, trie: ByteTrie, klass: CharSet) -> None:
        n = len(trie.keys)
        self.last_bad = np.zeros(n, dtype=np.int16)
        self.pure: BoolArray = np.zeros(trie.n_vocab, dtype=np.bool_)
        self.pure_chars = np.full(trie.n_vocab, 1 << 14, dtype=np.int16)
        by_len: dict[int, list[tuple[bytes, int]]] = {}
        scan = _ascii_scanner(klass)
        for pos, key in enumerate(trie.keys):
            tid = int(trie.ids[pos])
            first, first_chars, last_end, nchars = scan(key) if scan else _scan_generic(key, klass)
            self.last_bad[pos] = last_end
            if last_end == 0:
                self.pure[tid] = True
                self.pure_chars[tid] = nchars
            else:
                by_len.setdefault(first_chars, []).append((key[first:], tid))
        self.rests = {ln: ByteTrie(list(es), trie.n_vocab) for ln, es in by_len.items()}
        self.rests_all = ByteTrie([e for es in by_len.values() for e in es], trie.n_vocab)
        self.max_pure_chars = int(self.pure_chars[self.pure].max()) if self.pure.any() else 0


Scan = tuple[int, int, int, int]  # first bad byte, chars before it, end of last bad char, total chars


def _ascii_scanner(klass: CharSet) -> object | None:
    """A fast scanner when K is "everything except some ASCII characters" (JSON strings, free text)."""
    bad = klass.complement()
    if any(hi >= 0x80 for _, hi in bad.ranges):
        return None
    pattern = re.compile(
        b"[" + b"".join(re.escape(bytes((c,))) for lo, hi in bad.ranges for c in range(lo, hi + 1)) + b"]"
    )

    def scan(key: bytes) -> Scan:
        try:
            text = key.decode("utf-8")
            valid = len(key)
        except UnicodeDecodeError as e:
            valid = e.start
            text = key[:valid].decode("utf-8")
        m = pattern.search(key, 0, valid)
        first = m.start() if m else valid
        if m is None and valid == len(key):
            return 0, 0, 0, len(text)
        last = valid if valid < len(key) else max(i for i in range(len(key)) if pattern.match(key, i)) + 1
        return first, len(key[:first].decode("utf-8")), (len(key) if valid < len(key) else last), len(text)

    return scan


def _scan_generic(key: bytes, klass: CharSet) -> Scan:
    try:
        text = key.decode("utf-8")
        valid = len(key)
    except UnicodeDecodeError as e:
        valid = e.start
        text = key[:valid].decode("utf-8")
    first = first_chars = -1
    last_end = 0 if valid == len(key) else len(key)
    offset = 0
    for i, ch in enumerate(text):
        width = len(ch.encode("utf-8"))
        if not klass.contains_cp(ord(ch)):
            if first < 0:
                first, first_chars = offset, i
            last_end = max(last_end, offset + width)
        offset += width
    if first < 0:
        first, first_chars = valid, len(text)
    if last_end == 0:
        return 0, 0, 0, len(text)
    return first, first_chars, last_end, len(text)


_TRIES: dict[int, tuple[object, ByteTrie]] = {}
_TRIES_LOCK = threading.Lock()


def trie_for(vocab: Vocab) -> ByteTrie:
    """The shared trie of `vocab` (cached by identity of its pieces; special tokens left out)."""
    key = id(vocab.pieces)
    with _TRIES_LOCK:
        hit = _TRIES.get(key)
        if hit is not None and hit[0] is vocab.pieces:
            return hit[1]
    special = vocab.special_ids
    entries = [(p, i) for i, p in enumerate(vocab.pieces) if p and i not in special]
    trie = ByteTrie(entries, vocab.n_vocab)
    trie.free_index(JSON_STRING_FREE)
    with _TRIES_LOCK:
        _TRIES[key] = (vocab.pieces, trie)
    return trie
