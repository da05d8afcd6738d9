"""Sets of Unicode characters as sorted code-point ranges, with the byte-level views the trie walk needs.

Knows nothing of parsers or vocabularies; values are immutable and hashable.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

MAX_CP = 0x10FFFF
_UTF8_LEAD_RANGES: dict[int, tuple[int, int]] = {}
for _b in range(0xC2, 0xE0):
    _UTF8_LEAD_RANGES[_b] = ((_b & 0x1F) << 6, ((_b & 0x1F) << 6) | 0x3F)
for _b in range(0xE0, 0xF0):  # clipped: E0 80..9F would be overlong
    _UTF8_LEAD_RANGES[_b] = (max(0x800, (_b & 0x0F) << 12), ((_b & 0x0F) << 12) | 0xFFF)
for _b in range(0xF0, 0xF5):
    _UTF8_LEAD_RANGES[_b] = (max(0x10000, (_b & 0x07) << 18), min(MAX_CP, ((_b & 0x07) << 18) | 0x3FFFF))


# Parsers build the same sets over and over (one per new state): results are memoised by value.
_Ranges = tuple[tuple[int, int], ...]
_FIRST_BYTES: dict[_Ranges, frozenset[int]] = {}
_OF: dict[str, CharSet] = {}
_OR: dict[tuple[_Ranges, _Ranges], CharSet] = {}
_AND: dict[tuple[_Ranges, _Ranges], CharSet] = {}
_COMPLEMENT: dict[_Ranges, CharSet] = {}
_MEMO_LIMIT = 50_000


def _remember(memo: dict[Any, CharSet], key: Any, value: CharSet) -> CharSet:
    if len(memo) >= _MEMO_LIMIT:
        memo.clear()
    memo[key] = value
    return value


class CharSet:
    """Immutable set of code points, stored as disjoint sorted inclusive ranges."""

    __slots__ = ("_first_bytes", "_hash", "_los", "ranges")

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(ranges):
            if lo > hi:
                continue
            if merged and lo <= merged[-1][1] + 1:
                if hi > merged[-1][1]:
                    merged[-1] = (merged[-1][0], hi)
            else:
                merged.append((lo, hi))
        self.ranges: tuple[tuple[int, int], ...] = tuple(merged)
        self._los = [r[0] for r in merged]
        self._hash = hash(self.ranges)
        self._first_bytes: frozenset[int] | None = None

    @staticmethod
    def of(chars: str) -> CharSet:
        hit = _OF.get(chars)
        if hit is None:
            hit = _remember(_OF, chars, CharSet((ord(c), ord(c)) for c in chars))
        return hit

    @staticmethod
    def range(lo: str, hi: str) -> CharSet:
        return CharSet([(ord(lo), ord(hi))])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharSet) and self.ranges == other.ranges

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"CharSet({self.ranges!r})"

    def __contains__(self, c: str) -> bool:
        return self.contains_cp(ord(c))

    def contains_cp(self, cp: int) -> bool:
        i = bisect.bisect_right(self._los, cp) - 1
        return i >= 0 and cp <= self.ranges[i][1]

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether any code point in [lo, hi] is in the set (used for partial UTF-8 prefixes)."""
        i = bisect.bisect_right(self._los, hi) - 1
        return i >= 0 and self.ranges[i][1] >= lo

    def is_empty(self) -> bool:
        return not self.ranges

    def __or__(self, other: CharSet) -> CharSet:
        if not other.ranges or other.ranges == self.ranges:
            return self
        if not self.ranges:
            return other
        key = (self.ranges, other.ranges)
        hit = _OR.get(key)
        if hit is None:
            hit = _remember(_OR, key, CharSet(self.ranges + other.ranges))
        return hit

    def complement(self) -> CharSet:
        hit = _COMPLEMENT.get(self.ranges)
        if hit is None:
            hit = _remember(_COMPLEMENT, self.ranges, self._complement())
        return hit

    def _complement(self) -> CharSet:
        out: list[tuple[int, int]] = []
        prev = 0
        for lo, hi in self.ranges:
            if lo > prev:
                out.append((prev, lo - 1))
            prev = hi + 1
        if prev <= MAX_CP:
            out.append((prev, MAX_CP))
        return CharSet(out)

    def __and__(self, other: CharSet) -> CharSet:
        key = (self.ranges, other.ranges)
        hit = _AND.get(key)
        if hit is None:
            hit = _remember(_AND, key, self._and(other))
        return hit

    def _and(self, other: CharSet) -> CharSet:
        out: list[tuple[int, int]] = []
        i = j = 0
        a, b = self.ranges, other.ranges
        while i < len(a) and j < len(b):
            lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if lo <= hi:
                out.append((lo, hi))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return CharSet(out)

    def __sub__(self, other: CharSet) -> CharSet:
        return self & other.complement()

    def first_bytes(self) -> frozenset[int]:
        """Bytes that can begin the UTF-8 encoding of a member; cached because the walk asks per node."""
        if self._first_bytes is None:
            fb = _FIRST_BYTES.get(self.ranges)
            if fb is None:
                ascii_bytes = {b for lo, hi in self.ranges if lo < 0x80 for b in range(lo, min(hi, 0x7F) + 1)}
                if self.ranges and self.ranges[-1][1] >= 0x80:
                    ascii_bytes.update(
                        b for b, (lo, hi) in _UTF8_LEAD_RANGES.items() if self.overlaps(lo, hi)
                    )
                fb = frozenset(ascii_bytes)
                if len(_FIRST_BYTES) > 20_000:
                    _FIRST_BYTES.clear()
                _FIRST_BYTES[self.ranges] = fb
            self._first_bytes = fb
        return self._first_bytes


