"""JSON and JSON Schema parsers, character by character: raw, minified and pretty text."""

from __future__ import annotations

import json

import pytest

from tests.unit.constrain.chars import initial, schema_accepts
from tokenloom.constrain.api import build, spec_of
from tokenloom.constrain.json_schema import MAX_CONDITIONS
from tokenloom.constrain.parser import accepts
from tokenloom.errors import GrammarError

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"enum": ["a", "bb"]}, "maxItems": 2},
        "born": {"type": "string", "format": "date"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "value",
    [
        {"name": "Bob", "age": 3},
        {"name": 'Zoë "Z" \\ é😀', "age": 150, "email": "z@x.org", "tags": ["a", "bb"], "born": "2024-02-29"},
        {"name": "x", "age": 0, "tags": []},
    ],
)
@pytest.mark.parametrize("indent", [None, 2, "\t"])
def test_person_valid(value: dict[str, object], indent: int | str | None) -> None:
    sep = (",", ":") if indent is None else None
    assert schema_accepts(PERSON, json.dumps(value, indent=indent, separators=sep, ensure_ascii=False))
    assert schema_accepts(PERSON, json.dumps(value))  # ascii escapes (\\u00e9) too


@pytest.mark.parametrize(
    "text",
    [
        '{"age":3,"name":"Bob"}',  # order differs from the schema's
        '{"name":"Bob"}',  # missing required
        '{"name":"","age":3}',  # minLength
        '{"name":"Bob","age":-1}',
        '{"name":"Bob","age":151}',
        '{"name":"Bob","age":1.5}',
        '{"name":"Bob","age":3,"x":1}',  # additionalProperties false
        '{"name":"Bob","age":3,"born":"2024-13-01"}',
        '{"name":"Bob","age":3,"email":"nope"}',
        '{"name":"Bob","age":3,"tags":["a","a","a"]}',
        '{"name":"Bob","age":3,"tags":["c"]}',
        '{"name":"Bob","age":3,}',
        '{"name":"Bob" "age":3}',
        '{"name":"Bob\n","age":3}',
        '{"name":"Bob","age":3} ',
        '{"name":"Bob",' + " " * 17 + '"age":3}',  # over 12 + 4 per nesting level in a row
    ],
)
def test_person_invalid(text: str) -> None:
    assert not schema_accepts(PERSON, text)


def test_json_object_mode() -> None:
    st = initial({"json_object": True})
    for text in ["{}", ' {"a": [1, -2.5e+3, {"b": null}], "c": true, "d": "\\u00e9"}', '{"":{}}']:
        assert accepts(st, text), text
    for text in ["[]", '"x"', "{'a':1}", '{"a":01}', '{"a":1.}', '{"a":tru}', "{", '{"a":1}}']:
        assert not accepts(st, text), text


def test_types_enum_const_null() -> None:
    assert schema_accepts({"type": ["string", "null"]}, "null")
    assert schema_accepts({"type": ["string", "null"]}, '"x"')
    assert not schema_accepts({"type": ["string", "null"]}, "1")
    assert schema_accepts({"enum": ["red", 1, None, {"a": 1}]}, '{"a":1}')
    assert not schema_accepts({"enum": ["red", 1]}, '"re"')
    assert schema_accepts({"const": "x"}, '"x"')
    assert schema_accepts({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "0.5")
    assert not schema_accepts({"type": "number", "exclusiveMinimum": 0}, "0")
    assert schema_accepts({"type": "boolean"}, "false")


def test_arrays() -> None:
    tup = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False}
    assert schema_accepts(tup, '[1, "a"]')
    assert not schema_accepts(tup, '[1, "a", 2]')
    assert not schema_accepts(tup, '["a"]')
    bounded = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3}
    assert schema_accepts(bounded, "[1,2]")
    assert schema_accepts(bounded, "[\n  1,\n  2,\n  3\n]")
    assert not schema_accepts(bounded, "[1]")
    assert not schema_accepts(bounded, "[1,2,3,4]")


def test_ref_recursive_and_defs() -> None:
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["v"],
            }
        },
        "$ref": "#/$defs/node",
    }
    assert schema_accepts(tree, '{"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]}')
    assert not schema_accepts(tree, '{"v":1,"kids":[{"kids":[]}]}')


def test_any_one_all_of() -> None:
    s = {
        "anyOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    }
    assert schema_accepts(s, '{"a":1}')
    assert schema_accepts(s, '{"b":"x"}')
    assert not schema_accepts(s, '{"a":"x"}')
    s2 = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    }
    assert schema_accepts(s2, '{"a":1,"b":"x"}')
    assert not schema_accepts(s2, '{"a":1}')
    assert schema_accepts(
        {"oneOf": [{"type": "integer"}, {"type": "string", "format": "uuid"}]},
        '"123e4567-e89b-12d3-a456-426614174000"',
    )


