"""Constraints through the real Gemma 3 vocabulary: forcing, rejecting, and masks equal to brute force.

The benchmark (`benchmarks/structured.py`) runs all 230 schemas; here a fixed sample (every 8th) keeps
the folder fast. Instances are serialised with keys in schema order, the order the constraint enforces.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import numpy as np
import pytest

from tests.unit.constrain.conftest import Greedy, force, mask_ids
from tests.unit.constrain.test_probes import PROBED, PROBED_NUMBER
from tokenloom.constrain import compile
from tokenloom.constrain.constraint import HORIZON
from tokenloom.constrain.mask import feed_bytes
from tokenloom.constrain.order import schema_order
from tokenloom.engine.vocab import Tokenizer, Vocab
from tokenloom.errors import GrammarError

# valid instances we cannot force, and why (see the report; the benchmark lists all of them)
KNOWN_GAPS: dict[str, str] = {}


def _texts(data: Any) -> list[str]:
    return [
        json.dumps(data, ensure_ascii=False, separators=(",", ":")),
        json.dumps(data, ensure_ascii=False, indent=2),
        json.dumps(data),
    ]


def test_bench_sample(
    bench_rows: list[dict[str, Any]], vocab: Vocab, tokenizer: Tokenizer, greedy: Greedy
) -> None:
    eog = min(vocab.eog_ids)
    problems: list[str] = []
    compiled = 0
    for row in bench_rows[::8]:
        spec = {"json_schema": row["schema"]}
        try:
            c0 = compile(spec, vocab)
        except GrammarError:
            continue
        compiled += 1
        for test in row["tests"]:
            for text in _texts(schema_order(test["data"], row["schema"])):
                by_tokenizer = force(compile(spec, vocab), tokenizer.tokenize(text, parse_special=False), eog)
                c = compile(spec, vocab)
                by_greedy = greedy.tokens(c, text) is not None and force(c, [], eog)
                if test["valid"] and row["id"] not in KNOWN_GAPS and not (by_tokenizer and by_greedy):
                    problems.append(f"{row['id']}: valid not forced: {text[:80]}")
                if not test["valid"] and not c0.unenforced and (by_tokenizer or by_greedy):
                    problems.append(f"{row['id']}: invalid completed: {text[:80]}")
    assert compiled >= 25
    assert not problems, "\n".join(problems)


def _brute_force(c: Any, vocab: Vocab) -> set[int]:
    st, pending = c._state, c._pending
    out = set()
    for tid, piece in enumerate(vocab.pieces):
        if tid in vocab.special_ids or not piece:
            continue
        if feed_bytes(st, pending, piece)[0] is not None:
            out.add(tid)
    if c.is_accepting():
        out |= set(vocab.eog_ids)
    return out


def assert_mask_is_exact(schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy) -> None:
    """Write `prefix` greedily under `schema`: the mask then allows exactly the tokens that feeding
    each one by one accepts."""
    c = compile({"json_schema": schema}, vocab)
    assert greedy.tokens(c, prefix) is not None
    mask = c.allowed()
    assert mask is not None
    assert mask_ids(mask) == _brute_force(c, vocab)


@pytest.mark.parametrize(
    ("schema", "checked", "shared"),
    [
        # 20 chars read, 25 still allowed: masked as a string of 0 chars (maxLength far away)
        ({"type": "string", "maxLength": 45}, (0, 20, 24), 20),
        # the counted repeat at 15 chars behaves as at 0 over the next HORIZON chars
        ({"type": "string", "pattern": "^[ a-z]{40}$"}, (1, 15, 25), 15),
    ],
)
def test_long_tokens_are_judged_from_the_state_not_its_representative(
    schema: dict[str, Any], checked: tuple[int, ...], shared: int, vocab: Vocab
) -> None:
    """States that agree on the next HORIZON chars share a mask; a token of LONG_CHARS chars or more
    (31 spaces, here allowed at the start of the string but too long later) is judged from the state."""
    quote, letter, spaces = (vocab.pieces.index(p) for p in (b'"', b"a", b" " * 31))
    c = compile({"json_schema": schema}, vocab)
    c.advance(quote)
    for n in range(max(checked) + 1):
        mask = c.allowed()
        assert mask is not None
        if n in checked:
            assert mask_ids(mask) == _brute_force(c, vocab), f"after {n} chars"
        if n == shared:
            assert c._state.mask_rep(HORIZON) is not c._state  # the representative's mask was used
            assert not mask[spaces]
        if n == 0:
            assert mask[spaces]
        c.advance(letter)


WALK_SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "n": {"type": "integer"}}},
    {
        "type": "array",
        "items": {"anyOf": [{"type": "number", "minimum": -5, "maximum": 50}, {"enum": ["x", "yy"]}]},
    },
    {
        "type": "object",
        "properties": {"id": {"type": "string", "pattern": "^[a-f0-9]+$"}},
        "required": ["id"],
    },
    {"type": "array", "items": {"type": "string", "pattern": "^[0-9a-f]{3,5}$"}},
]


@pytest.mark.parametrize("schema", WALK_SCHEMAS)
def test_mask_equals_brute_force_on_random_walks(schema: dict[str, Any], vocab: Vocab) -> None:
    rng = random.Random(7)
    c = compile({"json_schema": schema}, vocab)
    for step in range(24):
        mask = c.allowed()
        assert mask is not None
        allowed = mask_ids(mask)
        if step in (0, 2, 5, 11):
            assert allowed == _brute_force(c, vocab), f"step {step}"
        assert not allowed & (vocab.special_ids - vocab.eog_ids)
        choices = sorted(allowed - vocab.eog_ids)
        if not choices:
            break
        # prefer short pieces so the walk visits many states
        short = [t for t in choices if len(vocab.pieces[t]) <= 2] or choices
        c.advance(rng.choice(short))


def test_regex_and_text_masks_equal_brute_force(vocab: Vocab) -> None:
    c = compile({"regex": r"[A-Z][a-z]{0,3}( [0-9]+)?!"}, vocab)
    for tid in (vocab.pieces.index(b"H"),):
        assert mask_ids(c.allowed()) == _brute_force(c, vocab)  # type: ignore[arg-type]
        c.advance(tid)
    assert mask_ids(c.allowed()) == _brute_force(c, vocab)  # type: ignore[arg-type]


def test_split_utf8_and_end_of_generation(vocab: Vocab) -> None:
    c = compile({"json_schema": {"type": "string", "maxLength": 2}}, vocab)
    by_piece = {p: i for i, p in reversed(list(enumerate(vocab.pieces)))}
    eog = sorted(vocab.eog_ids)
    c.advance(by_piece[b'"'])
    for byte in "😀".encode():  # byte-fallback tokens, one byte at a time
        mask = c.allowed()
        assert mask is not None and mask[by_piece[bytes((byte,))]] and not mask[eog].any()
        c.advance(by_piece[bytes((byte,))])
    mask = c.allowed()
    assert mask is not None and mask[by_piece[b'"']] and mask[by_piece[b"a"]]
    c.advance(by_piece[b"a"])
    mask = c.allowed()
    assert mask is not None and not mask[by_piece[b"b"]] and mask[by_piece[b'"']]
    c.advance(by_piece[b'"'])
    mask = c.allowed()
    assert mask is not None and set(np.nonzero(mask)[0].tolist()) == set(eog)
    with pytest.raises(GrammarError):
        compile({"json_schema": {"type": "string"}}, vocab).advance(by_piece[b"x"])
    c2 = compile({"json_schema": {"type": "integer"}}, vocab)
    with pytest.raises(GrammarError):
        c2.advance(eog[0])  # nothing generated yet: cannot end


# Texts that drive the fast paths of the walk: names that may be additional properties (delegation),
# anyOf objects (several stacks), an unanchored pattern (a run that changes state), bounded strings
# and escapes (tails checked through the tail trie).
FORCED_WALKS: list[tuple[dict[str, Any], str]] = [
    (
        {"type": "object", "properties": {"name": {"type": "string"}, "nick": {"type": "string"}}},
        '{"name":"Ann \\"A\\"","nickel":3, "nick" :"x\\u00e9"}',
    ),
    (
        {
            "anyOf": [
                {"type": "object", "properties": {"kind": {"const": "a"}, "size": {"type": "integer"}}},
                {"type": "object", "properties": {"kind": {"const": "b"}, "label": {"type": "string"}}},
            ]
        },
        '{"kind":"b","label":"hi there","other":[1,"two"]}',
    ),
    (
        {"type": "object", "properties": {"hash": {"type": "string", "pattern": "[A-Fa-f0-9]{8}"}}},
        '{"hash":"see: 0011AAbbCCdd, ok"}',
    ),
    (
        {"type": "array", "items": {"type": "string", "pattern": "^\\S+@\\S+$"}},
        '["ann@example.org","a@b@c","x\\u00e9@\\u00e9"]',
    ),
    (
        {"type": "array", "items": {"type": "string", "maxLength": 9}},
        '["abc","abcdefghi","\\n\\t x",""]',
    ),
]


@pytest.mark.parametrize(("schema", "text"), FORCED_WALKS)
def test_mask_equals_brute_force_along_forced_texts(
    schema: dict[str, Any], text: str, vocab: Vocab, tokenizer: Tokenizer
) -> None:
    c = compile({"json_schema": schema}, vocab)
    tokens = tokenizer.tokenize(text, parse_special=False)
    for step, tid in enumerate(tokens):
        mask = c.allowed()
        assert mask is not None
        if step % 3 == 0 or step == len(tokens) - 1:
            assert mask_ids(mask) == _brute_force(c, vocab), f"step {step}"
        assert mask[tid], f"step {step}: token {vocab.pieces[tid]!r} of a valid text was masked"
        c.advance(tid)
    assert c.is_accepting()


_KNOWN_AND_MORE: dict[str, Any] = {
    "type": "object",
    "properties": {
        name: {"type": "object"} if name.startswith("conf") else {"type": "integer"}
        for name in ("content", "compilationOptions", "commands", "configurations", "compile", "name", "é-ü")
    },
    "additionalProperties": {"type": "string", "maxLength": 4},
}

_REFUSED_TUPLES: dict[str, Any] = {  # popxf's names: anything but a stringified tuple
    "type": "object",
    "propertyNames": {"not": {"$ref": "#/definitions/tuple"}},
    "additionalProperties": {"type": "integer"},
    "definitions": {"tuple": {"type": "string", "pattern": "^\\(\\s*'[^']*'\\s*(,\\s*'[^']*'\\s*)*\\)$"}},
}

_ONE_OF_PATTERN: dict[str, Any] = {  # rust-toolchain's channel, inside an object whose oneOf overlaps
    "type": "object",
    "properties": {"c": {"type": "string", "pattern": "^(?:stable|\\d+(?:\\.\\d+){1,2})(?:-[a-z]+)?$"}},
    "oneOf": [{"required": ["c"]}, {"required": ["d"]}],
}

_RELATIVE_PATH: dict[str, Any] = {
    "type": "object",
    "properties": {"p": {"type": "string", "minLength": 1, "not": {"pattern": "^(?:[A-Za-z]:|/|\\\\)"}}},
}

CHECKED_PREFIXES: list[tuple[dict[str, Any], str]] = [
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, '["ab", "a'),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, '["ab", "ab'),
    ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "[12, 1"),
    (
        {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}], "additionalProperties": True},
        '{"a": 1, "x": "y',
    ),
    ({"oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^a"}]}, '"ab'),
    (
        {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
        '{"x-ab',
    ),
    ({"type": "number", "multipleOf": 0.25}, "12."),
    ({"type": "string", "not": {"enum": ["none"]}}, '"non'),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, '["ab", "xy'),
    (
        {
            "type": "object",
            "patternProperties": {"^[a-z]{2,8}(-[A-Z]{2})?$": {}},
            "additionalProperties": False,
        },
        '{"enab',
    ),
    ({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, '{"a": 1, "'),
    ({"type": "string", "format": "regex"}, '"'),
    ({"type": "string", "pattern": "^$|^[^/](.+)[^/]$"}, '"'),
    # known names with additional ones allowed: tokens leaving a known name's path on the way go on
    # in the additional name's run (delegation)
    (_KNOWN_AND_MORE, '{"'),
    (_KNOWN_AND_MORE, '{"co'),
    (_KNOWN_AND_MORE, '{"content": 1, "configurations": {}, "com'),
    # the bulk check judges tokens as an additional name; '_"' stays on the path of "a_", a name
    # already given, and must be refused although an additional name could end there
    (
        {"type": "object", "properties": {"a_": {"type": "integer"}}, "additionalProperties": True},
        '{"a_": 1, "a',
    ),
    # a pattern whose loop (the free state most chars go to) takes chars that another branch refuses:
    # "ac" starts the branch of "ab", which refuses the "c" the [a-z]* loop would take
    ({"type": "string", "pattern": "^(ab|[c-z][a-z]*)$"}, '"'),
    # whitespace between tokens: a token's leading whitespace and its rest are judged apart (the rest
    # from the state below); near the cap on whitespace, and in pretty JSON two containers deep
    (
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "boolean"}}}},
        '{"a": [true,' + " " * 10,
    ),
    (  # the same state below with more room: its padded tokens are memoised, sorted by whitespace
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "boolean"}}}},
        '{"a": [true, ',
    ),
    ({"type": "object", "properties": {"a": {"type": "object"}}}, '{\n    "a": {\n        "b": 1\n   '),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, '["ab",   '),
    (  # two parses (one per anyOf branch), each between tokens
        {
            "anyOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}},
                {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2}}},
            ]
        },
        '{"a":  ',
    ),
    # names a pattern refuses (propertyNames `not`, patternProperties {P: false}): never closed, and
    # refused at once where the pattern matches whatever follows; the name runs make no claim there
    (_REFUSED_TUPLES, '{"'),
    (_REFUSED_TUPLES, "{\"('x"),
    (_REFUSED_TUPLES, "{\"('x' "),
    ({"type": "object", "propertyNames": {"not": {"pattern": "foo"}}}, '{"xf'),
    (
        {
            "type": "object",
            "patternProperties": {"^[a-z]+$": {"type": "integer"}, "ab": False},
            "additionalProperties": False,
        },
        '{"a',
    ),
    # a pattern string read by both branches of an overlapping oneOf: the pattern pass judges its
    # tokens for the combination (tokens closing it go on in each branch)
    (_ONE_OF_PATTERN, '{"c": "1.'),
    (_ONE_OF_PATTERN, '{"c": "1.2'),
    (_ONE_OF_PATTERN, '{"c": "stable-'),
    # `not` over a string's start beside minLength 1 (codex's relative paths): chars the negated pattern
    # cannot start with hand the string to its own run from the first char
    (_RELATIVE_PATH, '{"p": "'),
    (_RELATIVE_PATH, '{"p": "C'),
    # conditions on an earlier property: an object P read as usual, its checked values (a string run
    # their checks share) beside checks, P's end resuming the object around it; a scalar P that may go
    # on or end; after the verdicts picked the later property's schema
    (PROBED, '{"meta": {"kind": "a'),
    (PROBED, '{"meta": {"n": 1'),
    (PROBED, '{"meta": {"kind": "a"}'),
    (PROBED, '{"meta": {"kind": "a"}, "data": {"'),
    (PROBED, '{"meta": {"n": 1}, "data": {"y": 1'),
    (PROBED_NUMBER, '{"meta": 12'),
    (PROBED_NUMBER, '{"meta": 12, "data": "a'),
    (PROBED_NUMBER, '{"meta": -3, "data": "a'),
]


@pytest.mark.parametrize(("schema", "prefix"), CHECKED_PREFIXES)
def test_checked_keywords_masks_equal_brute_force(
    schema: dict[str, Any], prefix: str, vocab: Vocab, greedy: Greedy
) -> None:
    assert_mask_is_exact(schema, prefix, vocab, greedy)


def test_no_token_completes_a_later_item_after_run_chars(vocab: Vocab) -> None:
    """`json_unique` declares string runs of items unchanged once they cannot repeat a seen item;
    that is exact as long as no token holds run chars, then a whole next string item."""
    later_item = re.compile(rb'[^"\\]"\s*,\s*"(?:[^"\\]|\\.)*"')
    assert [p for p in vocab.pieces if p and later_item.search(p)] == []


@pytest.mark.parametrize("prefix", ["[", "[1, ", '[1, "a', '[1, "a", 2'])
def test_masks_inside_an_array_with_contains_are_exact(prefix: str, vocab: Vocab, greedy: Greedy) -> None:
    """Each item is read two ways (counted toward contains or not) until one is counted: the mask of
    that two-stack state, and of the state after, must equal feeding every token."""
    schema = {"type": "array", "items": {"type": ["integer", "string"]}, "contains": {"type": "string"}}
    assert_mask_is_exact(schema, prefix, vocab, greedy)


def test_contains_under_max_items_leaves_no_dead_end(vocab: Vocab, greedy: Greedy) -> None:
    """With one item left under maxItems and nothing counted yet, the item must be the one contains asks
    for: any other would leave an array that can neither close nor grow."""
    schema = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "maxItems": 3}
    schema["contains"] = {"const": 3}
    assert_mask_is_exact(schema, "[1, 2, ", vocab, greedy)
    c = compile({"json_schema": schema}, vocab)
    assert greedy.tokens(c, "[1, 2, ") is not None
    mask = c.allowed()
    assert mask is not None
    assert mask[vocab.pieces.index(b"3")] and not mask[vocab.pieces.index(b"4")]


@pytest.mark.parametrize("prefix", ["[", '["a", ', '["a", 1, '])
def test_masks_under_max_contains_are_exact(prefix: str, vocab: Vocab, greedy: Greedy) -> None:
    """With maxContains an uncounted item is read against `not contains`: once the one string allowed
    is there, no other string may start."""
    schema = {"type": "array", "items": {"type": ["integer", "string"]}, "contains": {"type": "string"}}
    schema["maxContains"] = 1
    assert_mask_is_exact(schema, prefix, vocab, greedy)
    c = compile({"json_schema": schema}, vocab)
    assert greedy.tokens(c, prefix) is not None
    mask = c.allowed()
    assert mask is not None
    assert bool(mask[vocab.pieces.index(b'"')]) == (prefix == "[")
