"""Many if/then/else of an object decided by one earlier property: the `if`s ask only about property P,
the `then`s and `else`s constrain only a later property D.

popxf's eight conditionals ask about `metadata` (has `polynomial_names`? `polynomial_degree` 1..5?
`scale` an array?) and narrow `data`. Nested one in another they make 2^8 branches, and no single value
of P decides them all (what `schema_conditions.value_chain` needs). But properties come in schema order:
P's value is complete before D's name opens. So P's value is read beside one check per distinct schema
the `if`s ask of it (an *atom*), and their verdicts pick D's schema when D opens (`json_probe`).
`ProbePlan` says which atoms there are and which parts of D's schema each verdict vector selects.

A conditional the other way round (`if` about D, `then` about P, no `else`) is read by its contrapositive:
when P fails the `then`, D must fail the `if`. P and D must both be required (so P is always read and
"D fails the if" needs no case for D absent). Knows nothing of IR nodes or parsing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tokenloom.constrain.formats import ANNOTATIONS

PROBE = "_probe"  # the key of a flattened dict that holds its `ProbePlan`
Verdicts = tuple[bool, ...]  # one per atom: whether P's value satisfies it
Test = Callable[[Verdicts], bool]
MAX_ATOMS = 12  # each doubles the verdict vectors the compiler may have to rule out
MAX_PAIRS = 64  # (P, D) pairs tried per object

_TEST_KEYS = frozenset({"properties", "required", "type", "not", "anyOf", "allOf", "oneOf"})
_PART_KEYS = frozenset({"properties", "required", "type", "allOf", "if", "then", "else", "not"})


def _always(_v: Verdicts) -> bool:
    return True


def _atom_test(index: int) -> Test:
    return lambda v: v[index]


def _negated(test: Test) -> Test:
    return lambda v: not test(v)


def _both(a: Test, b: Test) -> Test:
    return lambda v: a(v) and b(v)


def _combined(kind: str, tests: list[Test]) -> Test:
    if kind == "anyOf":
        return lambda v: any(t(v) for t in tests)
    if kind == "oneOf":
        return lambda v: sum(t(v) for t in tests) == 1
    return lambda v: all(t(v) for t in tests)


@dataclass
class ProbePlan:
    """What the verdicts on P's value decide: the parts of D's schema that apply (each with its test)."""

    probe: str
    target: str
    atoms: list[Any] = field(default_factory=list)  # schemas of P's value, distinct
    parts: list[tuple[Test, Any]] = field(default_factory=list)  # (when it applies, a schema of D's value)

    def selected(self, verdicts: Verdicts) -> tuple[int, ...]:
        """The indexes of the parts that apply under `verdicts`."""
        return tuple(i for i, (test, _) in enumerate(self.parts) if test(verdicts))


class _Reader:
    """Reads `if`s as tests of P's value and `then`/`else` as parts of D's schema; None: not this form."""

    def __init__(self, plan: ProbePlan, inline: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self.plan = plan
        self.inline = inline  # $ref resolved into a plain dict
        self.keys: list[str] = []  # canonical text of each atom

    def _atom(self, schema: Any) -> int:
        key = json.dumps(schema, sort_keys=True, default=repr)
        if key not in self.keys:
            self.keys.append(key)
            self.plan.atoms.append(schema)
        return self.keys.index(key)

    def _plain(self, schema: Any, allowed: frozenset[str]) -> dict[str, Any] | None:
        """The dict itself ($ref inlined) when it uses only `allowed` keywords on an object."""
        if not isinstance(schema, dict):
            return None
        if "$ref" in schema:
            schema = self.inline(schema)
        if not isinstance(schema, dict) or set(schema) - ANNOTATIONS - allowed:
            return None
        if schema.get("type", "object") not in ("object", ["object"]):
            return None
        return dict(schema)

    def _names(self, schema: dict[str, Any], name: str) -> dict[str, Any] | None:
        """`properties` naming at most `name`, with `required` naming at most it too."""
        props = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(props, dict) or set(props) - {name}:
            return None
        if not isinstance(required, list) or set(map(str, required)) - {name}:
            return None
        return props

    def test(self, schema: Any) -> Test | None:
        """A test of P's value (P is required, so `required: [P]` always holds)."""
        if schema is True or schema == {}:
            return _always
        plain = self._plain(schema, _TEST_KEYS)
        if plain is None:
            return None
        props = self._names(plain, self.plan.probe)
        if props is None:
            return None
        tests: list[Test] = []
        if props:
            tests.append(_atom_test(self._atom(props[self.plan.probe])))
        if "not" in plain:
            inner = self.test(plain["not"])
            if inner is None:
                return None
            tests.append(_negated(inner))
        for kind in ("anyOf", "allOf", "oneOf"):
            if kind not in plain:
                continue
            subs = plain[kind]
            if not isinstance(subs, list) or not subs:
                return None
            read = [self.test(sub) for sub in subs]
            if any(t is None for t in read):
                return None
            tests.append(_combined(kind, [t for t in read if t is not None]))
        return _combined("allOf", tests)

    def parts(self, schema: Any, when: Test) -> bool:
        """Add the parts of D's schema that `schema` (a then/else) holds, under `when`; False: not so."""
        if schema is True or schema == {}:
            return True
        plain = self._plain(schema, _PART_KEYS)
        if plain is None:
            return False
        props = self._names(plain, self.plan.target)
        if props is None:
            return False
        if props:
            self.plan.parts.append((when, props[self.plan.target]))
        if "not" in plain:
            negated = self._plain(plain["not"], frozenset({"properties", "type"}))
            inner = self._names(negated, self.plan.target) if negated is not None else None
            if not inner:
                return False
            # D is required: not {properties: {D: Y}} says D fails Y
            self.plan.parts.append((when, {"not": inner[self.plan.target]}))
        subs = plain.get("allOf", [])
        if not isinstance(subs, list) or not all(self.parts(sub, when) for sub in subs):
            return False
        if "if" in plain:
            test = self.test(plain["if"])
            if test is None:
                return False
            if not self.parts(plain.get("then", True), _both(when, test)):
                return False
            if not self.parts(plain.get("else", True), _both(when, _negated(test))):
                return False
        return True

    def conditional(self, d: dict[str, Any]) -> bool:
        """One if/then/else: directly, or (`if` about D, `then` about P) by its contrapositive."""
        mark = len(self.keys)
        test = self.test(d["if"])
        if test is not None:
            return self.parts(d.get("then", True), test) and self.parts(d.get("else", True), _negated(test))
        del (
            self.keys[mark:],
            self.plan.atoms[mark:],
        )  # what a partial reading added would be checked for nothing
        if "else" in d:
            return False
        about_d = self._plain(d["if"], frozenset({"properties", "required", "type"}))
        props = self._names(about_d, self.plan.target) if about_d is not None else None
        then = self.test(d.get("then", True))
        if not props or then is None:
            return False
        # if D satisfies Y then P passes the test: so where P fails it, D fails Y
        self.plan.parts.append((_negated(then), {"not": props[self.plan.target]}))
        return True


