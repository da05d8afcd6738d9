"""A free class's index over the vocabulary (trie.FreeIndex) against a plain scan of every token."""

from __future__ import annotations

import pytest

from tests.unit.constrain.conftest import Greedy
from tests.unit.constrain.test_vocab_masks import assert_mask_is_exact
from tokenloom.constrain import compile, mask
from tokenloom.constrain.api import prepare_runs
from tokenloom.constrain.charset import JSON_STRING_FREE, CharSet
from tokenloom.constrain.json_containers import pattern_runs
from tokenloom.constrain.json_schema import SchemaCompiler
from tokenloom.constrain.mask import _group_tails, _root_tails
from tokenloom.constrain.regex import Regex
from tokenloom.constrain.schema_ir import Schema
from tokenloom.constrain.trie import FreeIndex, tails_trie, trie_for
from tokenloom.engine.vocab import Vocab

CLASSES = {
    "digits": CharSet.of("0123456789"),  # narrow: most tokens settled by their first and last bytes
    "string chars": JSON_STRING_FREE,  # wide: all non-ASCII in
    "latin letters": CharSet([(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F)]),  # some non-ASCII in
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_first_and_last_bad_bytes_match_a_plain_scan(name: str, vocab: Vocab) -> None:
    klass = CLASSES[name]
    trie = trie_for(vocab)
    index = FreeIndex(trie, klass)
    for row, key in enumerate(trie.keys):
        if trie.invalid[row]:
            continue  # not UTF-8 on its own: checked one by one by the walk, whatever its bytes
        bad: list[tuple[int, int]] = []  # (first byte, end) of each character outside the class
        at = 0
        for ch in key.decode("utf-8"):
            size = len(ch.encode("utf-8"))
            if not klass.contains_cp(ord(ch)):
                bad.append((at, at + size))
            at += size
        assert index.first_bad[row] == (min(len(key), bad[0][0]) if bad else len(key)), key
        assert index.last_bad[row] == (bad[-1][1] if bad else 0), key


def test_root_tail_selection_is_kept_per_set_of_spans_and_leaves_them_out(vocab: Vocab) -> None:
    """The root's tokens judged by their tail, outside the subtrees a delegated root walks itself:
    selected once per set of spans and index, and exactly the tail rows outside them."""
    trie = trie_for(vocab)
    index = FreeIndex(trie, JSON_STRING_FREE)
    children = trie.root.children(trie)
    spans = sorted((children[b].lo, children[b].hi) for b in (ord('"'), ord("\\")) if b in children)
    ids, tail_ids = _root_tails(index, trie, spans)
    assert _root_tails(index, trie, spans)[0] is ids  # kept, not selected again
    inside = [any(lo <= row < hi for lo, hi in spans) for row in index.tail_rows.tolist()]
    want = [row for row, out in zip(index.tail_rows.tolist(), inside, strict=True) if not out]
    assert sorted(ids.tolist()) == sorted(trie.ids[want].tolist())
    assert any(inside)  # the spans did leave rows out
    assert (tail_ids == index.tail_id[want]).all()
    whole, _ = _root_tails(index, trie, None)
    assert len(whole) == len(index.tail_rows)


@pytest.mark.parametrize("name", list(CLASSES))
def test_each_tail_row_is_numbered_by_its_own_tail(name: str, vocab: Vocab) -> None:
    """A mixed token's tail (from its first bad byte on) is judged through the tails trie by its
    number: the number must name that very tail, equal tails one number, and other rows none."""
    trie = trie_for(vocab)
    index = FreeIndex(trie, CLASSES[name])
    assert index.tails is not None and len(index.tail_rows)
    tail_of = dict(zip(index.tails.ids.tolist(), index.tails.keys, strict=True))
    assert len(tail_of) == len(index.tails.keys)  # each tail once
    for row in index.tail_rows.tolist():
        assert tail_of[int(index.tail_id[row])] == trie.keys[row][int(index.first_bad[row]) :]
    others = index.tail_id.copy()
    others[index.tail_rows] = -1
    assert (others == -1).all()


@pytest.mark.parametrize("byte", [ord(" "), ord("-"), 0xE0, 0xE3])
def test_group_tail_tries_know_which_tails_are_utf8(vocab: Vocab, byte: int) -> None:
    """A tails trie takes each tail's validity from its token where the tail starts a character (and
    decodes the rest): it must say what decoding every tail says, keep its keys sorted, and number
    each row by its own tail. Groups of plain and of multi-byte leaving bytes, under a narrow class."""
    trie = trie_for(vocab)
    index = FreeIndex(trie, CLASSES["digits"])
    rows = index.other_rows[int(index.other_bounds[byte]) : int(index.other_bounds[byte + 1])]
    assert len(rows) > 100
    tails, numbers = tails_trie(trie, rows, index.first_bad[rows])
    assert tails.keys == sorted(set(tails.keys)) and tails.ids.tolist() == list(range(len(tails.keys)))
    for row, number in zip(rows.tolist(), numbers.tolist(), strict=True):
        assert tails.keys[number] == trie.keys[row][int(index.first_bad[row]) :]
    for at, key in enumerate(tails.keys):
        try:
            key.decode("utf-8")
            assert not tails.invalid[at], key
        except UnicodeDecodeError:
            assert tails.invalid[at], key


def test_a_big_leaving_group_is_judged_through_its_tails(vocab: Vocab, greedy: Greedy) -> None:
    """A name pattern that reads "a" differently (a pattern written as "additionalProperties") makes a
    narrow run: the tokens holding an "a" leave it there, tens of thousands of them. They are judged by
    one walk over a trie of their tails, kept on the index, and the mask equals feeding every token."""
    schema = {
        "type": "object",
        "patternProperties": {"^.*$": {"type": "integer"}, "additionalProperties": {"type": "string"}},
    }
    for prefix in ('{"', '{"x'):
        assert_mask_is_exact(schema, prefix, vocab, greedy)
    built = [
        value
        for index in trie_for(vocab).free_indexes()
        for key, value in index.derived.items()
        if key == ("group tails", ord("a"))
    ]
    assert built
    tails, numbers = built[0]
    assert len(numbers) > 10_000 and len(tails.keys) < len(numbers)  # equal tails share one number


def test_group_tails_are_kept_up_to_a_bound(vocab: Vocab, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index keeps group tails for at most _GROUP_ROWS rows in all (a hostile stream of narrow
    classes must not fill memory with them); past it the group is fed token by token as before."""
    trie = trie_for(vocab)
    index = FreeIndex(trie, JSON_STRING_FREE - CharSet.of("ae"))  # narrow: "a" and "e" leave the run
    a, e = ord("a"), ord("e")
    size_a = int(index.other_bounds[a + 1] - index.other_bounds[a])
    size_e = int(index.other_bounds[e + 1] - index.other_bounds[e])
    assert size_a > 1_000 and size_e > 1_000
    monkeypatch.setattr(mask, "_GROUP_ROWS", size_a - 1)
    assert _group_tails(index, trie, a) is None
    monkeypatch.setattr(mask, "_GROUP_ROWS", size_a + size_e - 1)
    kept, again = _group_tails(index, trie, a), _group_tails(index, trie, a)
    assert kept is not None and again is not None
    assert again[0] is kept[0] and again[1] is kept[1]  # kept: the same tails trie and numbers
    assert _group_tails(index, trie, e) is None  # the two together are over the bound


# a class no other test reads: the loop of a pattern after its first char
_RARE_LOOP = CharSet([(ord("k"), ord("p"))])
_RARE_SCHEMA = {
    "type": "object",
    "properties": {"code": {"type": "string", "pattern": "^x[k-p]+$"}, "n": {"type": "integer"}},
    "required": ["code"],
}


def test_the_compile_builds_the_index_of_a_run_its_pattern_reaches(vocab: Vocab, greedy: Greedy) -> None:
    """A pattern's run after its first chars (`[k-p]+` after `x`) has its vocabulary index built by the
    compile, before any mask; the masks inside that string are still exact."""
    trie = trie_for(vocab)
    assert not trie.has_free_index(_RARE_LOOP)  # nothing built it before this test
    compile({"json_schema": _RARE_SCHEMA}, vocab)
    assert trie.has_free_index(_RARE_LOOP)
    assert_mask_is_exact(_RARE_SCHEMA, '{"code":"xk', vocab, greedy)
    assert_mask_is_exact(_RARE_SCHEMA, '{"code":"xkpl', vocab, greedy)


def test_pattern_runs_are_found_each_once_and_within_the_deadline() -> None:
    """The classes of the runs the pattern strings start in, each once (two strings of one pattern), and
    none past the deadline."""
    schema = {
        "type": "array",
        "prefixItems": [
            {"type": "string", "pattern": "^[0-9]+$"},
            {"type": "string", "pattern": "^a[b-d]*$"},
        ],
        "items": {"type": "string", "pattern": "^[0-9]+$"},
    }
    comp = SchemaCompiler(schema)
    comp.compile()
    nodes = list(comp.nodes.values())
    runs = pattern_runs(nodes, float("inf"))
    assert sorted(runs, key=str) == sorted(
        [CharSet.of("0123456789"), CharSet([(ord("b"), ord("d"))])], key=str
    )
    assert pattern_runs(nodes, 0.0) == []


def test_one_compile_builds_at_most_its_share_of_indexes(
    vocab: Vocab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past MAX_PREPARED_RUNS, the runs are left to the masks that first need them."""
    trie = trie_for(vocab)
    first, second = CharSet([(0x3B1, 0x3B3)]), CharSet([(0x3B4, 0x3B6)])  # Greek letters no other test reads
    patterns = [
        {"type": "string", "pattern": f"^[{chr(lo)}-{chr(hi)}]+$"}
        for lo, hi in (first.ranges + second.ranges)
    ]
    comp = SchemaCompiler({"type": "array", "prefixItems": patterns})
    root = comp.compile()
    assert not trie.has_free_index(first) and not trie.has_free_index(second)
    monkeypatch.setattr("tokenloom.constrain.api.MAX_PREPARED_RUNS", 1)
    [built] = prepare_runs((root,), trie)
    assert built in (first, second)
    assert trie.has_free_index(built) and not trie.has_free_index(second if built == first else first)


def test_a_pattern_at_its_automaton_bound_is_left_to_the_masks() -> None:
    """A pattern whose automaton has as many states as it may hold (here filled up to the bound) makes
    no run and no error at compile time: the masks meet the bound if the text gets there."""
    node = Schema()
    node.types = frozenset({"string"})
    node.regex = Regex("x[ab]*a[ab]{3}", search=True)
    assert pattern_runs([node], float("inf"))  # fresh: the search's run is found
    node.regex = full = Regex("x[ab]*a[ab]{3}", search=True)
    for i in range(50_001):  # the number of states Regex.dstate refuses to go past
        full._dstates[frozenset({-1 - i})] = full.initial
    assert pattern_runs([node], float("inf")) == []
