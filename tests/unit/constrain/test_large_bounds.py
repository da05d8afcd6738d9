"""Upper bounds far beyond any generation compile (sigmacv's `maxLength: 1400000`): they change nothing
until the count nears them; lower bounds, counted one by one, keep their limit; absurd ones are refused
naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.constrain.chars import initial, schema_accepts
from tests.unit.constrain.conftest import Greedy, mask_ids
from tests.unit.constrain.test_vocab_masks import _brute_force
from tokenloom.constrain import compile
from tokenloom.constrain.api import check_spec
from tokenloom.constrain.parser import feed_text
from tokenloom.engine.vocab import Vocab
from tokenloom.errors import GrammarError

PHOTO = {"type": "string", "maxLength": 1_400_000, "pattern": "^data:image/png;base64,[A-Za-z0-9+/]+={0,2}$"}


@pytest.mark.parametrize(
    "schema",
    [
        PHOTO,
        {"type": "array", "items": {"type": "integer"}, "maxItems": 5_000_000},
        {"type": "object", "maxProperties": 2_000_000_000},
    ],
)
def test_huge_upper_bounds_compile(schema: dict[str, Any]) -> None:
    check_spec({"json_schema": schema})


def test_huge_max_length_still_enforced() -> None:
    assert schema_accepts(PHOTO, '"data:image/png;base64,QUJD"')
    assert not schema_accepts(PHOTO, '"data:image/png;base64,"')
    short = {"type": "string", "maxLength": 1_400_000, "minLength": 3}
    assert not schema_accepts(short, '"ab"')
    assert schema_accepts(short, '"abc"')
    st = feed_text(initial({"json_schema": {"type": "string", "maxLength": 200_000}}), '"' + "x" * 199_999)
    assert st is not None and st.add_char("x") is not None
    assert st.add_char("x").add_char("x") is None  # type: ignore[union-attr]


def test_huge_max_length_mask(vocab: Vocab, greedy: Greedy) -> None:
    c = compile({"json_schema": PHOTO}, vocab)
    assert greedy.tokens(c, '"data:image/png;base64,QU') is not None
    assert mask_ids(c.allowed()) == _brute_force(c, vocab)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("schema", "param"),
    [
        ({"type": "string", "minLength": 1_400_000}, "response_format.json_schema.schema.minLength"),
        ({"type": "string", "maxLength": 2**40}, "response_format.json_schema.schema.maxLength"),
        ({"type": "array", "minItems": 10**9}, "response_format.json_schema.schema.minItems"),
    ],
)
def test_lower_and_absurd_bounds_are_refused_naming_the_field(schema: dict[str, Any], param: str) -> None:
    with pytest.raises(GrammarError) as info:
        check_spec({"json_schema": schema})
    assert info.value.param == param
