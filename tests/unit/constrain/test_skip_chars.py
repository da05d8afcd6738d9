"""ParserState.skip_chars: a string's own answer (from its two extremes) equals the union of the chars
of every look-ahead state, and masks inside bounded strings still equal feeding every token."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.constrain.conftest import Greedy
from tests.unit.constrain.test_vocab_masks import assert_mask_is_exact
from tokenloom.constrain import compile
from tokenloom.constrain.charset import EMPTY
from tokenloom.constrain.parser import ParserState
from tokenloom.engine.vocab import Vocab

BOUNDED = {"type": "string", "pattern": "^[A-Za-z0-9.]+$", "minLength": 3, "maxLength": 40}
PLAIN = {"type": "string", "minLength": 2, "maxLength": 9}


def _from_states(st: ParserState, most: int) -> Any:
    acc = EMPTY
    for later in st.skips(most):
        acc = acc | later.allowed_chars()
    return acc


@pytest.mark.parametrize(
    ("schema", "prefix"), [(BOUNDED, '"a'), (BOUNDED, '"ab'), (PLAIN, '"a'), (PLAIN, '"')]
)
def test_skip_chars_equal_the_states_they_stand_for(
    schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy
) -> None:
    c = compile({"json_schema": schema}, vocab)
    assert greedy.tokens(c, prefix) is not None
    st = c._state
    assert st is not None
    run = st.free_run()
    assert run is not None and run[0].remaining is not None
    for most in (1, 2, run[0].remaining, min(run[0].remaining, 48)):
        assert st.skip_chars(most) == _from_states(st, most)


@pytest.mark.parametrize(("schema", "prefix"), [(BOUNDED, '"ab'), (PLAIN, '"a')])
def test_bounded_string_masks_equal_brute_force(
    schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy
) -> None:
    assert_mask_is_exact(schema, prefix, vocab, greedy)
