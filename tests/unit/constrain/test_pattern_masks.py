"""Pattern strings masked by the pattern's DFA over the whole vocabulary (constrain/pattern_mask.py): the
slow shapes of issue 12 and the edges of that path (maxLength near its cap, minLength at the quote,
escapes, non-ASCII classes, a string at the top level), each mask compared with feeding every token."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.constrain.conftest import Greedy, mask_ids
from tests.unit.constrain.test_vocab_masks import _brute_force
from tokenloom.constrain import compile
from tokenloom.constrain.charset import JSON_STRING_FREE
from tokenloom.constrain.formats import FORMATS
from tokenloom.constrain.pattern_mask import (
    MAX_STRIKES,
    PROBE_EVERY,
    costly_patterns,
    pattern_verdict,
    table_for,
)
from tokenloom.constrain.regex import Regex
from tokenloom.constrain.trie import trie_for
from tokenloom.engine.vocab import Tokenizer, Vocab

# The shapes that took 0.2 s to 62 s per mask on the outside checker's hidden set (issue 12), with an
# instance each; every mask along the instance is checked.
ISSUE_SHAPES: list[tuple[str, dict[str, Any], str]] = [
    (
        "look-arounds and nested counted repeats under oneOf",
        {
            "type": "object",
            "properties": {
                "code": {
                    "oneOf": [
                        {
                            "type": "string",
                            "pattern": "^(?=.*[A-Z])(?=.*[0-9])(?!.*--)"
                            "(?:[A-Za-z0-9]{2,4}(?:-[A-Za-z0-9]{1,3}){0,3}){1,4}$",
                        },
                        {"type": "integer", "minimum": 0},
                    ]
                }
            },
            "required": ["code"],
        },
        '{"code": "AB12-x-yz"}',
    ),
    (
        "words with maxLength",
        {"type": "string", "pattern": "^(?:\\S+\\s+){0,9}\\S+$", "maxLength": 30},
        '"the quick brown fox jumps over"',
    ),
    (
        "format uri under anyOf and $ref",
        {
            "$defs": {"link": {"type": "string", "format": "uri"}},
            "type": "array",
            "items": {"anyOf": [{"$ref": "#/$defs/link"}, {"type": "null"}]},
        },
        '["https://example.org/a?b=c", null]',
    ),
    (
        "oneOf of an enum and two patterns",
        {
            "oneOf": [
                {"enum": ["small", "large"]},
                {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(px|em|%)$"},
                {"type": "string", "pattern": "^calc\\([^()]{1,40}\\)$"},
            ]
        },
        '"calc(100% - 2px)"',
    ),
    (
        "uniqueItems over oneOf items",
        {
            "type": "array",
            "uniqueItems": True,
            "items": {
                "oneOf": [{"type": "string", "pattern": "^[a-z][a-z0-9-]{0,20}$"}, {"type": "integer"}]
            },
        },
        '["alpha", 3, "beta-2"]',
    ),
]

# format "regex" (schemastore/xs-app): its whole DFA has over 200k states, so the table is filled only
# where the vocabulary's tokens go (34.9 s for the mask before `^` when it was explored whole).
ISSUE_SHAPES.append(
    (
        "format regex, a DFA too big to build whole",
        {"type": "object", "properties": {"source": {"type": "string", "format": "regex"}}},
        '{"source": "^/odata/(.*)$"}',
    )
)

# The edges of the DFA path: room under maxLength smaller than the longest token, minLength reached
# only at the quote, JSON escapes the pattern takes or refuses, non-ASCII classes, a top-level string.
EDGES: list[tuple[str, dict[str, Any], str]] = [
    ("maxLength near the cap", {"type": "string", "pattern": "^[a-z ]+$", "maxLength": 12}, '"hello wor'),
    ("minLength at the quote", {"type": "string", "pattern": "^[a-z]*$", "minLength": 6}, '"abcd'),
    ("escapes the pattern takes", {"type": "string", "pattern": "^[^x]*$"}, '"a\\n\\"b'),
    ("escapes the pattern refuses", {"type": "string", "pattern": "^[a-z]+$"}, '"ab'),
    (
        "non-ASCII class",
        {"type": "string", "pattern": "^[\u0430-\u044f\u0451]+( [\u0430-\u044f\u0451]+)*$"},
        '"привет м',
    ),
    (
        "quote followed by more structure",
        {
            "type": "object",
            "properties": {"a": {"type": "string", "pattern": "^x+$"}, "b": {"type": "integer"}},
        },
        '{"a": "xx',
    ),
]


def _follow_and_check(c: Any, tokens: list[int], vocab: Vocab, every: int) -> None:
    for step, tid in enumerate(tokens):
        mask = c.allowed()
        assert mask is not None
        if step % every == 0:
            assert mask_ids(mask) == _brute_force(c, vocab), f"step {step}"
        assert mask[tid], f"step {step}: token {vocab.pieces[tid]!r} of a valid text was masked"
        c.advance(tid)


@pytest.mark.parametrize(("name", "schema", "text"), ISSUE_SHAPES, ids=[s[0] for s in ISSUE_SHAPES])
def test_issue_shapes_masks_equal_brute_force(
    name: str, schema: dict[str, Any], text: str, vocab: Vocab, tokenizer: Tokenizer
) -> None:
    c = compile({"json_schema": schema}, vocab)
    _follow_and_check(c, tokenizer.tokenize(text, parse_special=False), vocab, every=2)
    assert c.is_accepting()


@pytest.mark.parametrize(("name", "schema", "prefix"), EDGES, ids=[s[0] for s in EDGES])
def test_pattern_path_edges_equal_brute_force(
    name: str, schema: dict[str, Any], prefix: str, vocab: Vocab, tokenizer: Tokenizer
) -> None:
    c = compile({"json_schema": schema}, vocab)
    _follow_and_check(c, tokenizer.tokenize(prefix, parse_special=False), vocab, every=1)
    assert mask_ids(c.allowed()) == _brute_force(c, vocab)  # type: ignore[arg-type]


def test_unicode_escape_digits_lead_only_to_chars_the_pattern_takes(vocab: Vocab, greedy: Greedy) -> None:
    """`"\\u00` under `^ku-`: only `6` (towards `\\u006b`, "k") may follow, so no escape can dead-end."""
    c = compile({"json_schema": {"type": "string", "pattern": "^ku-[a-z0-9]{12}$"}}, vocab)
    assert greedy.tokens(c, '"\\u00') is not None
    mask = c.allowed()
    assert mask is not None
    allowed = mask_ids(mask)
    assert allowed == _brute_force(c, vocab)
    by_piece = {p: i for i, p in reversed(list(enumerate(vocab.pieces)))}
    assert by_piece[b"6"] in allowed and by_piece[b"7"] not in allowed
    assert greedy.tokens(c, "6b") is not None
    assert mask_ids(c.allowed()) == _brute_force(c, vocab)  # type: ignore[arg-type]


def test_format_regex_table_holds_only_the_cells_tokens_reach(vocab: Vocab) -> None:
    """The verdict from the start of format "regex" needs a few dozen DFA states, not its 200k+."""
    regex = Regex(FORMATS["regex"])
    trie = trie_for(vocab)
    got = pattern_verdict(trie, regex.initial)
    assert got is not None
    table = table_for(regex, trie)
    assert len(table.states) < 1000
    filled = table.table[2 : len(table.states) + 2, : table.keep]
    assert (filled == -1).any()  # some cells were never needed, so never computed


# Object keys under a counted pattern (schemastore/aws-cdk-appconfig-featureflags: 4-5.6 s per mask
# inside such a key, the walk visiting ~160k trie nodes one by one): `[^\n]{1,64}` is wider than the
# chars a JSON string takes raw, and its string chars are now the key's bounded run. With known names
# beside the pattern the name is followed char by char first; without, it is free from its first char.
KEY_SHAPES: list[tuple[str, dict[str, Any], str]] = [
    (
        "counted pattern key, no known names",
        {
            "type": "object",
            "patternProperties": {"^[^\\n]{1,64}$": {"type": "integer"}},
            "additionalProperties": False,
        },
        '{"allow-crypto-at-checkout": 1, "x\\"y": 2}',
    ),
    (
        "counted pattern key beside known names",
        {
            "type": "object",
            "properties": {"allow": {"type": "integer", "minimum": 0}},
            "patternProperties": {"^[a-z-]{2,12}$": {"type": "integer"}},
            "additionalProperties": False,
        },
        '{"allow":1,"allowed-x":3}',
    ),
]


@pytest.mark.parametrize(("name", "schema", "text"), KEY_SHAPES, ids=[s[0] for s in KEY_SHAPES])
def test_pattern_keys_mask_equal_brute_force(
    name: str, schema: dict[str, Any], text: str, vocab: Vocab, tokenizer: Tokenizer
) -> None:
    c = compile({"json_schema": schema}, vocab)
    _follow_and_check(c, tokenizer.tokenize(text, parse_special=False), vocab, every=1)
    assert c.is_accepting()


def test_key_longer_than_its_counted_pattern_is_refused(vocab: Vocab, greedy: Greedy) -> None:
    c = compile(
        {
            "json_schema": {
                "type": "object",
                "patternProperties": {"^[a-z]{1,3}$": {}},
                "additionalProperties": False,
            }
        },
        vocab,
    )
    assert greedy.tokens(c, '{"abc') is not None
    mask = c.allowed()
    assert mask is not None
    allowed = mask_ids(mask)
    assert allowed == _brute_force(c, vocab)
    by_piece = {p: i for i, p in reversed(list(enumerate(vocab.pieces)))}
    assert by_piece[b'"'] in allowed and by_piece[b"d"] not in allowed


@pytest.mark.parametrize("pattern", ["é+[ü-ž]*[\u03b1-\u03c9]", "^(?:\\S+\\s+){0,3}\\S+$", ".{2}€[一-鿿]+"])
def test_verdict_equals_stepping_every_token(pattern: str, vocab: Vocab) -> None:
    """The whole-vocabulary pass steps each trie node once (a character at its last byte, so a lead
    byte shared by many characters decides nothing): every token's verdict equals stepping the DFA
    through its characters (raw inside a JSON string: no quote, backslash or control character), at
    the start and after one character."""
    regex = Regex(pattern)
    trie = trie_for(vocab)
    for state in (regex.initial, regex.initial.step(pattern[0] if pattern[0] != "^" else "a")):
        assert state is not None
        got = pattern_verdict(trie, state)
        assert got is not None
        inside = got[0].inside()
        for token_id, piece in enumerate(vocab.pieces):
            if token_id in vocab.special_ids or not piece:
                continue
            try:
                text = piece.decode("utf-8")
            except UnicodeDecodeError:
                assert not inside[token_id], piece
                continue
            at: Any = state
            for ch in text:
                at = None if at is None or not JSON_STRING_FREE.contains_cp(ord(ch)) else at.step(ch)
            assert inside[token_id] == (at is not None), piece


def test_walk_is_skipped_after_strikes_but_probed_now_and_then(vocab: Vocab) -> None:
    """A pattern whose new states keep going over the walk's budget stops paying for the try (the
    vectorised verdict starts at once), except on one new state in PROBE_EVERY; a probe the walk
    finishes makes it walk again."""
    trie = trie_for(vocab)
    regex = Regex("^[a-z]{1,20}(-[a-z]{1,20}){0,3}$")
    states = [regex.initial]
    for ch in "abcdefghijklmnop":
        nxt = states[-1].step(ch)
        assert nxt is not None
        states.append(nxt)
    costly = costly_patterns(trie, states[0])
    assert costly is costly_patterns(trie, states[3])  # one record per pattern and trie
    assert not costly.skip_walk(states[0])
    for d in states[:MAX_STRIKES]:
        costly.walked(d, over_budget=True)
    assert costly.skip_walk(states[0])  # it went over itself
    fresh = iter(states[MAX_STRIKES:])
    skipped = [costly.skip_walk(next(fresh)) for _ in range(PROBE_EVERY)]
    assert skipped == [True] * (PROBE_EVERY - 1) + [
        False
    ]  # new states skipped on the strikes alone, then a probe
    costly.walked(states[MAX_STRIKES + PROBE_EVERY - 1], over_budget=False)  # the probe finished
    assert not costly.skip_walk(next(fresh))
    assert costly.skip_walk(states[0])  # states found costly stay so


def test_last_chars_of_a_counted_run_of_any_char_in_a_name(vocab: Vocab, greedy: Greedy) -> None:
    """Two chars, then one, left of a name's `[^\\n]{1,8}`: the last one is a run of one char (walked
    char by char, it made a state for each of thousands of non-ASCII chars: 0.3 s for one mask). The
    masks equal feeding every token."""
    schema = {"type": "object", "patternProperties": {"^[^\\n]{1,8}$": {}}, "additionalProperties": False}
    for more in ("", "f"):
        c = compile({"json_schema": schema}, vocab)
        assert greedy.tokens(c, '{"ab»cdé' + more) is not None
        run = c._state.free_run()
        assert run is not None and run[0].remaining == 2 - len(more), more  # a bounded run of the last chars
        mask = c.allowed()
        assert mask is not None
        assert mask_ids(mask) == _brute_force(c, vocab), more


@pytest.mark.parametrize("pattern", ["^[^\\n]{1,6}$", "^.{2,7}$"])
def test_a_counted_run_of_any_char_in_a_value_is_a_bounded_free_run(
    pattern: str, vocab: Vocab, greedy: Greedy
) -> None:
    """`.{1,64}` as a string value: the run takes quotes and backslashes too (written escaped), so its
    raw part is the string chars and the escaped ones leave it, checked one by one. At the start, in
    the middle, after an escaped quote and with one char left, the masks equal feeding every token."""
    schema = {"type": "string", "pattern": pattern}
    for text in ('"', '"a»', '"a\\"b', '"ab\\\\»c'):
        c = compile({"json_schema": schema}, vocab)
        assert greedy.tokens(c, text) is not None
        run = c._state.free_run()
        assert run is not None and run[0].remaining is not None, text  # a bounded run, not a pattern pass
        assert run[0].klass == JSON_STRING_FREE
        mask = c.allowed()
        assert mask is not None
        assert mask_ids(mask) == _brute_force(c, vocab), text
