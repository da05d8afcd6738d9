"""uniqueItems arrays masked on their text-free twin states (json_unique.twin_state, unique_mask.py):
the slow shapes of issue 12 (items that are objects or pattern strings), the edges of the twin (a token
finishing an item and a whole later one, minItems and prefixItems counted through unknown items, nested
arrays), each mask compared with feeding every token of the real vocabulary from the exact state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.unit.constrain.conftest import Greedy, force
from tests.unit.constrain.test_vocab_masks import assert_mask_is_exact
from tokenloom.constrain import compile
from tokenloom.constrain.json_unique import twin_forgets_repeatable, twin_state
from tokenloom.constrain.trie import trie_for
from tokenloom.constrain.unique_mask import (
    _item_completed_anew,
    _may_complete,
    _may_complete_some,
    closing_tokens,
    holds_later_item,
    later_item_tokens,
)
from tokenloom.engine.vocab import Tokenizer, Vocab
from tokenloom.json_brackets import scan_brackets

_PATH = {"type": "string", "pattern": "^/?([^/]+/)*[^/]+/?$"}
OBJECTS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"path": _PATH, "n": {"type": "integer"}},
        "required": ["path"],
    },
    "uniqueItems": True,
}
PATTERNS = {"type": "array", "items": _PATH, "uniqueItems": True}
STRINGS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
NESTED = {"type": "array", "items": STRINGS, "uniqueItems": True}
AT_LEAST_ONE = {**OBJECTS, "minItems": 1}
CLOSED = {**OBJECTS, "items": {**OBJECTS["items"], "additionalProperties": False}}
PREFIXED = {
    "type": "array",
    "prefixItems": [{"type": "object", "properties": {"path": _PATH}}, {"type": "integer"}],
    "items": {"type": "boolean"},
    "uniqueItems": True,
}

TWO_ARRAYS = {"anyOf": [OBJECTS, {**OBJECTS, "maxItems": 5}]}  # one stack per array, one item text

HOLDER = {
    "type": "array",
    "items": {"type": "object", "properties": {"v": STRINGS}},
    "uniqueItems": True,
}
HOLDER_OF_OBJECTS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "v": {
                "type": "array",
                "items": {"type": "object", "properties": {"t": {"type": "string"}}},
                "uniqueItems": True,
            }
        },
    },
    "uniqueItems": True,
}

# Each check feeds every token from the exact state (minutes under load): a few, each for one edge.
CHECKED: list[tuple[dict[str, Any], str]] = [
    (OBJECTS, '[{"path":"ind'),  # the first item: its pattern string judged by the pattern pass
    (OBJECTS, '[{"path":"a","n":1},{"path":"a","n":1'),  # one "}" from a duplicate
    (TWO_ARRAYS, '[{"path":"a","n":1},{"path":"a","n":1'),  # the same, on two stacks
    (PATTERNS, '["ab","x'),  # a later item unlike the seen ones: twin and pattern pass
    (STRINGS, '["'),  # the twin alone would let '","",' finish "" and then "" again
    (NESTED, '[["a"],["b'),  # the inner array's twin inside the outer array's exact state
    (AT_LEAST_ONE, '[{"path":"ab'),  # '"}]' must count the unknown first item towards minItems
    (PREFIXED, '[{"path":"ab'),  # the next item is prefixItems[1] (an integer), not a boolean
    # items that may still repeat a seen one, masked on the twin plus their closing-byte tokens
    (STRINGS, '["ab","a'),  # 'b"' would finish a duplicate
    (OBJECTS, '[{"path":"a"},{"path":"'),  # 'a"}' would finish a duplicate
    (NESTED, '[["a"],["'),  # the inner item may repeat "a", the outer one ["a"]
    (PATTERNS, '["ab/c","x","ab'),  # a pattern string item: only '/c"' ends a duplicate
    (CLOSED, '[{"path":"a","n":1},{"path":"a","n":2'),  # no name repeats: this item is new
    # inside a string of an object item only tokens with a quote and then a brace can complete it;
    # '}"}' (a brace in the text, then the end) would finish a duplicate
    (OBJECTS, '[{"path":"a}"},{"path":"a'),
    # an outer item that cannot repeat (nothing seen) holding an inner array whose item may: only the
    # inner item's closing tokens are re-judged ('b"', then '"}]' from inside the string)
    (HOLDER, '[{"v":["ab","a'),
    (HOLDER_OF_OBJECTS, '[{"v":[{"t":"x"},{"t":"'),
    # both an outer item and the string item inside it may repeat: only tokens holding the outer
    # item's closing byte, or whose first quote ends a seen string, are re-judged ('"]' would finish
    # the outer duplicate ["ab","a"], 'b"' the inner one "ab")
    (NESTED, '[["ab","a"],["ab","a'),
    (HOLDER, '[{"v":["ab","a"]},{"v":["ab","a'),
    # the twin keeps only how many items were seen: maxItems and minItems still count them
    ({**STRINGS, "maxItems": 3}, '["a","b","cx'),  # '",' would start a fourth item
    ({**STRINGS, "minItems": 2}, '["a","bx'),  # '"]' closes the array at exactly two items
    # an object item completes only where a token closes its outermost brace: '"}' here, not the '}'
    # of '{}"' that stays inside the string
    (HOLDER, '[{"v":["ab"],"w":"x"},{"v":["ab"],"w":"x'),
]


@pytest.mark.parametrize(("schema", "prefix"), CHECKED)
def test_unique_masks_equal_brute_force(
    schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy
) -> None:
    assert_mask_is_exact(schema, prefix, vocab, greedy)


def test_states_inside_a_new_item_repeat(vocab: Vocab, greedy: Greedy) -> None:
    """The twins of two positions inside the same item's string run are one state, so the second
    mask is a memo hit; while the item may repeat a seen one the twin forgets it too, and says so
    (its closing-byte tokens are then judged from the exact state)."""
    twins = []
    for prefix in ('[{"path":"abc', '[{"path":"abcdef'):
        c = compile({"json_schema": OBJECTS}, vocab)
        assert greedy.tokens(c, prefix) is not None
        assert twin_state(c._state) is not c._state  # type: ignore[arg-type]
        twins.append(twin_state(c._state))  # type: ignore[arg-type]
    assert twins[0] is twins[1]
    c = compile({"json_schema": OBJECTS}, vocab)
    assert not twin_forgets_repeatable(twins[0])
    assert greedy.tokens(c, '[{"path":"abc"},{"path":"ab') is not None
    assert twin_state(c._state) is not c._state  # type: ignore[arg-type]
    assert twin_forgets_repeatable(c._state)  # type: ignore[arg-type]
    assert greedy.tokens(c, "x") is not None  # other names may come (twice): judged as may repeat
    assert twin_forgets_repeatable(c._state)  # type: ignore[arg-type]
    c = compile({"json_schema": CLOSED}, vocab)
    assert greedy.tokens(c, '[{"path":"abc"},{"path":"abx') is not None
    assert not twin_forgets_repeatable(c._state)  # type: ignore[arg-type]  # no name comes twice here


def test_twins_of_later_items_repeat(vocab: Vocab, greedy: Greedy) -> None:
    """Without maxItems the twin keeps no seen values, only a count capped where minItems and
    prefixItems stop mattering: a new item at the third and at the fourth position is one state (one
    memoised mask); with maxItems the count still tells them apart."""
    for schema, same in ((STRINGS, True), ({**STRINGS, "maxItems": 9}, False)):
        twins = []
        for prefix in ('["ab","cd","x', '["ab","cd","ef","x'):
            c = compile({"json_schema": schema}, vocab)
            assert greedy.tokens(c, prefix) is not None
            twins.append(twin_state(c._state))  # type: ignore[arg-type]
        assert (twins[0] is twins[1]) is same


def test_object_items_complete_where_their_brackets_close() -> None:
    """The rule for a forgotten object item: a token may complete it only where, read on from the
    item's text, it closes the item's outermost brace (a brace inside a string does not count)."""
    text = '{"v":["a}b", "c'  # inside a string, two levels deep
    rule = scan_brackets(text, 0, (0, False, False))[0]
    assert rule == (2, True, False)
    assert not _may_complete(b'"]', rule)
    assert not _may_complete(b'}"]', rule)  # the brace is inside the string
    assert _may_complete(b'"]}', rule)
    assert _may_complete(b'"], "w": 1},', rule)
    escaped = scan_brackets('{"v":"a\\', 0, (0, False, False))[0]  # ends after a backslash
    assert not _may_complete(b'"}', escaped)  # an escaped quote: still inside
    assert _may_complete(b'x"}', escaped)
    assert _may_complete(b'\xa9"]}', rule)  # a cut character (a lone continuation byte) is no bracket


def test_a_completed_item_is_checked_against_the_seen_ones_without_feeding(
    vocab: Vocab, greedy: Greedy
) -> None:
    """Inside an object item that may repeat a seen one, a token the twin allows keeps the twin's
    verdict when it completes the item as a new one or leaves it open; one that completes a duplicate,
    or holds a whole later item, is left to the exact state. Elsewhere the test does not apply."""
    for schema, stacks in ((OBJECTS, 1), (TWO_ARRAYS, 2)):
        c = compile({"json_schema": schema}, vocab)
        assert greedy.tokens(c, '[{"path":"a","n":1},{"path":"a","n":1') is not None
        assert len(c._state.stacks) == stacks  # type: ignore[union-attr]
        anew = _item_completed_anew(c._state, b"", trie_for(vocab))  # type: ignore[arg-type]
        assert anew is not None
        assert not anew(b"}")  # {"path":"a","n":1} again
        assert not anew(b"},")
        assert anew(b"2}")  # {"path":"a","n":12}
        assert anew(b"0")  # still open
        assert not anew(b"\xff}")  # not UTF-8 on its own: not judged here
        assert _item_completed_anew(c._state, b"\xc3", trie_for(vocab)) is None  # type: ignore[arg-type]
    later = later_item_tokens(trie_for(vocab))[1]
    assert later and not anew(later[0])
    c = compile({"json_schema": STRINGS}, vocab)
    assert greedy.tokens(c, '["ab","a') is not None  # a string item: its own rules
    assert _item_completed_anew(c._state, b"", trie_for(vocab)) is None  # type: ignore[arg-type]


def test_rules_judged_together_equal_each_rule_on_each_piece(vocab: Vocab) -> None:
    """The vectorised check over the real closing tokens, for string rules, bracket rules and both
    mixed, equals asking `_may_complete` of every piece and rule (the kept pieces only)."""
    _, pieces = closing_tokens(trie_for(vocab))
    keep = np.ones(len(pieces), dtype=np.bool_)
    keep[::3] = False
    strings = [frozenset({b"Win64", b"Mac"}), frozenset({b"", b"a b"})]
    brackets = [(1, True, False), (2, False, False), (1, True, True)]
    for rules in (strings, brackets, [strings[0], brackets[0]], [brackets[2], strings[1], brackets[1]]):
        want = [
            bool(k) and any(_may_complete(piece, rule) for rule in rules)
            for piece, k in zip(pieces, keep, strict=True)
        ]
        got = _may_complete_some(pieces, keep, rules)  # type: ignore[arg-type]
        assert got.tolist() == want, rules
        assert 0 < sum(want) < len(pieces)


def test_duplicates_still_never_complete(vocab: Vocab, tokenizer: Tokenizer) -> None:
    eog = min(vocab.eog_ids)
    for schema, text in (
        (OBJECTS, '[{"path":"a/b"},{"path":"c"},{"path":"a/b"}]'),
        (PATTERNS, '["x","y","x"]'),
        (STRINGS, '["", ""]'),
        (NESTED, '[["a","b"],["a","b"]]'),
    ):
        assert not force(
            compile({"json_schema": schema}, vocab), tokenizer.tokenize(text, parse_special=False), eog
        )
        ok = text.replace('"a/b"}]', '"a/c"}]').replace('"x"]', '"z"]').replace('""]', '"q"]')
        ok = ok.replace('["a","b"]]', '["b","a"]]')
        assert force(
            compile({"json_schema": schema}, vocab), tokenizer.tokenize(ok, parse_special=False), eog
        ), ok


def test_later_item_tokens_are_few(vocab: Vocab) -> None:
    """The tokens judged exactly on every uniqueItems mask: few, so that stays cheap."""
    ids, pieces = later_item_tokens(trie_for(vocab))
    assert len(ids) == len(pieces) <= 16
    assert all(holds_later_item(p) for p in pieces)
    assert holds_later_item(b'","",') and holds_later_item(b"1, 2]") and holds_later_item(b', {"a": 1}')
    assert holds_later_item(b", 12")  # a number may still go on: counted, to stay on the safe side
    assert not holds_later_item(b'", "') and not holds_later_item(b'"a", "b')
    # the same tokens as a scan of every piece, without the vectorised comma prefilter
    every = [key for key in trie_for(vocab).keys if holds_later_item(key)]
    assert sorted(pieces) == sorted(every)
