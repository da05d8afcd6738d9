"""The subset of Python `re` syntax people write for structured output, as a lazily determinised NFA.

Supports literals, escapes (\\d \\w \\s and negations, \\n \\t \\xhh \\uhhhh, escaped punctuation), `.`,
classes with ranges and negation, groups (capturing, `?:`, named), `|`, `* + ? {m} {m,} {m,n}` (lazy and
possessive forms match the same strings) and `^`/`$` anchors. Back-references, look-arounds, `\\b` and
inline flags raise GrammarError. Knows nothing of JSON or vocabularies.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from tokenloom.constrain.charset import ANY, DIGITS, EMPTY, CharSet
from tokenloom.constrain.parser import Frame, FreeRun
from tokenloom.errors import GrammarError

MAX_NFA_STATES = 20_000

_WORD = CharSet([(ord("a"), ord("z")), (ord("A"), ord("Z")), (ord("0"), ord("9")), (ord("_"), ord("_"))])
_SPACE = CharSet.of(" \t\n\r\f\v")
_CLASS_ESCAPES = {"d": DIGITS, "w": _WORD, "s": _SPACE}
_CHAR_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0", "a": "\a"}
_DOT = ANY - CharSet.of("\n")

# AST: ("set", CharSet) | ("cat", [..]) | ("alt", [..]) | ("rep", node, min, max|None) | ("bol",) | ("eol",)
Ast = tuple[Any, ...]


class _Parser:
    """Recursive-descent parser of the pattern text into a small AST."""

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

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


class Nfa:
    """Thompson NFA with character-set edges; anchors are epsilon edges usable only at start / end."""

    def __init__(self) -> None:
        self.edges: list[list[tuple[CharSet, int]]] = []
        self.eps: list[list[int]] = []
        self.bol: list[list[int]] = []
        self.eol: list[list[int]] = []

    def new(self) -> int:
        if len(self.edges) >= MAX_NFA_STATES:
            raise GrammarError(f"regex too large (more than {MAX_NFA_STATES} automaton states)")
        for lst in (self.edges, self.eps, self.bol, self.eol):
            lst.append([])
        return len(self.edges) - 1

    def build(self, node: Ast, s: int) -> int:
        kind = node[0]
        if kind == "set":
            e = self.new()
            self.edges[s].append((node[1], e))
            return e
        if kind == "cat":
            for item in node[1]:
                s = self.build(item, s)
            return s
        if kind == "alt":
            e = self.new()
            for opt in node[1]:
                self.eps[self.build(opt, s)].append(e)
            return e
        if kind in ("bol", "eol"):
            e = self.new()
            (self.bol if kind == "bol" else self.eol)[s].append(e)
            return e
        _, item, lo, hi = node
        for _ in range(lo):
            s = self.build(item, s)
        if hi is None:
            loop = self.new()
            self.eps[s].append(loop)
            self.eps[self.build(item, loop)].append(loop)
            return loop
        e = self.new()
        for _ in range(hi - lo):
            self.eps[s].append(e)
            s = self.build(item, s)
        self.eps[s].append(e)
        return e

    def live_states(self, final: int) -> frozenset[int]:
        """States from which `final` is reachable without `^` (only usable before the first char)."""
        back: dict[int, list[int]] = {}
        for s in range(len(self.edges)):
            for t in self.eps[s] + self.eol[s] + [t for _, t in self.edges[s]]:
                back.setdefault(t, []).append(s)
        seen = {final}
        todo = [final]
        while todo:
            for s in back.get(todo.pop(), []):
                if s not in seen:
                    seen.add(s)
                    todo.append(s)
        return frozenset(seen)

    def closure(self, states: set[int], at_start: bool, at_end: bool = False) -> frozenset[int]:
        todo = list(states)
        seen = set(states)
        while todo:
            s = todo.pop()
            nxt = self.eps[s] + (self.bol[s] if at_start else []) + (self.eol[s] if at_end else [])
            for t in nxt:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return frozenset(seen)


class DState:
    """One state of the lazily built DFA; identity-hashed because each is made once per regex."""

    __slots__ = ("_default", "_has_default", "accepting", "chars", "loop", "nfa", "regex", "states", "trans")

    def __init__(self, regex: Regex, states: frozenset[int]) -> None:
        self.regex = regex
        self.states = states
        nfa = regex.nfa
        acc = EMPTY
        for s in states:
            for cs, t in nfa.edges[s]:
                if t in regex.live:
                    acc = acc | cs
        self.chars = acc
        self.accepting = regex.final in nfa.closure(set(states), at_start=False, at_end=True)
        self.trans: dict[str, DState | None] = {}
        self.loop: CharSet | None = None
        self._default: tuple[CharSet, DState] | None = None
        self._has_default = False

    def step(self, c: str) -> DState | None:
        try:
            return self.trans[c]
        except KeyError:
            pass
        nfa = self.regex.nfa
        live = self.regex.live
        nxt = {t for s in self.states for cs, t in nfa.edges[s] if t in live and c in cs}
        res = self.regex.dstate(nfa.closure(nxt, at_start=False) & live) if nxt else None
        self.trans[c] = res
        return res

    def loop_chars(self) -> CharSet:
        """Characters that lead back to this very state (the trie walk takes them in bulk)."""
        if self.loop is None:
            bounds = sorted(
                {lo for r in _edge_sets(self) for lo, _ in r.ranges}
                | {hi + 1 for r in _edge_sets(self) for _, hi in r.ranges}
            )
            keep: list[tuple[int, int]] = []
            for lo, hi in itertools.pairwise(bounds):
                if self.chars.contains_cp(lo) and self.step(chr(lo)) is self:
                    keep.append((lo, hi - 1))
            self.loop = CharSet(keep)
        return self.loop

    def _atoms(self) -> list[tuple[int, int]]:
        """Maximal ranges on which every transition of this state agrees."""
        sets = _edge_sets(self)
        bounds = sorted(
            {0, 0x110000}
            | {lo for r in sets for lo, _ in r.ranges}
            | {hi + 1 for r in sets for _, hi in r.ranges}
        )
        return [(lo, hi - 1) for lo, hi in itertools.pairwise(bounds)]

    def default(self) -> tuple[CharSet, DState] | None:
        """(D, F): the widest set of chars leading to one state F that itself loops on all of D."""
        if not self._has_default:
            self._has_default = True
            groups: dict[DState, list[tuple[int, int]]] = {}
            for lo, hi in self._atoms():
                if self.chars.contains_cp(lo) and (t := self.step(chr(lo))) is not None:
                    groups.setdefault(t, []).append((lo, hi))
            best: tuple[CharSet, DState] | None = None
            best_size = 1000  # only worth it for wide classes
            for target, ranges in groups.items():
                cls = CharSet(ranges)
                size = sum(hi - lo + 1 for lo, hi in ranges)
                if size > best_size and (cls - target.loop_chars()).is_empty():
                    best, best_size = (cls, target), size
            self._default = best
        return self._default


def _edge_sets(d: DState) -> list[CharSet]:
    return [cs for s in d.states for cs, _ in d.regex.nfa.edges[s]]


class Regex:
    """A compiled pattern: `fullmatch` semantics, or `search` semantics for JSON Schema `pattern`."""

    def __init__(self, pattern: str, search: bool = False) -> None:
        ast = _Parser(pattern).parse()
        if search:
            anywhere = ("rep", ("set", ANY), 0, None)
            ast = ("cat", [anywhere, ast, anywhere])
        self.pattern = pattern
        self.nfa = Nfa()
        start = self.nfa.new()
        self.final = self.nfa.build(ast, start)
        self._dstates: dict[frozenset[int], DState] = {}
        self.live = self.nfa.live_states(self.final)
        self.initial = self.dstate(self.nfa.closure({start}, at_start=True) & self.live)

    def dstate(self, states: frozenset[int]) -> DState:
        d = self._dstates.get(states)
        if d is None:
            if len(self._dstates) > 50_000:
                raise GrammarError(f"regex {self.pattern!r} needs too many automaton states")
            d = self._dstates[states] = DState(self, states)
        return d

    def fullmatch(self, text: str) -> bool:
        d: DState | None = self.initial
        for c in text:
            if d is None:
                return False
            d = d.step(c)
        return d is not None and d.accepting


@dataclass(frozen=True, slots=True, eq=False)
class RegexFrame:
    """A whole regex as one frame (the `{"regex": ...}` spec); free runs on self-loops such as `[a-z]*`."""

    d: DState

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RegexFrame) and other.d is self.d

    def __hash__(self) -> int:
        return id(self.d)

    def chars(self) -> CharSet:
        return self.d.chars

    def feed(self, c: str) -> list[tuple[Frame, ...]]:
        nxt = self.d.step(c)
        return [] if nxt is None else [(RegexFrame(nxt),)]

    def can_end(self) -> bool:
        return self.d.accepting

    def free_run(self) -> FreeRun | None:
        loop = self.d.loop_chars()
        return None if loop.is_empty() or loop == self.d.chars else FreeRun(loop, None)

    def skip(self, n: int) -> Frame:
        return self

    def delegate(self) -> tuple[CharSet, Frame] | None:
        hint = self.d.default()
        return None if hint is None or hint[1] is self.d else (hint[0], RegexFrame(hint[1]))
