"""No allowed text leads into a state with no way on (issue 12's random-policy dead ends).

feed-1: a property name under `patternProperties` `^_[a-zA-Z]...` with no additional names let `"\\uad0`
through: every hex digit after it made a char no name takes, so the mask was empty. uri-anyof-ref: a
token ending in the bytes ED A3 (the start of a UTF-16 surrogate's encoding, which UTF-8 never has)
was allowed inside a string. Each reachable state must have a next char (or be complete)."""

from __future__ import annotations

import codecs
from typing import Any

import pytest

from tests.unit.constrain.chars import initial, schema_accepts
from tests.unit.constrain.conftest import Greedy, mask_ids
from tests.unit.constrain.test_vocab_masks import _brute_force
from tokenloom.constrain import compile
from tokenloom.constrain.charset import utf8_prefix_range
from tokenloom.constrain.parser import ParserState, feed_text
from tokenloom.engine.vocab import Vocab

PATTERN_NAMES = {
    "type": "object",
    "additionalProperties": False,
    "patternProperties": {"^_[a-zA-Z]([^.]+)$": {"type": "integer"}},
    "properties": {"hubs": {"type": "array"}},
}
PATTERN_VALUE = {"type": "string", "pattern": "^[a-z]+$"}
KNOWN_NAMES = {"type": "object", "properties": {"name": {"type": "string"}}, "additionalProperties": False}
EMOJI_ONLY = {"type": "string", "pattern": "^[\U0001f600-\U0001f64f]*$"}


def _sample(chars: Any) -> list[str]:
    """Every ASCII char of the set and both ends of each other range: enough to reach each escape state."""
    out = []
    for lo, hi in chars.ranges:
        out += [chr(c) for c in range(lo, min(hi, 0x7F) + 1)]
        if hi > 0x7F:
            out += [chr(max(lo, 0x80)), chr(hi)]
    return out


def _dead_ends(start: ParserState, depth: int) -> list[str]:
    """Texts of up to `depth` chars from `start` that reach a state which is neither complete nor able
    to take any char."""
    dead: list[str] = []
    frontier = [("", start)]
    seen = {start}
    for _ in range(depth):
        nxt = []
        for text, st in frontier:
            for c in _sample(st.allowed_chars()):
                after = st.add_char(c)
                if after is None or after in seen:
                    continue
                seen.add(after)
                if not after.can_end() and not any(after.add_char(d) for d in _sample(after.allowed_chars())):
                    dead.append(text + c)
                nxt.append((text + c, after))
        frontier = nxt
    return dead


@pytest.mark.parametrize(
    ("schema", "prefix"),
    [
        (PATTERN_NAMES, '{"'),
        (PATTERN_NAMES, '{"_a'),
        (PATTERN_VALUE, '"a'),
        (KNOWN_NAMES, '{"'),
        (EMOJI_ONLY, '"'),
    ],
)
def test_no_escape_leads_nowhere(schema: dict[str, Any], prefix: str) -> None:
    start = feed_text(initial({"json_schema": schema}), prefix)
    assert start is not None
    assert _dead_ends(start, 7) == []


def test_escapes_that_keep_the_text_alive_still_pass() -> None:
    assert schema_accepts(PATTERN_NAMES, '{"\\u005fA\\u00e9":1}')  # "_Aé"
    assert schema_accepts(PATTERN_NAMES, '{"_x\\n":2}')
    assert not schema_accepts(PATTERN_NAMES, '{"\\u0061b":1}')  # "ab": no name takes it
    assert schema_accepts(PATTERN_VALUE, '"a\\u0062c"')
    assert not schema_accepts(PATTERN_VALUE, '"a\\n"')
    assert feed_text(initial({"json_schema": PATTERN_VALUE}), '"a\\n') is None  # refused at the "n"
    assert feed_text(initial({"json_schema": EMOJI_ONLY}), '"\\') is None  # no escape writes an emoji


def test_feed_1_dead_end_mask(vocab: Vocab, greedy: Greedy) -> None:
    """The benchmark's dead end: `uad` after `{"hubs":[],"\\` left only digits that kill the name."""
    c = compile({"json_schema": PATTERN_NAMES}, vocab)
    assert greedy.tokens(c, '{"hubs":[],"\\') is not None
    mask = c.allowed()
    assert mask is not None
    uad = vocab.pieces.index(b"uad")
    assert not mask[uad]
    assert mask_ids(mask) == _brute_force(c, vocab)


def test_no_surrogate_prefix_is_a_character_start() -> None:
    assert utf8_prefix_range(b"\xed\xa3") is None  # U+D8C0..U+D8FF: surrogates, never encoded
    assert utf8_prefix_range(b"\xed") == (0xD000, 0xD7FF)
    assert utf8_prefix_range(b"\xed\x9f") == (0xD7C0, 0xD7FF)


