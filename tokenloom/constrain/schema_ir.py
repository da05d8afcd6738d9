"""The compiled form of a JSON Schema: one identity-hashed node per schema location.

Nodes are filled in after creation so `$ref` cycles are plain object cycles; the frames in
`json_frames` walk them. Knows nothing of the JSON Schema text format (see `json_schema`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from tokenloom.constrain.charset import EMPTY, CharSet
from tokenloom.constrain.regex import Regex
from tokenloom.errors import GrammarError

if TYPE_CHECKING:
    from tokenloom.constrain.parser import ParserState

ALL_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_TYPE_FIRST = {
    "object": CharSet.of("{"),
    "array": CharSet.of("["),
    "string": CharSet.of('"'),
    "number": CharSet.of("-0123456789"),
    "integer": CharSet.of("-0123456789"),
    "boolean": CharSet.of("tf"),
    "null": CharSet.of("n"),
}


class Combo:
    """A value checked against several schemas side by side (see `json_checks`).

    kind "oneOf": exactly one of `parts` accepts it; kind "not": parts[0] accepts it and parts[1] not.
    `starts` caches, per nesting depth, the initial parser state of each part.
    """

    __slots__ = ("kind", "parts", "starts")

    def __init__(self, kind: str, parts: tuple[Schema, ...]) -> None:
        self.kind = kind
        self.parts = parts
        self.starts: dict[int, tuple[ParserState, ...]] = {}

    def first_chars(self) -> CharSet:
        parts = self.parts if self.kind == "oneOf" else self.parts[:1]
        acc = EMPTY
        for p in parts:
            acc = acc | p.first_chars()
        return acc


class Schema:
    """One schema location; `options` set means anyOf over them and the other fields are unused;
    `combo` set means the value is checked by that combination and the other fields are unused."""

    __slots__ = (
        "_alts",
        "_first",
        "_names",
        "additional",
        "any_order",
        "combo",
        "excl_max",
        "excl_min",
        "items",
        "items_found",
        "items_missed",
        "literals",
        "lossy",
        "max_contains",
        "max_items",
        "max_len",
        "max_props",
        "maximum",
        "min_contains",
        "min_items",
        "min_len",
        "min_props",
        "minimum",
        "multiple_of",
        "options",
        "pattern_props",
        "pattern_sets",
        "prefix",
        "prefix_found",
        "prefix_missed",
        "props",
        "regex",
        "required",
        "starts",
        "types",
        "unique",
    )

    def __init__(self) -> None:
        self.types: frozenset[str] = ALL_TYPES
        self.options: tuple[Schema, ...] | None = None
        self.combo: Combo | None = None
        self.literals: tuple[str, ...] | None = None  # enum/const as compact JSON texts
        self.lossy = False  # a keyword here is ignored: this node accepts more than the schema says
        self.props: tuple[tuple[str, Schema], ...] = ()
        self.required: frozenset[str] = frozenset()
        self.any_order = False  # properties in any order ("x-tokenloom-any-order"); else schema order
        self.additional: Schema | None = None  # None: no other keys allowed
        self.min_props = 0
        self.max_props: int | None = None
        self.prefix: tuple[Schema, ...] = ()
        self.items: Schema | None = None  # None: no items past `prefix`
        self.min_items = 0
        self.unique = False  # uniqueItems
        # contains: at least `min_contains` items must also match it; an item counted as one is read
        # against allOf(its items schema, contains), per prefix position and for the rest (None: none
        # can be, e.g. pruned as endless)
        self.min_contains = 0
        self.prefix_found: tuple[Schema | None, ...] = ()
        self.items_found: Schema | None = None
        # maxContains: the count must be exact, so an uncounted item is read against allOf(its items
        # schema, not contains) (None: no maxContains)
        self.max_contains: int | None = None
        self.prefix_missed: tuple[Schema | None, ...] = ()
        self.items_missed: Schema | None = None
        self.starts: dict[int, ParserState] = {}  # per depth: a parser of one value of this schema
        self.max_items: int | None = None
        self.min_len = 0
        self.max_len: int | None = None
        self.regex: Regex | None = None
        self.minimum: float | None = None
        self.maximum: float | None = None
        self.excl_min = False
        self.excl_max = False
        self.multiple_of: Fraction | None = None
        # patternProperties: the patterns, and the value schema for each set of them (by index) that
        # can match one name together (a name matching several must satisfy all their schemas)
        self.pattern_props: tuple[Regex, ...] = ()
        self.pattern_sets: dict[frozenset[int], Schema] = {}
        self._first: CharSet | None = None
        self._alts: tuple[Schema, ...] | None = None
        self._names: frozenset[str] | None = None

    def alternatives(self) -> tuple[Schema, ...]:
        """The non-union schemas this one stands for (anyOf flattened)."""
        if self._alts is None:
            if self.options is None:
                self._alts = (self,)
            else:
                self._alts = ()  # an anyOf that reaches itself adds nothing new
                out: dict[Schema, None] = {}
                for opt in self.options:
                    out.update(dict.fromkeys(opt.alternatives()))
                self._alts = tuple(out)
        return self._alts

    def first_chars(self) -> CharSet:
        """Characters a value of this schema can start with."""
        if self._first is None:
            self._first = EMPTY  # guards against left recursion through anyOf
            acc = EMPTY
            for alt in self.alternatives():
                if alt.combo is not None:
                    acc = acc | alt.combo.first_chars()
                elif alt.literals is not None:
                    acc = acc | CharSet.of("".join(t[0] for t in alt.literals if t))
                else:
                    for t in alt.types:
                        acc = acc | _TYPE_FIRST[t]
            self._first = acc
        return self._first

    def reset(self) -> None:
        """Forget derived caches (after compilation rewrote unions into checked combinations)."""
        self._first = None
        self._alts = None
        self._names = None

    def children(self) -> tuple[Schema, ...]:
        """The nodes a value of this one may be checked against in part: union branches, checked parts,
        property values, items (prefix, counted or not toward contains, the rest), additional values."""
        kids: list[Schema | None] = [*(self.options or ())]
        if self.combo is not None:
            kids.extend(self.combo.parts)
        kids.extend(value for _, value in self.props)
        kids.extend(self.prefix)
        kids.extend(self.pattern_sets.values())
        kids.extend((self.additional, self.items, *self.prefix_found, self.items_found))
        kids.extend((*self.prefix_missed, self.items_missed))
        return tuple(k for k in kids if k is not None)

    def prop_names(self) -> frozenset[str]:
        if self._names is None:
            self._names = frozenset(name for name, _ in self.props)
        return self._names


def any_schema() -> Schema:
    """A schema every JSON value satisfies (json_object mode, `{}`, `true`)."""
    s = Schema()
    s.additional = s
    s.items = s
    return s


def check_depth(depth: int, limit: int, param: str) -> None:
    if depth > limit:
        raise GrammarError(f"schema nested deeper than {limit} levels", param=param)
