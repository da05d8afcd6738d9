"""The object keywords of the schema compiler: properties, required, additionalProperties,
patternProperties and propertyNames (as patterns), min/maxProperties.

A mixin of `json_schema.SchemaCompiler`, which provides the node-making methods stubbed here.
Knows nothing of frames or vocabularies.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from tokenloom.constrain.formats import ANNOTATIONS, names_pattern
from tokenloom.constrain.name_musts import MAX_MUSTS, meeting_all, names_bounded
from tokenloom.constrain.negation import SOME_NAMES
from tokenloom.constrain.regex import Regex, shared_regex
from tokenloom.constrain.schema_ir import Schema
from tokenloom.constrain.schema_merge import both_patterns
from tokenloom.errors import GrammarError

_LOOKAROUND = re.compile(r"\(\?<?[=!]")
# A lower bound (minItems, minLength, minProperties) is counted char by char or item by item up to it;
# an upper bound far away changes nothing until the count nears it (`for_horizon`, capped counts), so
# only its magnitude is checked.
MAX_COUNT = 100_000
MAX_UPPER_BOUND = 2**31 - 1  # maxItems/maxLength/maxProperties
ANY_ORDER = "x-tokenloom-any-order"  # true: properties in any order (default: the schema's order)
MAX_REF_HOPS = 16  # plain `$ref`s followed to the schema a propertyNames `not` negates


class ObjectKeywords:
    """Object keywords; the stubs below are the compiler methods they use."""

    def node(self, schema: Any, param: str, depth: int) -> Schema:
        raise NotImplementedError

    def all_of(self, parts: list[Any]) -> dict[str, Any]:
        raise NotImplementedError

    def ignore(self, node: Schema, keyword: str) -> None:
        raise NotImplementedError

    def resolve(self, ref: Any, param: str) -> Any:
        raise NotImplementedError

    keep: list[Any]
    any_order: Any  # the root's "x-tokenloom-any-order", the default of every object

    def fill_object(self, node: Schema, s: dict[str, Any], param: str, depth: int) -> None:
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise GrammarError("properties must be an object", param=f"{param}.properties")
        req = s.get("required", [])
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            raise GrammarError("required must be a list of names", param=f"{param}.required")
        s = self.one_name_meets_all(s, param)
        if "propertyNames" in s:
            s, props, req = self.property_names(node, s, props, req, param)
        pats = self.fill_patterns(node, s, param, depth)
        props = dict(props)
        names = s.get("_names")  # the pattern that stands for propertyNames: not a schema for declared names
        for name in list(props) + [r for r in req if r not in props]:
            # a declared (or required) name matching patterns must also satisfy their schemas
            hits = [
                sub
                for regex, sub in pats
                if not (name in props and regex.pattern == names) and _name_matches(regex, name)
            ]
            if hits:
                props[name] = self.all_of([props.get(name, True), *hits])
        node.props = tuple((k, self.node(v, f"{param}.properties.{k}", depth + 1)) for k, v in props.items())
        node.required = frozenset(req)
        missing = [r for r in req if r not in props]
        extra = s.get("additionalProperties", True)
        if missing and extra is False:  # no object fits: keep the other types (an anyOf may need them)
            node.types = node.types - {"object"}
            return
        if missing:  # required keys without a declared schema: declare them (any value)
            node.props += tuple(
                (r, self.node(extra, f"{param}.additionalProperties", depth + 1)) for r in missing
            )
        node.additional = (
            None if extra is False else self.node(extra, f"{param}.additionalProperties", depth + 1)
        )
        node.min_props = count(s, "minProperties", param)
        node.max_props = count(s, "maxProperties", param, None)
        musts = s.get(SOME_NAMES)
        # each tracked name is kept whole while it is written: short names only (`names_bounded`)
        if (
            isinstance(musts, list)
            and node.max_props is not None
            and 0 < len(musts) <= MAX_MUSTS
            and names_bounded(names)
        ):
            node.name_musts = tuple(dict.fromkeys(musts))
            node.names_pattern = names
        any_order = s.get(ANY_ORDER, self.any_order)
        if not isinstance(any_order, bool):
            raise GrammarError(f"{ANY_ORDER} must be true or false", param=f"{param}.{ANY_ORDER}")
        node.any_order = any_order

    def one_name_meets_all(self, s: dict[str, Any], param: str) -> dict[str, Any]:
        """maxProperties 1 beside names the object must hold (name_musts.py): its one name must match every
        must pattern, so they join propertyNames' pattern as look-aheads (and the object needs a name)."""
        musts = s.get(SOME_NAMES)
        if not isinstance(musts, list) or not musts or count(s, "maxProperties", param, None) != 1:
            return s
        names = s.get("propertyNames", True)
        pattern = None if names is True else names_pattern(names)
        if names is not True and pattern is None:
            return s  # propertyNames says more than one pattern: the musts stay for the `not` to check
        joined = meeting_all(pattern, list(dict.fromkeys(musts)))
        if joined is None:
            return s
        out = {k: v for k, v in s.items() if k != SOME_NAMES}
        out["propertyNames"] = {"pattern": joined[0]}
        out["minProperties"] = max(1, count(s, "minProperties", param))
        self.keep.append(out)
        return out

    def property_names(
        self, node: Schema, s: dict[str, Any], props: dict[str, Any], req: list[str], param: str
    ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        """propertyNames as patternProperties: declared names it refuses are dropped (a required one
        leaves no object), other names must match it and take the additionalProperties schema."""
        pattern = names_pattern(s["propertyNames"])
        if s["propertyNames"] is True:
            return s, props, req
        refused = self.refused_names(s["propertyNames"], param)
        if refused is not None:
            return self.refuse_names(node, s, props, req, refused, param)
        pp = s.get("patternProperties") or {}
        extra = s.get("additionalProperties", True)
        # beside patternProperties: each pattern also asks for the names' pattern, and the names' pattern
        # takes the other names; exact where those others may hold any value or none, at most 3 in all
        if pattern is None or (
            pp and (not isinstance(pp, dict) or extra not in (True, {}, False) or len(pp) > 2)
        ):
            self.ignore(node, "propertyNames")
            return s, props, req
        regex = self.regex(node, pattern, "propertyNames", f"{param}.propertyNames")
        kept = {k: v for k, v in props.items() if _name_matches(regex, k)}
        if any(r not in kept and not _name_matches(regex, r) for r in req):
            kept, req = {}, []
            node.types = node.types - {"object"}
        both = {both_patterns(own, pattern): sub for own, sub in pp.items()}
        if extra is not False:
            both[pattern] = extra
        s = {**s, "patternProperties": both, "additionalProperties": False, "_names": pattern}
        self.keep.append(s)
        return s, kept, req

    def refused_names(self, names: Any, param: str) -> str | None:
        """The pattern of `propertyNames: {"not": S}` when S (through plain `$ref`s) is one kind of
        string check (`names_pattern`); None otherwise."""
        if not isinstance(names, dict) or set(names) - ANNOTATIONS != {"not"}:
            return None
        negated = names["not"]
        for _ in range(MAX_REF_HOPS):
            if not isinstance(negated, dict) or set(negated) - ANNOTATIONS != {"$ref"}:
                break
            negated = self.resolve(negated["$ref"], f"{param}.propertyNames.not.$ref")
        return names_pattern(negated)

    def refuse_names(
        self, node: Schema, s: dict[str, Any], props: dict[str, Any], req: list[str], pattern: str, param: str
    ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        """propertyNames `not P` as patternProperties {P: false}: a name P matches takes no value, so
        it is never written (json_objects: refusing patterns); declared names P matches are dropped
        (a required one leaves no object). Kept unenforced where that would pass 3 patterns, or
        where P had look-arounds dropped (its superset would refuse names the schema allows)."""
        regex = self.regex(node, pattern, "propertyNames", f"{param}.propertyNames")
        pp = s.get("patternProperties") or {}
        if regex.lenient or not isinstance(pp, dict) or len(pp) >= 3:
            self.ignore(node, "propertyNames")
            return s, props, req
        kept = {k: v for k, v in props.items() if not _name_matches(regex, k)}
        if any(_name_matches(regex, r) for r in req):
            kept, req = {}, []
            node.types = node.types - {"object"}
        s = {**s, "patternProperties": {**pp, pattern: False}}
        self.keep.append(s)
        return s, kept, req

    def fill_patterns(
        self, node: Schema, s: dict[str, Any], param: str, depth: int
    ) -> list[tuple[Regex, Any]]:
        """patternProperties: one regex per pattern, and a value schema per set of patterns that may
        match one name together (all sets up to 3 patterns; beyond, the lowest-numbered match wins)."""
        pp = s.get("patternProperties") or {}
        if not isinstance(pp, dict):
            raise GrammarError("patternProperties must be an object", param=f"{param}.patternProperties")
        pats: list[tuple[Regex, Any]] = []
        for i, (pattern, sub) in enumerate(pp.items()):
            regex = self.regex(node, pattern, "patternProperties", f"{param}.patternProperties[{i}]")
            pats.append((regex, sub))
        node.pattern_props = tuple(r for r, _ in pats)
        where = f"{param}.patternProperties"
        for i, (_, sub) in enumerate(pats):
            node.pattern_sets[frozenset((i,))] = self.node(sub, where, depth + 1)
        if len(pats) > 3:
            self.ignore(node, "patternProperties")  # overlapping matches use the first schema only
            return pats
        for size in (2, 3):
            for combo in itertools.combinations(range(len(pats)), size):
                merged = self.all_of([pats[i][1] for i in combo])
                node.pattern_sets[frozenset(combo)] = self.node(merged, where, depth + 1)
        return pats

    def regex(self, node: Schema, pattern: str, keyword: str, param: str) -> Regex:
        """A `pattern`-style regex; its look-arounds are dropped and reported rather than refused."""
        try:
            return shared_regex(pattern, search=True)
        except GrammarError as e:
            if not _LOOKAROUND.search(pattern):
                raise GrammarError(e.message, param=param) from None
        try:
            regex = shared_regex(pattern, search=True, lenient=True)
        except GrammarError as e:
            raise GrammarError(e.message, param=param) from None
        self.ignore(node, keyword)
        return regex


def _name_matches(regex: Regex, name: str) -> bool:
    """Whether a declared property name matches a pattern (Python `re` when look-arounds were dropped)."""
    if regex.lenient:
        try:
            return re.search(regex.pattern, name) is not None
        except re.error:
            pass
    return regex.fullmatch(name)


def count(s: dict[str, Any], key: str, param: str, default: int | None = 0) -> Any:
    """A non-negative count keyword (minItems, maxLength, ...) within MAX_COUNT (a max*: MAX_UPPER_BOUND)."""
    v = s.get(key, default)
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise GrammarError(f"{key} must be a non-negative integer", param=f"{param}.{key}")
    limit = MAX_UPPER_BOUND if key.startswith("max") else MAX_COUNT
    if v > limit:
        raise GrammarError(f"{key} {v} exceeds the limit of {limit}", param=f"{param}.{key}")
    return v