def test_additional_properties_schema_and_strings() -> None:
    s = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
    }
    assert schema_accepts(s, '{"id":1,"idx":"a","other":"b"}')
    assert not schema_accepts(s, '{"id":1,"x":2}')
    assert not schema_accepts(s, '{"x":"a","id":1,"id":2}')
    pat = {"type": "string", "pattern": "^[A-Z]{2}-\\d+$"}
    assert schema_accepts(pat, '"AB-12"')
    assert not schema_accepts(pat, '"AB-"')
    assert schema_accepts({"type": "string", "pattern": "push"}, '"a push b"')
    assert not schema_accepts({"type": "string", "pattern": "push"}, '"pull"')
    for fmt, good, bad in [
        ("time", "12:30:00Z", "25:00:00"),
        ("date-time", "2024-01-31T12:30:00+02:00", "2024-01-31 12:30"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    ]:
        assert schema_accepts({"type": "string", "format": fmt}, json.dumps(good))
        assert not schema_accepts({"type": "string", "format": fmt}, json.dumps(bad))


@pytest.mark.parametrize(
    ("schema", "text", "ok"),
    [
        ({"properties": {"a": {"type": "integer"}}}, '"text"', False),  # a real object keyword implies object
        ({"minItems": 1}, "{}", False),
        ({"additionalProperties": True}, '"text"', True),  # keywords at their defaults imply nothing
        ({"additionalProperties": {}}, "3", True),
        ({"required": [], "properties": {}}, "[1]", True),
        ({"minLength": 0, "items": True}, "null", True),
        ({"additionalProperties": True}, '{"a": [1]}', True),
    ],
)
def test_a_type_is_inferred_only_from_keywords_that_constrain(
    schema: dict[str, object], text: str, ok: bool
) -> None:
    assert schema_accepts(schema, text) is ok


def _kind_conditions(kinds: str) -> dict[str, object]:
    """An object whose `kind` names which other property it requires, one conditional per kind, all in
    one allOf (utam-page-object has two such allOfs)."""
    return {
        "type": "object",
        "properties": {"kind": {"enum": [*kinds, "none"]}, **{k: {"type": "integer"} for k in kinds}},
        "required": ["kind"],
        "allOf": [
            {
                "if": {"properties": {"kind": {"const": k}}},
                "then": {"required": [k]},
                "else": {"not": {"required": [k]}},
            }
            for k in kinds
        ],
    }


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('{"kind": "a", "a": 1}', True),
        ('{"kind": "b", "b": 2}', True),
        ('{"kind": "none"}', True),
        ('{"kind": "a"}', False),  # the first conditional's then
        ('{"kind": "b"}', False),  # the second's
        ('{"kind": "b", "a": 1, "b": 2}', False),  # the first's else
        ('{"kind": "a", "a": 1, "b": 2}', False),  # the second's else
    ],
)
def test_every_conditional_in_one_allof_is_enforced(text: str, ok: bool) -> None:
    """A merged dict holds one if/then/else: the others are nested in its branches, exactly."""
    schema = _kind_conditions("ab")
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" not in unenforced
    assert schema_accepts(schema, text) is ok


def _presence_conditions(names: str) -> dict[str, object]:
    """One conditional per name, each asking about a property of its own (so no one property's value
    decides them all): a name present must be positive."""
    return {
        "type": "object",
        "properties": {k: {"type": "integer"} for k in names},
        "allOf": [{"if": {"required": [k]}, "then": {"properties": {k: {"minimum": 1}}}} for k in names],
    }


def test_conditionals_past_the_limit_are_named_unenforced() -> None:
    """Each conditional doubles the branches a value may be in: past MAX_CONDITIONS in one allOf (and not
    all decided by one property's value, see below) all but the last are dropped and named (strict
    refuses them) instead of silently let through."""
    many = _presence_conditions("abcdefgh"[: MAX_CONDITIONS + 1])
    _, unenforced, _ = build(spec_of({"json_schema": many}))
    assert "if" in unenforced
    with pytest.raises(GrammarError, match="'if'"):
        build(spec_of({"json_schema": many, "strict": True}))
    _, at_limit, _ = build(spec_of({"json_schema": _presence_conditions("abcdefgh"[:MAX_CONDITIONS])}))
    assert "if" not in at_limit


