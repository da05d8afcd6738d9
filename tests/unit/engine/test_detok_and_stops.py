"""Incremental UTF-8 decoding and stop strings across piece boundaries."""

from __future__ import annotations

import pytest

from tokenloom.engine.detok import IncrementalDetokenizer
from tokenloom.engine.sampling import StopMatcher


def test_a_character_split_over_pieces_is_never_emitted_broken() -> None:
    data = "héllo 日本 😀".encode()
    detok = IncrementalDetokenizer()
    out = [detok.feed(data[i : i + 1]) for i in range(len(data))]
    assert all("\ufffd" not in part for part in out)
    assert "".join(out) + detok.flush() == "héllo 日本 😀"


def test_an_unfinished_character_at_the_end_becomes_a_replacement() -> None:
    detok = IncrementalDetokenizer()
    assert detok.feed("é".encode()[:1]) == ""
    assert detok.flush() == "\ufffd"


@pytest.mark.parametrize("split", range(1, 12))
def test_stop_string_found_across_pieces_and_not_emitted(split: int) -> None:
    text = "Hello, world. STOP here"
    matcher = StopMatcher(("STOP",))
    first, hit_first = matcher.feed(text[:split])
    second, hit_second = matcher.feed(text[split:]) if not hit_first else ("", True)
    assert hit_first or hit_second
    assert first + second == "Hello, world. "


def test_text_that_may_start_a_stop_is_held_back_then_released() -> None:
    matcher = StopMatcher(("</end>",))
    assert matcher.feed("abc</e") == ("abc", False)
    assert matcher.feed("x") == ("</ex", False)
    assert matcher.feed("</en") == ("", False)
    assert matcher.flush() == "</en"


def test_earliest_of_several_stops_wins() -> None:
    matcher = StopMatcher(("bb", "a"))
    assert matcher.feed("xxbbya") == ("xx", True)
