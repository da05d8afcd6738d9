"""Frames of a JSON value checked against a compiled schema (`schema_ir.Schema`), one char at a time:
whitespace, the value placeholder, enums and literals, numbers (containers and strings: `json_containers`;
which frame a value's first character opens: `json_values`).

Whitespace between tokens is a `WsFrame` capped at `MAX_WS` consecutive characters (plus room for
pretty indentation). Knows nothing of vocabularies.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from tokenloom.constrain.charset import EMPTY, WHITESPACE, CharSet
from tokenloom.constrain.number import number_chars, number_complete
from tokenloom.constrain.parser import Frame
from tokenloom.constrain.schema_ir import Schema

MAX_WS = 12
ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
HEX = CharSet.of("0123456789abcdefABCDEF")
ESC_CHARS = CharSet.of("".join(ESCAPES) + "u")
QUOTE = CharSet.of('"')
BACKSLASH = CharSet.of("\\")
Replacements = list[tuple[Frame, ...]]
_HEX_DIGITS = "0123456789abcdef"
_BMP_HI = 0xFFFF


@lru_cache(maxsize=4096)
def escape_chars(target: CharSet) -> CharSet:
    """The chars after a backslash that begin an escape of some char of `target` (`u` when some char
    of the Basic Multilingual Plane is in it): a string that takes none of them may not escape at all."""
    acc = CharSet.of("".join(c for c, ch in ESCAPES.items() if target.contains_cp(ord(ch))))
    return acc | CharSet.of("u") if target.overlaps(0, _BMP_HI) else acc


@lru_cache(maxsize=4096)
def hex_digits(target: CharSet, code: int, left: int) -> CharSet:
    """The hex digits that continue a \\u escape (`code` read so far, `left` digits after this one)
    towards some char of `target`."""
    span = 1 << (4 * left)
    good = [
        h for h in range(16) if target.overlaps((code * 16 + h) * span, (code * 16 + h) * span + span - 1)
    ]
    return CharSet.of("".join(_HEX_DIGITS[h] + _HEX_DIGITS[h].upper() for h in good))


def ws_cap(depth: int) -> int:
    """Whitespace characters allowed in a row `depth` containers deep: MAX_WS plus 4 per level of
    pretty indentation."""
    return MAX_WS + 4 * depth


class WsFrame(Frame):
    """Optional whitespace: at most MAX_WS characters in a row, plus room for the indentation of
    pretty JSON `depth` containers deep (4 per level)."""

    __slots__ = ("count", "depth")

    count: int
    depth: int

    def __init__(self, count: int = 0, depth: int = 0) -> None:
        self._hash = 0
        self.count = count
        self.depth = depth

    def identity(self) -> tuple[object, ...]:
        return (self.count, self.depth)

    def chars(self) -> CharSet:
        return WHITESPACE if self.count < ws_cap(self.depth) else EMPTY

    def feed(self, c: str) -> Replacements:
        if c not in " \t\n\r" or self.count >= ws_cap(self.depth):
            return []
        return [(WsFrame(self.count + 1, self.depth),)]

    def can_end(self) -> bool:
        return True

    def unpadded(self) -> tuple[int, Frame | None]:
        """How many more whitespace chars fit, and what is left once they stop: nothing (so the mask
        walk may judge a token's leading whitespace and its rest apart)."""
        return max(0, ws_cap(self.depth) - self.count), None


class ValueFrame(Frame):
    """Before the first character of a value of `schema`."""

    __slots__ = ("depth", "schema")

    schema: Schema
    depth: int

    def __init__(self, schema: Schema, depth: int = 0) -> None:
        self._hash = 0
        self.schema = schema
        self.depth = depth

    def identity(self) -> tuple[object, ...]:
        return (self.schema, self.depth)

    def chars(self) -> CharSet:
        return self.schema.first_chars()

    def feed(self, c: str) -> Replacements:
        return _dispatch[0](self.schema, c, self.depth)

    def can_end(self) -> bool:
        return False


ValueDispatch = Callable[[Schema, str, int], Replacements]
_dispatch: list[ValueDispatch] = []  # json_values.start_value, installed when that module loads


def install_value_dispatch(dispatch: ValueDispatch) -> None:
    """`json_values` installs its `start_value` here: every frame that opens a value goes through it, and the
    frame modules need not import the dispatch (which imports them all)."""
    _dispatch[:] = [dispatch]


class EnumFrame(Frame):
    """Inside one of several fixed texts (enum, const, true/false/null), `pos` characters read."""

    __slots__ = ("pos", "texts")

    texts: tuple[str, ...]
    pos: int

    def __init__(self, texts: tuple[str, ...], pos: int) -> None:
        self._hash = 0
        self.texts = texts
        self.pos = pos

    def identity(self) -> tuple[object, ...]:
        return (self.texts, self.pos)

    def chars(self) -> CharSet:
        return CharSet.of("".join(t[self.pos] for t in self.texts if len(t) > self.pos))

    def feed(self, c: str) -> Replacements:
        pos = self.pos + 1
        hits = tuple(t for t in self.texts if len(t) > self.pos and t[self.pos] == c)
        out: Replacements = []
        if any(len(t) == pos for t in hits):
            out.append(())
        rest = tuple(t for t in hits if len(t) > pos)
        if rest:
            out.append((EnumFrame(rest, pos),))
        return out

    def can_end(self) -> bool:
        return False

    def forced_text(self) -> tuple[str, Replacements] | None:
        """The text every remaining choice goes on with, up to the end of the one choice left or to
        the char before the shortest one ends, and the frames after it (see ObjFrame.forced_text)."""
        texts, pos = self.texts, self.pos
        if len(texts) == 1:
            return texts[0][pos:], [()]
        limit = min(len(t) for t in texts) - 1  # stop before the shortest choice ends
        end = pos
        while end < limit and all(t[end] == texts[0][end] for t in texts):
            end += 1
        if end == pos:
            return None
        return texts[0][pos:end], [(EnumFrame(texts, end),)]


class NumFrame(Frame):
    """Inside a number; `text` so far decides what may follow (bounds checked on prefixes)."""

    __slots__ = ("schema", "text")

    schema: Schema
    text: str

    def __init__(self, schema: Schema, text: str) -> None:
        self._hash = 0
        self.schema = schema
        self.text = text

    def identity(self) -> tuple[object, ...]:
        return (self.schema, self.text)

    def chars(self) -> CharSet:
        return number_chars(self.text, self.schema)

    def feed(self, c: str) -> Replacements:
        return (
            [(NumFrame(self.schema, self.text + c),)]
            if number_chars(self.text, self.schema).contains_cp(ord(c))
            else []
        )

    def can_end(self) -> bool:
        return number_complete(self.text, self.schema)
