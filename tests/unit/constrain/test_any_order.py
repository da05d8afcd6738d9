"""`"x-tokenloom-any-order"`: properties in any order, required ones, additionalProperties and
min/maxProperties still enforced; schema order stays the default."""

from __future__ import annotations

import json
from itertools import permutations
from typing import Any

import pytest

from tests.unit.constrain.conftest import mask_ids
from tests.unit.constrain.test_vocab_masks import _brute_force
from tokenloom.constrain import check_spec, compile
from tokenloom.constrain.api import build
from tokenloom.constrain.parser import Grammar, accepts
from tokenloom.engine.vocab import Tokenizer, Vocab
from tokenloom.errors import GrammarError

POINT = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}, "label": {"type": "string"}},
    "required": ["x", "y"],
    "additionalProperties": False,
}


def _accepts(schema: dict[str, Any], text: str) -> bool:
    stack, _, _ = build({"json_schema": schema})
    return accepts(Grammar(stack).initial, text)


def test_schema_order_is_the_default() -> None:
    assert _accepts(POINT, '{"x":1,"y":2}')
    assert not _accepts(POINT, '{"y":2,"x":1}')


def test_every_order_of_the_properties_is_accepted() -> None:
    schema = {**POINT, "x-tokenloom-any-order": True}
    items = ['"x":1', '"y":2', '"label":"p"']
    for order in permutations(items):
        assert _accepts(schema, "{" + ",".join(order) + "}"), order
    for order in permutations(items[:2]):
        assert _accepts(schema, "{" + ", ".join(order) + "}"), order


@pytest.mark.parametrize(
    "text",
    [
        '{"label":"p","y":2}',  # required x missing
        '{"y":2,"x":1,"y":3}',  # a property twice
        '{"y":2,"x":1,"z":0}',  # additionalProperties false
        '{"y":2,"x":"1"}',  # a value of the wrong type
    ],
)
def test_required_unique_and_closed_objects_still_enforced(text: str) -> None:
    assert not _accepts({**POINT, "x-tokenloom-any-order": True}, text)


def test_max_properties_and_additional_properties_in_any_order() -> None:
    schema = {
        "type": "object",
        "x-tokenloom-any-order": True,
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["b"],
        "additionalProperties": {"type": "boolean"},
        "maxProperties": 3,
    }
    assert _accepts(schema, '{"extra":true,"b":1,"a":2}')
    assert not _accepts(schema, '{"extra":true,"b":1,"a":2,"more":false}')
    assert not _accepts(schema, '{"extra":1,"b":1}')


def test_the_root_switch_reaches_nested_objects_unless_they_say_false() -> None:
    inner = {"type": "object", "properties": {"p": {"type": "integer"}, "q": {"type": "integer"}}}
    schema = {
        "type": "object",
        "x-tokenloom-any-order": True,
        "properties": {"free": inner, "fixed": {**inner, "x-tokenloom-any-order": False}},
    }
    assert _accepts(schema, '{"fixed":{"p":1,"q":2},"free":{"q":2,"p":1}}')
    assert not _accepts(schema, '{"free":{"q":2,"p":1},"fixed":{"q":2,"p":1}}')


def test_a_switch_that_is_not_a_boolean_names_the_field() -> None:
    with pytest.raises(GrammarError) as err:
        check_spec({"json_schema": {"type": "object", "properties": {"o": {"x-tokenloom-any-order": "yes"}}}})
    assert "x-tokenloom-any-order" in err.value.message
    assert err.value.param is not None and "properties.o" in err.value.param


def test_any_order_masks_equal_brute_force(vocab: Vocab, tokenizer: Tokenizer) -> None:
    schema = {**POINT, "x-tokenloom-any-order": True}
    text = json.dumps({"label": "p q", "y": 2, "x": 1})
    c = compile({"json_schema": schema}, vocab)
    for step, tid in enumerate(tokenizer.tokenize(text, parse_special=False)):
        mask = c.allowed()
        assert mask is not None and mask[tid]
        if step % 3 == 0:
            assert mask_ids(mask) == _brute_force(c, vocab), f"step {step}"
        c.advance(tid)
    assert c.is_accepting()