def _action_conditions(kinds: str) -> dict[str, object]:
    """minecraft-custom-main-menu-mod's button actions: each conditional's `if` requires `kind` to be a
    value of its own, so at most one holds."""
    schema = _kind_conditions(kinds)
    for part in schema["allOf"]:  # type: ignore[attr-defined]
        part["if"]["required"] = ["kind"]
    return schema


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('{"kind": "a", "a": 1}', True),
        ('{"kind": "e", "e": 5}', True),
        ('{"kind": "none"}', True),
        ('{"kind": "c"}', False),  # the third's then
        ('{"kind": "e"}', False),  # the last's
        ('{"kind": "e", "a": 1, "e": 5}', False),  # the first's else
        ('{"kind": "none", "d": 4}', False),  # the fourth's else
        ('{"kind": "c", "c": 3, "d": 4}', False),
    ],
)
def test_conditionals_decided_by_one_value_are_enforced_past_the_limit(text: str, ok: bool) -> None:
    """Conditionals whose `if`s only ask about one property's value are one chain of branches, one per
    constant they name, one for another value and one for the property absent (schema_conditions.py),
    however many conditionals there are: with `required` in each `if` (minecraft's button actions) or
    without it (then an absent `kind` holds every `if`), and through `not`/`anyOf` (youtrack's widgets)."""
    for schema in (_action_conditions("abcde"), _kind_conditions("abcde"), _widget_conditions("abcde")):
        _, unenforced, _ = build(spec_of({"json_schema": schema}))
        assert "if" not in unenforced
        assert schema_accepts(schema, text) is ok, schema


def _widget_conditions(kinds: str) -> dict[str, object]:
    """`_action_conditions` with the last conditional written as "not any of the others"."""
    schema = _action_conditions(kinds)
    last, others = schema["allOf"][-1], kinds[:-1]  # type: ignore[index]
    last["if"] = {
        "not": {
            "anyOf": [{"properties": {"kind": {"const": k}}, "required": ["kind"]} for k in [*others, "none"]]
        }
    }
    return schema


def test_absent_value_holds_a_properties_only_condition() -> None:
    """Without `required`, an `if` on `kind` holds when `kind` is absent: every `then` applies."""
    schema = _kind_conditions("abcde")
    schema["required"] = []
    assert schema_accepts(schema, '{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}')
    assert not schema_accepts(schema, '{"a": 1, "b": 2, "c": 3, "d": 4}')
    assert not schema_accepts(_action_conditions("abcde") | {"required": []}, '{"a": 1}')


def test_patterns_naming_one_conditional_schema_keep_it_once() -> None:
    """chrome-manifest's commands: a name matching two patterns that both $ref one schema holding a
    conditional is under allOf(that, that). Its three copies counted past MAX_CONDITIONS, so all but the
    last were dropped and `if` named unenforced; equal parts are now kept once."""
    command = {
        "type": "object",
        "if": {"properties": {"global": {"const": True}}, "required": ["global"]},
        "then": {"properties": {"key": {"pattern": "^Ctrl"}}},
        "else": {"properties": {"key": {"pattern": "^Alt"}}},
    }
    ref = {"$ref": "#/$defs/command"}
    schema = {
        "$defs": {"command": command},
        "type": "object",
        "patternProperties": {".*": ref, "^_run$": dict(ref), "^_r": dict(ref)},
    }
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "if" not in unenforced
    assert schema_accepts(schema, '{"_run": {"global": true, "key": "Ctrl+1"}, "x": {"key": "Alt+1"}}')
    assert not schema_accepts(schema, '{"_run": {"global": true, "key": "Alt+1"}}')
    assert not schema_accepts(schema, '{"_run": {"key": "Ctrl+1"}}')


