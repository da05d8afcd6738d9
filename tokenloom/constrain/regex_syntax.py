"""Parsing the regex subset (Python `re` syntax people write for structured output) into a small AST.

AST nodes: ("set", CharSet) | ("cat", [..]) | ("alt", [..]) | ("rep", node, min, max|None) | ("bol",) |
("eol",) | ("bound", True) for \\b and ("bound", False) for \\B. Knows nothing of automata.
"""

from __future__ import annotations

from typing import Any

from tokenloom.constrain.charset import ANY, DIGITS, EMPTY, CharSet
from tokenloom.errors import GrammarError

WORD = CharSet([(ord("a"), ord("z")), (ord("A"), ord("Z")), (ord("0"), ord("9")), (ord("_"), ord("_"))])
_SPACE = CharSet.of(" \t\n\r\f\v")
_CLASS_ESCAPES = {"d": DIGITS, "w": WORD, "s": _SPACE}
_CHAR_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0", "a": "\a"}
_DOT = ANY - CharSet.of("\n")

# AST: ("set", CharSet) | ("cat", [..]) | ("alt", [..]) | ("rep", node, min, max|None) | ("bol",) | ("eol",)
# | ("bound", is_boundary)
Ast = tuple[Any, ...]


class RegexParser:
    """Recursive-descent parser of the pattern text into a small AST."""

    def __init__(self, pattern: str, lenient: bool = False) -> None:
        self.p = pattern
        self.i = 0
        self.lenient = lenient  # drop look-arounds (match a superset) instead of refusing them
        self.dropped = False

    def error(self, what: str) -> GrammarError:
        return GrammarError(f"regex {self.p!r}: {what} at position {self.i}")

    def parse(self) -> Ast:
        node = self.alternation()
        if self.i != len(self.p):
            raise self.error("unbalanced ')'")
        return node

    def alternation(self) -> Ast:
        options = [self.sequence()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else ("alt", options)

    def sequence(self) -> Ast:
        items: list[Ast] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            items.append(self.quantified(self.atom()))
        return ("cat", items)

    def quantified(self, node: Ast) -> Ast:
        while self.i < len(self.p):
            c = self.p[self.i]
            if c in "*+?":
                self.i += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            elif c == "{" and (bounds := self.braces()) is not None:
                lo, hi = bounds
            else:
                return node
            if self.i < len(self.p) and self.p[self.i] in "?+":
                self.i += 1  # lazy / possessive: same language
            node = ("rep", node, lo, hi)
        return node

    def braces(self) -> tuple[int, int | None] | None:
        end = self.p.find("}", self.i)
        body = self.p[self.i + 1 : end] if end > 0 else ""
        lo_s, sep, hi_s = body.partition(",")
        if not lo_s.isdigit() or (hi_s and not hi_s.isdigit()):
            return None  # a literal "{", as in Python
        self.i = end + 1
        lo = int(lo_s)
        hi = int(hi_s) if hi_s else (None if sep else lo)
        if hi is not None and hi < lo:
            raise self.error("bad repetition bounds")
        return lo, hi

    def atom(self) -> Ast:
        c = self.p[self.i]
        self.i += 1
        if c == "(":
            if self.p.startswith("?:", self.i):
                self.i += 2
            elif self.p.startswith("?P<", self.i) or (
                self.p.startswith("?<", self.i) and self.p[self.i + 2] not in "=!"
            ):
                self.i = self.p.index(">", self.i) + 1
            elif self.lenient and any(self.p.startswith(x, self.i) for x in ("?=", "?!", "?<=", "?<!")):
                self.i += 3 if self.p[self.i + 1] == "<" else 2
                self.alternation()  # parsed for its extent only
                if self.i >= len(self.p) or self.p[self.i] != ")":
                    raise self.error("missing ')'")
                self.i += 1
                self.dropped = True
                return ("cat", [])
            elif self.p.startswith("?", self.i):
                raise self.error("look-arounds, inline flags and back-references are not supported")
            node = self.alternation()
            if self.i >= len(self.p) or self.p[self.i] != ")":
                raise self.error("missing ')'")
            self.i += 1
            return node
        if c == "[":
            return ("set", self.char_class())
        if c == ".":
            return ("set", _DOT)
        if c == "^":
            return ("bol",)
        if c == "$":
            return ("eol",)
        if c == "\\" and self.p[self.i : self.i + 1] in ("b", "B"):
            self.i += 1  # a word boundary, or not one: ASCII word chars, as JSON Schema's ECMA-262 says
            return ("bound", self.p[self.i - 1] == "b")
        if c == "\\":
            return ("set", self.escape(in_class=False))
        if c in "*+?":
            raise self.error("nothing to repeat")
        return ("set", CharSet.of(c))

    def escape(self, in_class: bool) -> CharSet:
        if self.i >= len(self.p):
            raise self.error("trailing backslash")
        c = self.p[self.i]
        self.i += 1
        if c.lower() in _CLASS_ESCAPES:
            base = _CLASS_ESCAPES[c.lower()]
            return base if c.islower() else base.complement()
        if c in _CHAR_ESCAPES:
            return CharSet.of(_CHAR_ESCAPES[c])
        if c in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[c]
            digits = self.p[self.i : self.i + width]
            try:
                cp = int(digits, 16)
            except ValueError:
                raise self.error("bad hex escape") from None
            self.i += width
            return CharSet([(cp, cp)])
        if c.isalnum() and not (in_class and c == "b"):
            raise self.error(f"escape \\{c} is not supported")
        return CharSet.of("\b" if c == "b" else c)

    def char_class(self) -> CharSet:
        negate = self.p.startswith("^", self.i)
        self.i += negate
        acc = EMPTY
        first = True
        while True:
            if self.i >= len(self.p):
                raise self.error("missing ']'")
            c = self.p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            self.i += 1
            item = self.escape(in_class=True) if c == "\\" else CharSet.of(c)
            if self.p.startswith("-", self.i) and self.i + 1 < len(self.p) and self.p[self.i + 1] != "]":
                lo = (
                    item.ranges[0][0]
                    if len(item.ranges) == 1 and item.ranges[0][0] == item.ranges[0][1]
                    else -1
                )
                self.i += 1
                c2 = self.p[self.i]
                self.i += 1
                end = self.escape(in_class=True) if c2 == "\\" else CharSet.of(c2)
                hi = end.ranges[0][0] if len(end.ranges) == 1 and end.ranges[0][0] == end.ranges[0][1] else -1
                if lo < 0 or hi < lo:
                    raise self.error("bad character range")
                item = CharSet([(lo, hi)])
            acc = acc | item
        return acc.complement() if negate else acc
