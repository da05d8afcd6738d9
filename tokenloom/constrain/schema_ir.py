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


class Probe:
    """Conditions on an earlier property P, decided once P's value is read (`schema_probes`, `json_probe`).

    Reading P's value gives *features*. For a scalar P: whether it satisfies each of `whole`. For an
    object P: which of `names` it holds, then whether the values of some of its properties satisfy their
    `checks` (True until read: an absent property satisfies its `properties` entry). Each atom the `if`s
    ask about is the conjunction of the features in its `terms`; the atoms' verdicts pick, through
    `cases`, the object node the rest of the object follows (`fallback`, the object's own node, for a
    vector the compiler ruled out). `starts` caches the sub-parsers' initial states per (property, depth,
    the property's schema).
    """

    __slots__ = ("cases", "checks", "fallback", "initial", "names", "starts", "terms", "value", "whole")

    def __init__(
        self,
        value: Schema,
        whole: tuple[Schema, ...],
        names: tuple[str, ...],
        checks: dict[str, tuple[tuple[int, Schema], ...]],
        terms: tuple[tuple[int, ...], ...],
        fallback: Schema,
    ) -> None:
        self.value = value  # P's own schema
        self.whole = whole
        self.names = names
        self.checks = checks
        self.terms = terms
        self.cases: dict[tuple[bool, ...], Schema] = {}
        self.fallback = fallback
        count = sum(len(c) for c in checks.values())
        self.initial: tuple[bool, ...] = (False,) * len(names) + (True,) * count
        self.starts: dict[tuple[str, int, Schema], tuple[ParserState, ...]] = {}

    def check_nodes(self) -> tuple[Schema, ...]:
        """The nodes values are checked against (a scalar P's, or the checks of an object P's properties)."""
        return (*self.whole, *(node for c in self.checks.values() for _, node in c))

    def parts(self) -> tuple[Schema, ...]:
        """The nodes it reads values against and the nodes it picks."""
        return (self.value, *self.check_nodes(), *self.cases.values())

    def pick(self, features: tuple[bool, ...]) -> Schema:
        verdicts = tuple(all(features[i] for i in term) for term in self.terms)
        return self.cases.get(verdicts, self.fallback)


class Carry:
    """What the object frame of an object P carries while P's value is read under a probe: the probe, the
    object frame P's value ends in (before the pick) and the features so far. Immutable; equal by value."""

    __slots__ = ("_hash", "after", "features", "probe")

    def __init__(self, probe: Probe, after: object, features: tuple[bool, ...]) -> None:
        self.probe = probe
        self.after = after  # json_objects.ObjFrame (a frame: this module knows none)
        self.features = features
        self._hash = 0

    def __hash__(self) -> int:
        h = self._hash
        if not h:
            h = self._hash = hash((id(self.probe), self.after, self.features)) or 1
        return h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Carry):
            return False
        return self.probe is other.probe and self.features == other.features and self.after == other.after

    def present(self, name: str) -> Carry:
        """After P's property `name` was named."""
        names = self.probe.names
        if name not in names:
            return self
        features = list(self.features)
        features[names.index(name)] = True
        return Carry(self.probe, self.after, tuple(features))

    def checked(self, slots: tuple[int, ...], verdicts: tuple[bool, ...]) -> Carry:
        """After a value whose checks fill the features `slots` gave `verdicts`."""
        features = list(self.features)
        for slot, verdict in zip(slots, verdicts, strict=True):
            features[slot] = verdict
        return Carry(self.probe, self.after, tuple(features))


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
        "name_musts",
        "names_pattern",
        "not_multiples",
        "options",
        "pattern_props",
        "pattern_sets",
        "prefix",
        "prefix_found",
        "prefix_missed",
        "probe",
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
        self.probe: Probe | None = None  # a property value whose checks pick the rest of its object
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
        self.not_multiples: tuple[Fraction, ...] = ()  # `not: {multipleOf: m}`: a number, a multiple of none
        # patternProperties: the patterns, and the value schema for each set of them (by index) that
        # can match one name together (a name matching several must satisfy all their schemas)
        self.pattern_props: tuple[Regex, ...] = ()
        self.pattern_sets: dict[frozenset[int], Schema] = {}
        # `not {propertyNames: {not: P}}` beside maxProperties: the patterns P some name must match, and
        # propertyNames' own pattern (name_musts.py: which names the slots left still allow)
        self.name_musts: tuple[str, ...] = ()
        self.names_pattern: str | None = None
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
        if self.probe is not None:
            kids.extend(self.probe.parts())
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
