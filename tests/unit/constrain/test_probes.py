"""Conditions on an earlier property (schema_probes.py, json_probe.py): many if/then/else whose `if`s ask
about one property's value (not only which constant it is) and whose `then`/`else` narrow a later one,
held to what the `jsonschema` package says, compact and pretty, in schema order."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.unit.constrain.chars import schema_accepts
from tokenloom.constrain.api import build, spec_of
from tokenloom.constrain.order import schema_order

HARD_SCHEMAS = Path(__file__).parents[3] / "benchmarks" / "data" / "hard_schemas.jsonl"

# Three conditionals on `meta` (one asks about a constant inside it, one about a name in it, one read by
# its contrapositive: `data` holding "z" needs meta.kind "z"), each narrowing `data`.
PROBED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "meta": {"type": "object", "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}},
        "data": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "required": ["meta", "data"],
    "allOf": [
        {
            "if": {"properties": {"meta": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]}}},
            "then": {"properties": {"data": {"required": ["x"]}}},
        },
        {
            "if": {"properties": {"meta": {"required": ["n"]}}},
            "then": {"properties": {"data": {"maxProperties": 1}}},
            "else": {"properties": {"data": {"minProperties": 2}}},
        },
        {
            "if": {"properties": {"data": {"required": ["z"]}}},
            "then": {"properties": {"meta": {"properties": {"kind": {"const": "z"}}, "required": ["kind"]}}},
        },
    ],
}

# The probed value is a number: it may go on after a digit, so the object's chars come beside its own.
PROBED_NUMBER: dict[str, Any] = {
    "type": "object",
    "properties": {"meta": {"type": "integer"}, "data": {"type": "string"}},
    "required": ["meta", "data"],
    "allOf": [
        {"if": {"properties": {"meta": {"minimum": 10}}}, "then": {"properties": {"data": {"maxLength": 2}}}},
        {
            "if": {"properties": {"meta": {"multipleOf": 2}}},
            "then": {"properties": {"data": {"pattern": "^a"}}},
        },
        {"if": {"properties": {"meta": {"maximum": 0}}}, "then": {"properties": {"data": {"minLength": 3}}}},
    ],
}

INSTANCES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (PROBED, {"meta": {"kind": "a", "n": 1}, "data": {"x": 1}}),
    (PROBED, {"meta": {"kind": "a"}, "data": {"x": 1, "y": 2}}),
    (PROBED, {"meta": {"kind": "a"}, "data": {"y": 1, "w": 2}}),  # no "x"
    (PROBED, {"meta": {"kind": "b", "n": 1}, "data": {"x": 1, "y": 2}}),  # n: at most one
    (PROBED, {"meta": {"kind": "b"}, "data": {"x": 1}}),  # no n: at least two
    (PROBED, {"meta": {"kind": "z"}, "data": {"z": 1, "y": 2}}),
    (PROBED, {"meta": {"kind": "b"}, "data": {"z": 1, "y": 2}}),  # "z" needs kind "z"
    (PROBED, {"meta": {}, "data": {"z": 1, "y": 2}}),
    (PROBED, {"meta": {}, "data": {"q": 1, "y": 2}}),
    (PROBED_NUMBER, {"meta": 12, "data": "ab"}),
    (PROBED_NUMBER, {"meta": 12, "data": "abc"}),  # >= 10: at most 2 chars
    (PROBED_NUMBER, {"meta": 11, "data": "xy"}),
    (PROBED_NUMBER, {"meta": 4, "data": "xyz"}),  # even: starts with "a"
    (PROBED_NUMBER, {"meta": -3, "data": "xy"}),  # <= 0: at least 3 chars
    (PROBED_NUMBER, {"meta": -3, "data": "xyz"}),
    (PROBED_NUMBER, {"meta": 0, "data": "abc"}),
]


def _ours(schema: dict[str, Any], value: Any) -> bool:
    """Accepted in schema order, compact and pretty (the two must agree)."""
    ordered = schema_order(value, schema)
    compact = schema_accepts(schema, json.dumps(ordered, separators=(",", ":")))
    pretty = schema_accepts(schema, json.dumps(ordered, indent=2))
    assert compact == pretty, value
    return compact


@pytest.mark.parametrize(("schema", "value"), INSTANCES)
def test_conditions_on_an_earlier_property_agree_with_jsonschema(schema: dict[str, Any], value: Any) -> None:
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" not in unenforced
    assert _ours(schema, value) is jsonschema.Draft7Validator(schema).is_valid(value)


def test_both_verdicts_occur_in_the_instances() -> None:
    """The instances above test something: each schema has valid and invalid ones."""
    for schema in (PROBED, PROBED_NUMBER):
        verdicts = {jsonschema.Draft7Validator(schema).is_valid(v) for s, v in INSTANCES if s is schema}
        assert verdicts == {True, False}


def _popxf() -> dict[str, Any]:
    for line in HARD_SCHEMAS.read_text().splitlines():
        entry = json.loads(line)
        if entry["id"].startswith("schemastore/popxf"):
            return entry  # type: ignore[no-any-return]
    raise AssertionError("popxf is no longer in the hard set")


def _with(
    base: dict[str, Any], meta: dict[str, Any], data: dict[str, Any], drop: tuple[str, ...] = ()
) -> Any:
    value = copy.deepcopy(base)
    value["metadata"].update(meta)
    value["data"].update(data)
    for name in drop:
        value["data"].pop(name)
    return value


def test_popxf_conditionals_are_enforced() -> None:
    """popxf's eight conditionals on `metadata` (polynomial names, degree 1-5, scale an array), one read by
    its contrapositive: each case below agrees with jsonschema, where all of them were let through."""
    entry = _popxf()
    schema = entry["schema"]
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" not in unenforced
    base = entry["tests"][0]["data"]
    central = base["data"]["observable_central"]
    expressions = {"observable_expressions": [{"variables": {"a": "p"}, "expression": "a"}]}
    names = {"polynomial_names": ["p"], **expressions}
    cases = [
        base,
        _with(base, {"polynomial_degree": 2}, {}),
        _with(base, {"polynomial_degree": 1}, {}),  # degree 1 with keys of degree 2
        _with(base, names, {}),  # names without polynomial_central
        _with(base, {}, {"polynomial_central": central}),  # polynomial_central without names
        _with(base, names, {"polynomial_central": central}),
        _with(  # names and an array scale: no observable_central
            base, {**names, "scale": [4.8, 5.0]}, {"polynomial_central": central}
        ),
        _with(
            base,
            {**names, "scale": [4.8, 5.0], "polynomial_degree": 1},
            {
                "polynomial_central": {"('', 'R')": [1.0], "('C10_bdmumu',)": [2.0]},
                "observable_uncertainties": {"total": [0.1]},
            },
            drop=("observable_central",),
        ),
    ]
    verdicts = [jsonschema.Draft7Validator(schema).is_valid(v) for v in cases]
    assert verdicts.count(True) >= 3 and verdicts.count(False) >= 4
    for value, valid in zip(cases, verdicts, strict=True):
        ordered = schema_order(value, schema)
        assert schema_accepts(schema, json.dumps(ordered, separators=(",", ":"))) is valid, value


def test_any_order_leaves_them_named_unenforced() -> None:
    """In any order the later property may come first, before the verdicts: the conditions are named
    (strict refuses them), and values are still accepted in any order."""
    schema = {**PROBED, "x-tokenloom-any-order": True}
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" in unenforced
    assert schema_accepts(schema, '{"data": {"x": 1}, "meta": {"kind": "a", "n": 1}}')


def test_a_check_that_ignores_a_keyword_leaves_them_named_unenforced() -> None:
    """A check with a look-behind (dropped, so it accepts more) could pick the wrong case: P is then read
    alone and D as its own schema says, and `if` is named."""
    schema = copy.deepcopy(PROBED)
    schema["allOf"][0]["if"]["properties"]["meta"]["properties"]["kind"] = {"pattern": "(?<!a)b"}
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" in unenforced
    assert schema_accepts(schema, '{"meta": {"kind": "b"}, "data": {"y": 1, "w": 2}}')


def test_the_later_property_must_come_later() -> None:
    """`then`s about a property that comes before the one the `if`s ask about: not this form."""
    schema = copy.deepcopy(PROBED)
    schema["properties"] = {"data": schema["properties"]["data"], "meta": schema["properties"]["meta"]}
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" in unenforced


def test_an_object_p_read_by_a_checked_one_of_leaves_them_named_unenforced() -> None:
    """An overlapping `oneOf` of P's own becomes a checked combination, whose frames carry no features:
    P is then read alone and D as its own schema says, and `if` is named."""
    schema = copy.deepcopy(PROBED)
    schema["properties"]["meta"]["oneOf"] = [{"required": ["kind"]}, {"required": ["n"]}]
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" in unenforced
    value = {"meta": {"kind": "b"}, "data": {"x": 1, "y": 2}}
    assert jsonschema.Draft7Validator(schema).is_valid(value)
    assert _ours(schema, value)


def test_too_many_cases_leave_them_named_unenforced() -> None:
    """Seven independent conditions make 128 verdict vectors, past MAX_CASES: the compile goes on with
    `if` named, instead of compiling a node per case."""
    names = "abcdefg"
    schema = {
        "type": "object",
        "properties": {"meta": {"type": "object", "properties": {n: {} for n in names}}, "data": {}},
        "required": ["meta", "data"],
        "allOf": [
            {
                "if": {"properties": {"meta": {"required": [n]}}},
                "then": {"properties": {"data": {"not": {"const": n}}}},
            }
            for n in names
        ],
    }
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" in unenforced
    assert schema_accepts(schema, '{"meta": {"a": 1}, "data": "a"}')
