"""Texts a state must read next (`forced_text` of its top frame), which the mask walk follows down the
trie without a parser state per char: each must lead where reading it char by char leads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.constrain.chars import initial
from tokenloom.constrain.mask import _forced_literal
from tokenloom.constrain.parser import ParserState, feed_text

SCHEMAS: list[tuple[dict[str, Any], Any]] = [
    (
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "nickname": {"type": "string"},
                "é-ü": {"type": "integer"},
                "kind": {"enum": ["alpha", "alphabet", "beta", 12, None]},
            },
        },
        {"name": "x", "nickname": "y", "é-ü": 3, "kind": "alphabet"},
    ),
    ({"type": "array", "items": {"enum": ["north", "northeast", "south"]}}, ["northeast", "south", "north"]),
    (
        {"type": "object", "properties": {"only": {"const": "fixed text"}}, "required": ["only"]},
        {"only": "fixed text"},
    ),
]


@pytest.mark.parametrize(("schema", "instance"), SCHEMAS)
def test_a_forced_text_leads_where_reading_it_leads(schema: dict[str, Any], instance: Any) -> None:
    text = json.dumps(instance, ensure_ascii=False)
    st: ParserState | None = initial({"json_schema": schema})
    forced = 0
    for ch in text:
        assert st is not None
        got = _forced_literal(st)
        if got is not None:
            data, after = got
            assert data, "a forced text is never empty"
            assert feed_text(st, data.decode("utf-8")) is after
            forced += 1
        st = st.add_char(ch)
    assert forced >= 5


def test_no_forced_text_while_names_or_choices_remain_open() -> None:
    schema = {"type": "object", "properties": {"name": {}, "nickname": {}}, "additionalProperties": False}
    st = feed_text(initial({"json_schema": schema}), '{"n')
    assert st is not None and _forced_literal(st) is None  # "name" or "nickname"
    st = feed_text(st, "i")
    assert st is not None and _forced_literal(st) == (b'ckname"', feed_text(st, 'ckname"'))
    more = feed_text(initial({"json_schema": {**schema, "additionalProperties": True}}), '{"ni')
    assert more is not None and _forced_literal(more) is None  # any other name may follow
