"""Frames of a JSON value checked against a compiled schema (`schema_ir.Schema`), one char at a time:
whitespace, value dispatch, enums and literals, numbers (containers and strings: `json_containers`).

Whitespace between tokens is a `WsFrame` capped at `MAX_WS` consecutive characters (plus room for
pretty indentation). Knows nothing of vocabularies.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True, slots=True)
class WsFrame:
    """Optional whitespace: at most MAX_WS characters in a row, plus room for the indentation of
    pretty JSON `depth` containers deep (4 per level)."""

    count: int = 0
    depth: int = 0

    def chars(self) -> CharSet:
        return WHITESPACE if self.count < MAX_WS + 4 * self.depth else EMPTY

    def feed(self, c: str) -> Replacements:
        if c not in " \t\n\r" or self.count >= MAX_WS + 4 * self.depth:
            return []
        return [(WsFrame(self.count + 1, self.depth),)]

    def can_end(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class ValueFrame:
    """Before the first character of a value of `schema`."""

    schema: Schema
    depth: int = 0

    def chars(self) -> CharSet:
        return self.schema.first_chars()

    def feed(self, c: str) -> Replacements:
        return start_value(self.schema, c, self.depth)

    def can_end(self) -> bool:
        return False


def start_value(schema: Schema, c: str, depth: int = 0) -> Replacements:
    """Frames for a value of `schema` whose first character `c` was just read."""
    from tokenloom.constrain.json_checks import start_combo
    from tokenloom.constrain.json_containers import ArrFrame, StrFrame  # cycle: they push values
    from tokenloom.constrain.json_objects import ObjFrame, Phase
    from tokenloom.constrain.json_unique import Slot, UniqFrame

    out: Replacements = []
    for alt in schema.alternatives():
        if alt.combo is not None:
            out.extend(start_combo(alt.combo, c, depth))
            continue
        if alt.literals is not None:
            out.extend(EnumFrame(alt.literals, 0).feed(c))
            continue
        types = alt.types
        if c == "{" and "object" in types:
            out.append((ObjFrame(alt, Phase.OPEN, depth=depth + 1), WsFrame(0, depth + 1)))
        elif c == "[" and "array" in types and alt.unique:
            out.append((UniqFrame(alt, Slot.OPEN, depth + 1),))
        elif c == "[" and "array" in types:
            out.append((ArrFrame(alt, 0, False, depth + 1), WsFrame(0, depth + 1)))
        elif c == '"' and "string" in types:
            regex = alt.regex.initial if alt.regex is not None else None
            out.append((StrFrame(alt, 0, regex),))
        elif c in "-0123456789" and ("number" in types or "integer" in types):
            if number_chars("", alt).contains_cp(ord(c)):
                out.append((NumFrame(alt, c),))
        elif c in "tfn":
            for word, typ in (("true", "boolean"), ("false", "boolean"), ("null", "null")):
                if word[0] == c and typ in types:
                    out.append((EnumFrame((word,), 1),))
    return out


@dataclass(frozen=True, slots=True)
class EnumFrame:
    """Inside one of several fixed texts (enum, const, true/false/null), `pos` characters read."""

    texts: tuple[str, ...]
    pos: int

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


@dataclass(frozen=True, slots=True)
class NumFrame:
    """Inside a number; `text` so far decides what may follow (bounds checked on prefixes)."""

    schema: Schema
    text: str

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
