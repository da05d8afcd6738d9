"""Keywords checked beyond the value's shape: multipleOf, patternProperties, oneOf, not, uniqueItems,
if/then/else, enums under sibling keywords, format "regex". Character level, compact and pretty."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.unit.constrain.chars import initial, schema_accepts
from tokenloom.constrain.api import build
from tokenloom.constrain.json_schema import SchemaCompiler
from tokenloom.constrain.parser import feed_text
from tokenloom.errors import GrammarError


def _both(schema: Any, value: Any) -> bool:
    """Accepted as compact and as pretty JSON (the two must agree)."""
    compact = schema_accepts(schema, json.dumps(value, separators=(",", ":")))
    pretty = schema_accepts(schema, json.dumps(value, indent=2))
    assert compact == pretty, value
    return compact


def _dead_at(schema: Any, text: str) -> int | None:
    """Index of the first character the parser refuses (None if all are taken)."""
    st = initial({"json_schema": schema})
    for i, c in enumerate(text):
        nxt = st.add_char(c)
        if nxt is None:
            return i
        st = nxt
    return None


def test_multiple_of() -> None:
    cents = {"type": "number", "multipleOf": 0.01}
    assert _both(cents, 129.99) and _both(cents, 3) and _both(cents, -0.07)
    assert not _both(cents, 129.991)
    assert _dead_at(cents, "129.991") == 6  # refused at the digit, not at the end
    thirds = {"type": "integer", "multipleOf": 3}
    assert _both(thirds, 0) and _both(thirds, 12) and _both(thirds, -9)
    assert not _both(thirds, 10)
    quarters = {"type": "number", "multipleOf": 0.25, "minimum": 0, "maximum": 1}
    assert _both(quarters, 0.75) and _both(quarters, 1)
    assert _dead_at(quarters, "0.3") == 2  # no multiple of 0.25 starts with 0.3
    assert not _both(quarters, 1.25)


def test_pattern_properties() -> None:
    s = {
        "type": "object",
        "properties": {"x-id": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "integer"}, "id$": {"minimum": 10}},
        "additionalProperties": False,
    }
    assert _both(s, {"x-id": 12, "x-a": 1, "bid": 10})
    assert not _both(s, {"y": 1})  # no pattern matches and no additional properties
    assert not _both(s, {"x-a": "s"})
    assert not _both(s, {"x-id": 3})  # declared and matching "id$": both schemas apply
    assert not _both(s, {"x-aid": 3})  # matches both patterns: both schemas apply
    assert _both(s, {"x-aid": 30})
    assert schema_accepts(s, '{"x\\u002da":1}')  # the pattern sees the decoded name
    open_ = {"type": "object", "patternProperties": {"^n_": {"type": "number"}}}
    assert _both(open_, {"n_a": 1, "other": "x"})
    assert not _both(open_, {"n_a": "x"})


def test_one_of_exactly_one() -> None:
    area = {
        "type": "object",
        "properties": {
            "radius": {"type": "number"},
            "length": {"type": "number"},
            "width": {"type": "number"},
        },
        "oneOf": [{"required": ["radius"]}, {"required": ["length", "width"]}],
    }
    assert _both(area, {"radius": 1})
    assert _both(area, {"length": 1, "width": 2})
    assert not _both(area, {"radius": 1, "length": 1, "width": 2})
    assert not _both(area, {})
    nums = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert _both(nums, 1.5)
    assert not _both(nums, 2)
    strings = {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^a"}]}
    assert _both(strings, "bcd") and _both(strings, "abcd")
    assert not _both(strings, "ab")


def test_disjoint_one_of_stays_a_plain_union() -> None:
    tagged = {
        "oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {
                "type": "object",
                "properties": {"kind": {"const": "b"}, "n": {"type": "integer"}},
                "required": ["kind"],
            },
            {"type": "string"},
        ]
    }
    root = SchemaCompiler(tagged).compile()
    assert root.combo is None and root.options is not None
    assert _both(tagged, {"kind": "b", "n": 1}) and not _both(tagged, {"kind": "c"})


def test_not() -> None:
    s = {"type": "string", "not": {"enum": ["none", "null"]}}
    assert _both(s, "nonempty") and _both(s, "non")
    assert not _both(s, "none")
    obj = {"type": "object", "not": {"required": ["secret"]}}
    assert _both(obj, {"public": 1})
    assert not _both(obj, {"secret": 1})
    assert build({"json_schema": s})[1] == frozenset()


def test_unique_items() -> None:
    s = {"type": "array", "items": {}, "uniqueItems": True}
    assert _both(s, ["a", "b", 1, 2.5, {"k": 1, "j": 2}, [1], None, True])
    for dup in (["a", "a"], [1, 1.0], [{"k": 1, "j": 2}, {"j": 2, "k": 1}], [[1, 2], [1, 2]], [None, None]):
        assert not _both(s, dup), dup
    assert not schema_accepts(s, '["a","\\u0061"]')
    assert _dead_at(s, '["ab","ab"]') == 9  # the closing quote of the repeat
    assert _dead_at(s, "[12, 12]") == 7  # the "]" after the repeated number
    assert _dead_at(s, "[12, 123]") is None
    bounded = {
        "type": "array",
        "items": {"type": "string"},
        "uniqueItems": True,
        "minItems": 2,
        "maxItems": 2,
    }
    assert _both(bounded, ["x", "y"])
    assert not _both(bounded, ["x"]) and not _both(bounded, ["x", "y", "z"])


def test_if_then_else() -> None:
    s = {
        "type": "object",
        "properties": {"type": {"type": "string"}, "queries": {"type": "array"}, "n": {"type": "integer"}},
        "if": {"properties": {"type": {"const": "multi"}}},
        "then": {"required": ["queries"]},
        "else": {"required": ["n"]},
    }
    assert _both(s, {"type": "multi", "queries": []})
    assert _both(s, {"type": "single", "n": 1})
    assert not _both(s, {"type": "multi"})
    assert not _both(s, {"type": "single", "queries": []})


def test_enum_values_meet_sibling_keywords() -> None:
    s = {"type": "string", "enum": ["atomic", "final"], "pattern": "final"}
    assert _both(s, "final") and not _both(s, "atomic")
    both = {"allOf": [{"enum": ["a", "b"]}, {"const": "b"}]}
    assert _both(both, "b") and not _both(both, "a")
    with pytest.raises(Exception, match="admits no value"):
        build({"json_schema": {"allOf": [{"const": "a"}, {"const": "b"}]}})


def test_format_regex_and_unsatisfiable_required() -> None:
    r = {"type": "string", "format": "regex"}
    for good in ["^value1|value2$", "a(b|c)*d", "[]]", "(?P<x>a)"]:
        assert _both(r, good), good
    for bad in ["[", "*a", "a)", "(", "a**"]:
        assert not _both(r, bad), bad
    s = {
        "anyOf": [
            {"type": "object", "required": ["term"], "additionalProperties": False},
            {"type": "object", "properties": {"label": {"type": "string"}}, "additionalProperties": False},
        ]
    }
    assert _both(s, {"label": "x"})
    assert not _both(s, {"term": "x"})
    assert feed_text(initial({"json_schema": s}), '{"term"') is None


def test_object_and_array_enum_values_take_any_whitespace() -> None:
    s = {"enum": ["red", {"a": 1, "b": [1, 2]}, [1, {"x": None}]]}
    assert _both(s, "red") and _both(s, {"a": 1, "b": [1, 2]}) and _both(s, [1, {"x": None}])
    for bad in ({"a": 1}, {"a": 1, "b": [1, 2], "c": 0}, [1], [], "blue"):
        assert not _both(s, bad), bad
    assert not schema_accepts(s, '{"b":[1,2],"a":1}')  # keys in the value's order


def test_property_names() -> None:
    s = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "Bad": {}},
        "propertyNames": {"pattern": "^[a-z]+$"},
        "additionalProperties": {"type": "string"},
        "required": ["zz"],
    }
    assert _both(s, {"id": 1, "zz": "y"}) and _both(s, {"zz": "y", "x": "q"})
    for bad in ({"zz": 1}, {"X": "y", "zz": "a"}, {"Bad": 1, "zz": "a"}, {"x": 1, "zz": "a"}):
        assert not _both(s, bad), bad
    assert build({"json_schema": s})[1] == frozenset()
    short = {"type": "object", "propertyNames": {"maxLength": 3}}
    assert _both(short, {"abc": 1}) and not _both(short, {"abcd": 1})
    listed = {"type": "object", "propertyNames": {"enum": ["a.b", "c"]}}
    assert _both(listed, {"a.b": 1, "c": 2}) and not _both(listed, {"axb": 1})


def test_property_names_beside_pattern_properties() -> None:
    """Each pattern also asks for the names' pattern, which takes the other names (before, propertyNames
    beside patternProperties was named unenforced and any name passed: notnames7's `"a5b7 9"`)."""
    s = {
        "type": "object",
        "properties": {"a1": {"type": "integer"}, "Z": {}},
        "patternProperties": {"9": {"type": "string"}, "^b": {"type": "boolean"}},
        "propertyNames": {"pattern": "^(\\w\\d)+$"},
    }
    assert build({"json_schema": s})[1] == frozenset()
    validator = jsonschema.Draft7Validator(s)
    for value in (
        {"a1": 1},
        {"a9": "x"},
        {"b1": True},
        {"b9": "x"},  # both patterns: a string and a boolean at once, so no value
        {"b9": True},
        {"c2": None},
        {"a9 ": "x"},
        {"Z": 1},
        {"a1": "x"},
        {"x": 2},
        {"c2": [], "b3": False, "a1": 4},
    ):
        assert _both(s, value) is validator.is_valid(value), value
    closed = {**s, "additionalProperties": False}  # the other names take no value: the patterns alone
    assert build({"json_schema": closed})[1] == frozenset()
    closed_validator = jsonschema.Draft7Validator(closed)
    for value in ({"a9": "x"}, {"c2": None}, {"a1": 1, "b2": True}, {"a9 ": "x"}):
        assert _both(closed, value) is closed_validator.is_valid(value), value
    typed = {**s, "additionalProperties": {"type": "integer"}}  # would also judge the patterns' names
    assert build({"json_schema": typed})[1] == frozenset({"propertyNames"})