_BASE = {"type": "object", "properties": {"a": {"type": "integer"}}}
_UNEVALUATED_CASES: list[tuple[str, dict[str, object], list[tuple[str, bool]]]] = [
    (
        "names of a $ref and its siblings (yamllint)",
        {"$defs": {"base": _BASE}, "$ref": "#/$defs/base", "properties": {"b": {"type": "string"}}},
        [('{"a": 1, "b": "x"}', True), ('{"a": 1, "c": 2}', False), ('{"c": 2}', False)],
    ),
    (
        "names of the oneOf branch that holds",
        {
            "type": "object",
            "properties": {"kind": {"type": "string"}},
            "oneOf": [
                {"properties": {"x": {"type": "integer"}}, "required": ["x"]},
                {"properties": {"y": {"type": "integer"}}, "required": ["y"]},
            ],
        },
        [
            ('{"kind": "k", "x": 1}', True),
            ('{"kind": "k", "y": 2}', True),
            ('{"kind": "k", "x": 1, "z": 3}', False),
            ('{"kind": "k", "x": 1, "y": 2}', False),
        ],
    ),
    (
        "names of then when if holds, of else when not",
        {
            "type": "object",
            "properties": {"t": {"enum": ["a", "b"]}},
            "if": {"properties": {"t": {"const": "a"}}},
            "then": {"properties": {"a": {"type": "integer"}}},
            "else": {"properties": {"b": {"type": "integer"}}},
        },
        [
            ('{"t": "a", "a": 1}', True),
            ('{"t": "a", "b": 1}', False),
            ('{"t": "b", "b": 1}', True),
            ('{"t": "b", "a": 1}', False),
        ],
    ),
    (
        "a not evaluates no names",
        {"type": "object", "properties": {"a": {}, "b": {}}, "not": {"required": ["a", "b"]}},
        [('{"a": 1}', True), ('{"a": 1, "b": 2}', False), ('{"c": 1}', False)],
    ),
]


@pytest.mark.parametrize(
    ("name", "schema", "cases"), _UNEVALUATED_CASES, ids=[c[0] for c in _UNEVALUATED_CASES]
)
def test_unevaluated_properties_are_enforced_where_the_names_are_known(
    name: str, schema: dict[str, object], cases: list[tuple[str, bool]]
) -> None:
    schema = {**schema, "unevaluatedProperties": False}
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "unevaluatedProperties" not in unenforced, name
    for text, ok in cases:
        assert schema_accepts(schema, text) is ok, text


@pytest.mark.parametrize(
    "schema",
    [
        # an allOf part's own: the other part names "b", which the first part's would refuse
        {"allOf": [{"properties": {"a": {}}, "unevaluatedProperties": False}, {"properties": {"b": {}}}]},
        # anyOf options that both hold evaluate both their names
        {"anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}], "unevaluatedProperties": False},
    ],
)
def test_unevaluated_properties_that_cannot_be_settled_are_named(schema: dict[str, object]) -> None:
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "unevaluatedProperties" in unenforced


def test_beside_additional_properties_it_has_nothing_left_to_judge() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {}},
        "additionalProperties": {"type": "integer"},
        "unevaluatedProperties": False,
    }
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "unevaluatedProperties" not in unenforced
    assert schema_accepts(schema, '{"a": "x", "b": 2}')
    assert not schema_accepts(schema, '{"a": "x", "b": "y"}')


_CONTAINS_CASES: list[tuple[str, dict[str, object], list[tuple[str, bool]]]] = [
    (
        "one item of any kind",
        {"type": "array", "contains": {"type": "string"}},
        [('["a"]', True), ('[1, "a"]', True), ("[1, 2]", False), ("[]", False)],
    ),
    (
        "minContains over typed items",
        {"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 5}, "minContains": 2},
        [("[5, 6]", True), ("[1, 5, 2, 9]", True), ("[5, 1]", False), ("[1]", False)],
    ),
    (
        "prefix items count too",
        {
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}],
            "contains": {"type": "integer"},
        },
        [('["a", 1]', True), ('["a"]', False), ('["a", 1, "b"]', True), ('["a", "b", "c"]', False)],
    ),
    (
        "minContains 0 asks nothing",
        {"type": "array", "contains": {"type": "string"}, "minContains": 0},
        [("[]", True)],
    ),
    (
        "maxContains counts exactly",
        {"type": "array", "contains": {"type": "string"}, "maxContains": 2},
        [
            ('["a", "b"]', True),
            ('[1, "a", 2, "b"]', True),
            ('["a", "b", "c"]', False),
            ('[1, "a", "b", "c"]', False),
        ],
    ),
    (
        "maxContains alone",
        {"type": "array", "contains": {"const": 3}, "minContains": 0, "maxContains": 1},
        [("[]", True), ("[1, 3]", True), ("[3, 3]", False)],
    ),
]


@pytest.mark.parametrize(("name", "schema", "cases"), _CONTAINS_CASES, ids=[c[0] for c in _CONTAINS_CASES])
def test_contains_counts_the_items_that_match(
    name: str, schema: dict[str, object], cases: list[tuple[str, bool]]
) -> None:
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert not unenforced, name
    for text, ok in cases:
        assert schema_accepts(schema, text) is ok, text


def test_contains_beside_unique_items_is_named() -> None:
    """uniqueItems arrays have a frame of their own that counts nothing."""
    schema = {"type": "array", "contains": {"type": "string"}, "uniqueItems": True}
    _, unenforced, _ = build(spec_of({"json_schema": schema}))
    assert "contains" in unenforced
