"""The reasoning budget forces the end marker once the budget is spent, and only then."""

from __future__ import annotations

import numpy as np
import pytest

from tokenloom.engine.vocab import Tokenizer, load_tokenizer
from tokenloom.pipeline.budget import ReasoningBudget, ReasoningMarkers


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return load_tokenizer()


def _budget(tokenizer: Tokenizer, budget: int, *, is_open: bool = True) -> ReasoningBudget:
    markers = ReasoningMarkers("<think>", "</think>\n\n", is_open)
    end = tokenizer.tokenize(markers.end, parse_special=True)
    return ReasoningBudget(None, tokenizer.vocab, markers, end, budget)


def _write(mask: ReasoningBudget, tokenizer: Tokenizer, text: str) -> None:
    for token in tokenizer.tokenize(text, parse_special=False):
        assert mask.allowed() is None
        mask.advance(token)


def test_a_spent_budget_forces_the_end_marker_then_steps_aside(tokenizer: Tokenizer) -> None:
    mask = _budget(tokenizer, 3)
    words = tokenizer.tokenize(" one two three", parse_special=False)
    assert len(words) == 3
    _write(mask, tokenizer, " one two three")
    forced: list[int] = []
    while (allowed := mask.allowed()) is not None:
        assert isinstance(allowed, np.ndarray) and allowed.sum() == 1
        assert not mask.is_accepting()
        token = int(np.flatnonzero(allowed)[0])
        forced.append(token)
        mask.advance(token)
    assert tokenizer.detokenize(forced) == "</think>\n\n"
    _write(mask, tokenizer, "The answer is 4.")  # free again


def test_reasoning_that_ends_in_time_is_never_cut(tokenizer: Tokenizer) -> None:
    mask = _budget(tokenizer, 20)
    _write(mask, tokenizer, "short</think>\n\nAnswer: " + "word " * 40)


def test_optional_reasoning_counts_from_its_start_marker(tokenizer: Tokenizer) -> None:
    mask = _budget(tokenizer, 2, is_open=False)
    _write(mask, tokenizer, "Plain words before any reasoning at all")
    mask = _budget(tokenizer, 2, is_open=False)
    _write(mask, tokenizer, "<think> a b")
    assert mask.allowed() is not None