def test_property_names_a_pattern_refuses() -> None:
    """`propertyNames: {"not": ...}` (through a $ref, as popxf writes it): the names the negated pattern
    matches are refused, others keep their schemas; a search pattern's match refuses a name at once."""
    s = {
        "type": "object",
        "properties": {"(x)": {"type": "integer"}, "ok": {"type": "string"}},
        "propertyNames": {"not": {"$ref": "#/definitions/tuple"}},
        "additionalProperties": {"type": "integer"},
        "definitions": {"tuple": {"type": "string", "pattern": "^\\([a-z]*\\)$"}},
    }
    assert build({"json_schema": s})[1] == frozenset()
    assert _both(s, {"ok": "a", "(x": 1, "(ab) ": 2}) and _both(s, {})
    for bad in ({"(x)": 1}, {"ok": "a", "(ab)": 1}, {"ok": 1}):
        assert not _both(s, bad), bad
    assert _dead_at(s, '{"(ab)"') == 6  # the closing quote of a refused name
    search = {"type": "object", "propertyNames": {"not": {"pattern": "foo"}}}
    assert _dead_at(search, '{"xfoo') == 5  # no name holding "foo" can be finished: refused at once
    assert _both(search, {"fo": 1, "xfox": 2}) and not _both(search, {"foo": 1})
    required = {"type": "object", "required": ["(a)"], "propertyNames": {"not": {"pattern": "^\\(a\\)$"}}}
    with pytest.raises(GrammarError, match="admits no value"):  # the one object would need a refused name
        build({"json_schema": required})
    false_pattern = {"type": "object", "patternProperties": {"^x-": False}}
    assert _both(false_pattern, {"y": 1}) and not _both(false_pattern, {"x-y": 1})
    assert _dead_at(false_pattern, '{"x-') == 3  # the char that makes the name match for good


