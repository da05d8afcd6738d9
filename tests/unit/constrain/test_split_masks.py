"""Masks that take a fast path by splitting a state into its alternatives (ParserState.alternatives:
an anyOf of an enum and a free string, also as a uniqueItems item) or by the one full state of a
pattern past its match (Regex.canonical: a patternProperties name that is a search), each compared
with feeding every token of the real vocabulary from the exact state."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.constrain.conftest import Greedy
from tests.unit.constrain.test_vocab_masks import assert_mask_is_exact
from tokenloom.constrain.regex import Regex
from tokenloom.engine.vocab import Vocab

_WORDS = ["ajax", "build", "coding", "connected services", "data", "database", "documentation"]
ENUM_OR_STRING = {"anyOf": [{"enum": _WORDS}, {"type": "string", "minLength": 1}]}
FIELD = {"type": "object", "properties": {"f": ENUM_OR_STRING}, "required": ["f"]}
UNIQUE = {"type": "array", "items": ENUM_OR_STRING, "uniqueItems": True, "maxItems": 3}
NAMES = {
    "type": "object",
    "patternProperties": {
        "^description_[a-zA-Z0-9_]+": {"type": "string"},
        "^body_[a-zA-Z0-9_]+": {"type": "integer"},
    },
    "additionalProperties": False,
}

CHECKED: list[tuple[dict[str, Any], str]] = [
    (FIELD, '{"f":"'),  # enum or string: the string's bulk run and the enum's short walk, joined
    (FIELD, '{"f":"da'),  # still both
    (UNIQUE, '["'),  # the same inside a uniqueItems item: the item frame splits by its parser
    (UNIQUE, '["build","bu'),  # a later item that may still repeat "build"
    (NAMES, '{"description_a'),  # past the pattern's match: any name char keeps the one full state
    (NAMES, '{"description_a_b\\u0078'),  # an escape in the name
    (NAMES, '{"body_1":2,"desc'),  # before the match: the pattern's own states
]


@pytest.mark.parametrize(("schema", "prefix"), CHECKED)
def test_split_masks_equal_brute_force(
    schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy
) -> None:
    assert_mask_is_exact(schema, prefix, vocab, greedy)


def test_states_past_a_search_match_are_one() -> None:
    """Every state that accepts any text from here on is the one full state, which loops on all chars;
    the regex still matches what it matched."""
    r = Regex("^description_[a-zA-Z0-9_]+", search=True)
    d = r.initial
    for c in "description_ab":
        d = d.step(c)  # type: ignore[assignment]
    assert d.step("_") is d and d.step('"') is d
    assert d.loop_chars() == d.chars
    assert r.fullmatch("description_x anything") and not r.fullmatch("description_")
    anchored = Regex("^[a-z]+$", search=True)
    assert anchored.initial.step("a") is not None
    assert anchored.fullmatch("abc") and not anchored.fullmatch("ab1")