def test_string_masks_allow_only_completable_utf8(vocab: Vocab) -> None:
    c = compile({"json_schema": {"type": "string"}}, vocab)
    mask = c.allowed()
    assert mask is not None
    c.advance(vocab.pieces.index(b'"'))
    mask = c.allowed()
    assert mask is not None
    broken = []
    for tid in mask.nonzero()[0].tolist():
        try:
            codecs.getincrementaldecoder("utf-8")().decode(vocab.pieces[tid], final=False)
        except UnicodeDecodeError:
            broken.append(vocab.pieces[tid])
    assert broken == []
    assert mask_ids(mask) == _brute_force(c, vocab)


@pytest.mark.parametrize(
    ("schema", "text"),
    [
        # a name whose schema is false: offered before, then nothing could follow its colon
        ({"type": "object", "properties": {"a": False, "b": {"type": "integer"}}}, '{"a"'),
        # the same from a negation: `not required` makes the branch "a is absent" (utam-page-object)
        ({"type": "object", "properties": {"a": {"type": "integer"}}, "not": {"required": ["a"]}}, '{"a"'),
    ],
)
def test_a_name_that_admits_no_value_is_not_offered(schema: dict[str, Any], text: str) -> None:
    """It stays claimed (an additional property may not take it either): the name cannot be closed."""
    assert feed_text(initial({"json_schema": schema}), text) is None
    assert schema_accepts(schema, '{"b": 1}')
    assert not schema_accepts(schema, '{"a": 1}')


# maxProperties with a required name not written yet: once the slots left are all needed by missing
# required names, the next name must be one of them (dep8 wrote two pattern names before its required
# "a", and the object could neither end nor take a third name)
TIGHT_PATTERNS = {
    "type": "object",
    "patternProperties": {"^[a-e]$": True},
    "additionalProperties": False,
    "required": ["a"],
    "maxProperties": 2,
}
TIGHT_EXTRA = {"type": "object", "properties": {"x": {}, "y": {}}, "required": ["y"], "maxProperties": 2}
TIGHT_ANY_ORDER = {
    "type": "object",
    "properties": {"p": {}, "q": {}, "r": {}},
    "required": ["q", "r"],
    "maxProperties": 3,
    "x-tokenloom-any-order": True,
}


@pytest.mark.parametrize(
    ("schema", "prefix", "refused", "taken"),
    [
        (TIGHT_PATTERNS, '{"b":1,"', "c", "a"),
        (TIGHT_PATTERNS, '{"b":1,"', "\\u0063", "a"),  # "c" as an escape
        (TIGHT_EXTRA, '{"x":1,"', "z", "y"),
        (TIGHT_EXTRA, '{"z":1,"', "x", "y"),  # an optional known name takes a slot too
        (TIGHT_ANY_ORDER, '{"p":1,"', "s", "r"),
        (TIGHT_ANY_ORDER, '{"p":1,"q":2,"', "s", "r"),
    ],
)
def test_the_last_slots_go_to_missing_required_names(
    schema: dict[str, Any], prefix: str, refused: str, taken: str
) -> None:
    start = feed_text(initial({"json_schema": schema}), prefix)
    assert start is not None
    assert feed_text(start, refused + '"') is None
    assert feed_text(start, taken + '"') is not None
    assert _dead_ends(start, 6) == []


def test_tight_slots_leave_valid_objects_alone() -> None:
    for schema, ok, bad in (
        (TIGHT_PATTERNS, ['{"a":1}', '{"b":1,"a":2}', '{"a":1,"e":2}'], ['{"b":1}', '{"b":1,"c":2}']),
        (TIGHT_EXTRA, ['{"y":1}', '{"x":1,"y":2}', '{"z":1,"y":2}', '{"y":1,"z":2}'], ['{"x":1,"z":2}']),
        (TIGHT_ANY_ORDER, ['{"r":1,"q":2}', '{"q":1,"p":2,"r":3}'], ['{"p":1,"s":2,"q":3}']),
    ):
        assert [schema_accepts(schema, t) for t in ok] == [True] * len(ok)
        assert [schema_accepts(schema, t) for t in bad] == [False] * len(bad)


@pytest.mark.parametrize(
    ("schema", "prefix"),
    [(TIGHT_PATTERNS, '{"b":1,"'), (TIGHT_EXTRA, '{"x":1,"'), (TIGHT_ANY_ORDER, '{"p":1,"')],
)
def test_tight_slot_masks_are_exact(
    schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy
) -> None:
    c = compile({"json_schema": schema}, vocab)
    assert greedy.tokens(c, prefix) is not None
    mask = c.allowed()
    assert mask is not None
    assert mask_ids(mask) == _brute_force(c, vocab)


def test_a_full_pattern_name_already_written_is_refused_at_once() -> None:
    """`"a` again after "a" was written: "^[a-e]$" takes nothing more and "a" is claimed (no closing
    quote), so the name was a dead end; now its last char is refused."""
    start = feed_text(initial({"json_schema": TIGHT_PATTERNS}), '{"a":1,"')
    assert start is not None
    assert feed_text(start, "a") is None
    assert feed_text(start, 'b"') is not None
    assert _dead_ends(start, 6) == []