def probe_plan(
    own: dict[str, Any],
    conditionals: list[dict[str, Any]],
    inline: Callable[[dict[str, Any]], dict[str, Any]],
) -> ProbePlan | None:
    """The plan for `conditionals` (dicts holding `if`) of the object schema `own`, or None when no pair of
    its required properties P before D carries them all."""
    props = own.get("properties")
    required = own.get("required")
    if not isinstance(props, dict) or not isinstance(required, list):
        return None
    names = [n for n in props if n in required]
    pairs = [(p, d) for i, p in enumerate(names) for d in names[i + 1 :]][:MAX_PAIRS]
    for probe, target in pairs:
        plan = ProbePlan(probe, target)
        reader = _Reader(plan, inline)
        read = all(reader.conditional(d) for d in conditionals)
        if read and plan.parts and 0 < len(plan.atoms) <= MAX_ATOMS:
            return plan
    return None


@dataclass
class Features:
    """The atoms as conjunctions of features of an object P: property names it holds, and whether the
    values of some of its properties satisfy a schema (an absent one does). Features are numbered names
    first, then checks."""

    names: list[str] = field(default_factory=list)
    checks: list[tuple[str, Any]] = field(default_factory=list)  # (P's property, schema of its value)
    terms: list[tuple[int, ...]] = field(default_factory=list)  # per atom, the features it needs
    keys: list[tuple[str, str]] = field(default_factory=list)  # each check as (name, canonical text)

    def _name(self, name: str) -> int:
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)

    def _check(self, name: str, schema: Any) -> int:
        key = (name, json.dumps(schema, sort_keys=True, default=repr))
        if key not in self.keys:
            self.checks.append((name, schema))
            self.keys.append(key)
        return self.keys.index(key)


def object_features(atoms: list[Any], inline: Callable[[dict[str, Any]], dict[str, Any]]) -> Features | None:
    """The atoms as `Features`, when each only names properties of an object (`type`, `properties`,
    `required`): then P's value is read as usual and only the values checked are read beside checks."""
    out = Features()
    read: list[tuple[list[int], list[int]]] = []
    for atom in atoms:
        if isinstance(atom, dict) and "$ref" in atom:
            atom = inline(atom)
        if not isinstance(atom, dict) or set(atom) - ANNOTATIONS - {"type", "properties", "required"}:
            return None
        if atom.get("type", "object") not in ("object", ["object"]):
            return None
        props, required = atom.get("properties", {}), atom.get("required", [])
        if not isinstance(props, dict) or not isinstance(required, list):
            return None
        if not all(isinstance(n, str) for n in required):
            return None
        names = [out._name(n) for n in required]
        checks = [out._check(n, sub) for n, sub in props.items() if sub is not True and sub != {}]
        read.append((names, checks))
    out.terms = [(*names, *(len(out.names) + c for c in checks)) for names, checks in read]
    return out