def utf8_prefix_range(prefix: bytes) -> tuple[int, int] | None:
    """Code-point range of the characters whose UTF-8 encoding starts with `prefix` (an incomplete char)."""
    lead = prefix[0]
    if lead not in _UTF8_LEAD_RANGES:
        return None
    need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    if len(prefix) >= need:
        return None
    cp = lead & (0x1F if need == 2 else 0x0F if need == 3 else 0x07)
    for b in prefix[1:]:
        if b & 0xC0 != 0x80:
            return None
        cp = (cp << 6) | (b & 0x3F)
    missing = need - len(prefix)
    lo, hi = cp << (6 * missing), (cp << (6 * missing)) | ((1 << (6 * missing)) - 1)
    # exclude overlong forms and surrogates by clipping to the legal range of this length
    legal_lo = (0x80, 0x800, 0x10000)[need - 2]
    lo = max(lo, legal_lo)
    hi = min(hi, MAX_CP)
    if lo <= _SURROGATES[1] and hi >= _SURROGATES[0]:  # never encoded: ED A0..BF starts nothing
        if lo >= _SURROGATES[0] and hi <= _SURROGATES[1]:
            return None
        lo, hi = (lo, _SURROGATES[0] - 1) if lo < _SURROGATES[0] else (_SURROGATES[1] + 1, hi)
    return (lo, hi) if lo <= hi else None


_SURROGATES = (0xD800, 0xDFFF)


def utf8_len(lead: int) -> int:
    """Length of the UTF-8 sequence started by `lead`, 0 if it cannot start one."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead < 0xE0:
        return 2
    if 0xE0 <= lead < 0xF0:
        return 3
    if 0xF0 <= lead < 0xF5:
        return 4
    return 0


EMPTY = CharSet()
ANY = CharSet([(0, MAX_CP)])
WHITESPACE = CharSet.of(" \t\n\r")
DIGITS = CharSet.range("0", "9")
# characters that may appear raw inside a JSON string
JSON_STRING_FREE = ANY - (CharSet.of('"\\') | CharSet([(0, 0x1F)]))