def test_dependencies() -> None:
    s = {
        "type": "object",
        "properties": {"card": {"type": "string"}, "billing": {"type": "string"}, "name": {"type": "string"}},
        "dependentRequired": {"card": ["billing"]},
        "dependentSchemas": {"name": {"properties": {"billing": {"maxLength": 2}}}},
    }
    assert _both(s, {"card": "1", "billing": "x"}) and _both(s, {}) and _both(s, {"billing": "xyz"})
    assert _both(s, {"billing": "xy", "name": "n"})
    assert not _both(s, {"card": "1"})
    assert not _both(s, {"billing": "xyz", "name": "n"})
    old = {"type": "object", "properties": {"a": {}, "b": {}}, "dependencies": {"a": ["b"]}}
    assert _both(old, {"a": 1, "b": 2}) and not _both(old, {"a": 1})


def _narrowing(order: list[str]) -> dict[str, Any]:
    """MongoDB Atlas's index fields' shape: past MAX_DEPENDENCIES (3) dependencies, each name only
    narrowing "type" to some values."""
    only = {
        "analyzer": ["string", "autocomplete"],
        "maxGrams": ["autocomplete"],
        "minGrams": ["autocomplete"],
    }
    only |= {"dynamic": ["document"], "norms": ["string"], "indexShapes": ["geo"], "seven": [7]}
    return {
        "type": "object",
        "properties": {name: {"type": ["string", "integer"]} if name == "type" else {} for name in order},
        "dependencies": {name: {"properties": {"type": {"enum": values}}} for name, values in only.items()},
    }


_NAMES = ["type", "analyzer", "norms", "maxGrams", "dynamic", "indexShapes", "seven"]


@pytest.mark.parametrize("order", [_NAMES, _NAMES[1:] + _NAMES[:1]])
def test_many_dependencies_narrowing_one_property_are_enforced(order: list[str]) -> None:
    """Enforced as one branch per value of the narrowed property (two per dependency would be 2^7
    branches): before, past three dependencies they were all dropped and named unenforced."""
    s = _narrowing(order)
    assert build({"json_schema": s})[1] == frozenset()
    for good in (
        {"type": "string", "analyzer": "a", "norms": "omit"},
        {"type": "autocomplete", "analyzer": "a", "maxGrams": 3},
        {"type": "geo", "indexShapes": True},
        {"type": 7, "seven": 1},
        {"type": "other"},
        {"analyzer": "a", "dynamic": True, "seven": 0},  # "type" absent: each narrowing holds
        {},
    ):
        assert _both(s, {k: good[k] for k in order if k in good}), good
    for bad in (
        {"type": "geo", "norms": "omit"},
        {"type": "string", "maxGrams": 3},
        {"type": "other", "analyzer": "a"},
        {"type": "7", "seven": 1},
        {"type": "document", "indexShapes": False},
    ):
        assert not _both(s, {k: bad[k] for k in order if k in bad}), bad
