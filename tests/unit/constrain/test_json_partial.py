"""json_partial.may_become: never "no" for a text that can still equal the value (uniqueItems relies on
it to forget an item's text), and "no" where the text already differs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tokenloom.constrain.json_partial import may_become

VALUES: list[Any] = [
    "ab",
    'a"b\\c\u00e9',
    {"path": "a/b", "n": 1, "tags": ["x", {"k": None}]},
    [1, 2.5, True, False, None, "s"],
    {},
    [],
    {"a": {"b": {"c": [1]}}},
]


def _forms(value: Any) -> list[str]:
    """Texts equal to `value`: compact, pretty, ASCII-escaped, keys reversed, 1 written as 1.0."""
    forms = [
        json.dumps(value, separators=(",", ":")),
        json.dumps(value, indent=2),
        json.dumps(value, ensure_ascii=True),
    ]
    if isinstance(value, dict):
        forms.append(json.dumps(dict(reversed(list(value.items())))))
    if isinstance(value, dict) and value.get("n") == 1:
        forms.append(json.dumps({**value, "n": 1.0}))
    return forms


@pytest.mark.parametrize("value", VALUES)
def test_every_prefix_of_an_equal_text_may_become_it(value: Any) -> None:
    for text in _forms(value):
        for end in range(1, len(text) + 1):
            assert may_become(text[:end], value), text[:end]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"ac', "ab"),
        ('"ab"', "abc"),
        ('{"path":"b"}', {"path": "a"}),
        ('{"x', {"path": "a"}),
        ('{"path":"a"}', {"path": "a", "n": 1}),
        ('{"n":1,"m', {"n": 1}),
        ("[1,2,", [1, 2]),
        ("[1,3,", [1, 2, 3]),
        ("tr", False),
        ("1", True),
        ('{"n":1.5}', {"n": 1}),
        ("[", {}),
        ('"a"', ["a"]),
    ],
)
def test_a_text_that_already_differs_cannot(text: str, value: Any) -> None:
    assert not may_become(text, value)


def test_cut_numbers_and_escapes_may_be_anything_of_their_kind() -> None:
    assert may_become("2", 1)  # conservative: a number cut short
    assert may_become('"\\u00', "a")  # an escape cut short
    assert not may_become('"\\u0062', "a")


def test_a_repeated_name_may_still_fix_its_value() -> None:
    """json.loads keeps a repeated name's last value, and so does uniqueItems' equality."""
    assert may_become('{"a":1,"a":2}', {"a": 2})
    assert may_become('{"a":1,"a"', {"a": 2})
    assert may_become('{"a":[1,{"b":2}],"a":', {"a": 2})
    assert not may_become('{"a":1,"a":3}', {"a": 2})
    assert may_become('{"path":"b', {"path": "a"})
    assert may_become('{"n":1,"n', {"n": 1})


def test_where_names_cannot_repeat_a_differing_value_decides() -> None:
    assert not may_become('{"path":"b', {"path": "a"}, names_unique=True)
    assert not may_become('{"a":1,"a"', {"a": 1}, names_unique=True)
    assert may_become('{"a":{"b":1', {"a": {"b": 2}}, names_unique=True)  # only the outermost object
    assert may_become('{"path":"a', {"path": "ab"}, names_unique=True)
