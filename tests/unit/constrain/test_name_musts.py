"""Names an object must hold (`not {propertyNames: {not: P}}`) beside maxProperties: the walk must not
spend the names it may write on others and reach an object that can neither end nor take another name.

JSONSchemaBench's object6 (two names of two chars holding "a", "b", "c" and "d" between them) and
notnames7 (one name meeting three patterns) dead-ended in random generation; each random walk here
ends in a valid object."""

from __future__ import annotations

import json
import random
from typing import Any

import jsonschema
import pytest

from tests.unit.constrain.chars import initial, schema_accepts
from tests.unit.constrain.conftest import Greedy
from tests.unit.constrain.test_vocab_masks import assert_mask_is_exact
from tokenloom.constrain.api import build
from tokenloom.constrain.parser import ParserState
from tokenloom.engine.vocab import Vocab

OBJECT6 = {
    "type": "object",
    "allOf": [
        {"$ref": "#/definitions/has_a"},
        {"$ref": "#/definitions/has_b"},
        {"$ref": "#/definitions/has_c"},
        {"$ref": "#/definitions/has_d"},
        {"propertyNames": {"pattern": "^..$"}},
        {"maxProperties": 2},
        {"minProperties": 1},
    ],
    "definitions": {f"has_{c}": {"not": {"propertyNames": {"not": {"pattern": c}}}} for c in "abcd"},
}
ONE_NAME = {
    "type": "object",
    "allOf": [
        {"not": {"propertyNames": {"not": {"pattern": "a5b"}}}},
        {"not": {"propertyNames": {"not": {"pattern": "(^[^5]*$)|7"}}}},
        {"not": {"propertyNames": {"not": {"pattern": "(^[^7]*$)|9"}}}},
        {"propertyNames": {"pattern": "^(\\w\\d)+$"}},
        {"maxProperties": 1},
    ],
}
# three names may hold the two musts: nothing to prune until the last name
ROOMY = {
    "type": "object",
    "propertyNames": {"pattern": "^[a-z]{1,3}$"},
    "allOf": [
        {"not": {"propertyNames": {"not": {"pattern": "x"}}}},
        {"not": {"propertyNames": {"not": {"pattern": "y"}}}},
    ],
    "maxProperties": 3,
}
_POOL = "abcdxyz0123456789\"'{}:, \\u"
_ONE_NAME_POOL = 'ab579"{}:,1'  # the chars that name needs, so that walks finish


def _walk(start: ParserState, rng: random.Random, steps: int, pool: str = _POOL) -> str | None:
    """Random allowed chars (from a small pool, else any allowed ASCII) until the text can end; None
    when the walk reaches a state that takes nothing and cannot end (a dead end)."""
    state, text = start, ""
    for _ in range(steps):
        if state.can_end() and rng.random() < 0.3:
            return text
        allowed = state.allowed_chars()
        options = [c for c in pool if allowed.contains_cp(ord(c))]
        options = options or [chr(c) for c in range(32, 127) if allowed.contains_cp(c)]
        if not options:
            return text if state.can_end() else None
        c = rng.choice(options)
        after = state.add_char(c)
        assert after is not None, (text, c)  # an allowed char is taken
        state, text = after, text + c
    return ""  # unfinished: not a dead end


@pytest.mark.parametrize(
    ("schema", "pool"),
    [(OBJECT6, _POOL), (ONE_NAME, _ONE_NAME_POOL), (ROOMY, _POOL)],
    ids=["object6", "one-name", "roomy"],
)
def test_random_walks_end_in_valid_objects(schema: dict[str, Any], pool: str) -> None:
    validator = jsonschema.Draft7Validator(schema)
    start = initial({"json_schema": schema})
    rng = random.Random(7)
    finished = 0
    for _ in range(150):
        text = _walk(start, rng, 80, pool)
        assert text is not None, "dead end"
        if text:
            finished += 1
            assert validator.is_valid(json.loads(text)), text
    assert finished >= 20


def test_musts_agree_with_a_validator() -> None:
    cases = {
        "object6": (OBJECT6, ['{"ab":1,"cd":2}', '{"da":1,"bc":2}', '{"ab":1}', '{"ab":1,"cx":2}', "{}"]),
        "one-name": (ONE_NAME, ['{"a5b7c9":1}', '{"a5b7":1}', '{"x1a5b7c9":1}', '{"a5b7c9":1,"b2":2}']),
        "roomy": (ROOMY, ['{"x":1,"y":2}', '{"xy":1}', '{"a":1,"b":2,"xy":3}', '{"a":1,"b":2,"x":3}']),
    }
    for name, (schema, texts) in cases.items():
        validator = jsonschema.Draft7Validator(schema)
        for text in texts:
            assert schema_accepts(schema, text) is validator.is_valid(json.loads(text)), (name, text)
        assert build({"json_schema": schema})[1] == frozenset(), name  # nothing named unenforced


def test_the_first_of_two_names_must_leave_the_rest_coverable() -> None:
    """object6: after `{"a` only a name holding a second must can follow: "ab", "ac", "ad"."""
    start = initial({"json_schema": OBJECT6})
    after = start
    for c in '{"a':
        nxt = after.add_char(c)
        assert nxt is not None
        after = nxt
    allowed = after.allowed_chars()
    assert [c for c in 'abcdxz"' if allowed.contains_cp(ord(c))] == ["b", "c", "d"]


@pytest.mark.parametrize(
    ("schema", "prefix"),
    [
        (OBJECT6, '{"'),
        (OBJECT6, '{"a'),
        (OBJECT6, '{"ab":1,"'),
        (ONE_NAME, '{"a5'),
        (ROOMY, '{"a":1,"b":2,"'),
    ],
)
def test_masks_under_musts_are_exact(
    schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy
) -> None:
    """Tracked names are kept whole (no free runs): the mask still equals feeding each token alone."""
    assert_mask_is_exact(schema, prefix, vocab, greedy)
