"""The compiled passes (constrain/_native.c) against their numpy versions, and against hostile arguments."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tokenloom.constrain.mask as mask_module
import tokenloom.constrain.pattern_mask as pattern_module
import tokenloom.constrain.trie as trie_module
from tests.unit.constrain.test_free_index import CLASSES
from tests.unit.constrain.test_pattern_masks import EDGES, ISSUE_SHAPES
from tokenloom.constrain.charset import CharSet
from tokenloom.constrain.formats import FORMATS
from tokenloom.constrain.mask import to_mask
from tokenloom.constrain.native import NATIVE
from tokenloom.constrain.pattern_mask import PatternTable, _TrieViews
from tokenloom.constrain.regex import Regex
from tokenloom.constrain.trie import ByteTrie, FreeIndex, scan_runs, trie_for
from tokenloom.engine.vocab import Vocab


def test_the_compiled_core_is_built() -> None:
    """The README's install compiles it (gcc is among its requirements); without it the masks fall back
    to numpy, right but slower, and the comparisons below would test nothing."""
    assert NATIVE is not None


def _bad_table(klass: CharSet) -> np.ndarray:
    return np.array([not klass.contains_cp(b) for b in range(128)] + [True] * 128, dtype=np.bool_)


@pytest.mark.parametrize("name", list(CLASSES))
def test_scan_matches_numpy(name: str, vocab: Vocab) -> None:
    trie = trie_for(vocab)
    table = _bad_table(CLASSES[name])
    flips = table.take(trie.flat)
    rng = random.Random(name)
    for at in rng.sample(range(len(flips)), 20_000):  # bad bytes no table could give
        flips[at] = not flips[at]
    for bad in (None, flips):
        got = scan_runs(trie, table, bad, native=True)
        want = scan_runs(trie, table, bad, native=False)
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])


_INDEX_FIELDS = (
    "first_bad", "last_bad", "first_bad_byte", "mixed_rows", "pure_id", "nchars_id", "max_pure_chars",
    "tail_rows", "tail_id", "other_rows", "other_bounds",
)  # fmt: skip


@pytest.mark.parametrize("name", [*CLASSES, "a narrow class leaving by quotes"])
def test_free_index_matches_numpy(name: str, vocab: Vocab, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole FreeIndex built by the compiled grouping and by numpy: on the vocabulary's trie and on
    the trie of rests after whitespace, with tails and without."""
    klass = CLASSES.get(name, CharSet.of("ab"))
    main = trie_for(vocab)
    for trie in (main, main.padding().rests):
        for with_tails in (True, False):
            got = FreeIndex(trie, klass, with_tails=with_tails)
            monkeypatch.setattr(trie_module, "NATIVE", None)
            want = FreeIndex(trie, klass, with_tails=with_tails)
            monkeypatch.undo()
            for field in _INDEX_FIELDS:
                assert np.array_equal(np.asarray(getattr(got, field)), np.asarray(getattr(want, field))), (
                    field
                )
            assert (got.tails and got.tails.keys) == (want.tails and want.tails.keys)
            assert len(got.other_rows) + len(got.tail_rows) == len(got.mixed_rows)


def _patterns() -> list[Regex]:
    found: list[str] = []

    def collect(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "pattern" and isinstance(value, str):
                    found.append(value)
                else:
                    collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    for _, schema, _ in ISSUE_SHAPES + EDGES:
        collect(schema)
    return [Regex(p, search=True, lenient=True) for p in found] + [Regex(f) for f in FORMATS.values()]


def test_dfa_run_matches_numpy(vocab: Vocab) -> None:
    """Every verdict (tokens inside, tokens closing, escapes) at the start of each pattern and after a
    few chars, by the compiled run and by the numpy one, each on a table of its own."""
    trie = trie_for(vocab)
    views = _TrieViews(trie)
    compared = 0
    for regex in _patterns():
        native, plain = PatternTable(regex, trie, views), PatternTable(regex, trie, views)
        plain.native = False
        at = regex.initial
        states = [at]
        for ch in "a0Z-./:x ":
            nxt = at.step(ch)
            if nxt is not None:
                at = nxt
                states.append(at)
        for d in states:
            got, want = native.verdict(d), plain.verdict(d)
            assert (got is None) == (want is None), regex.pattern
            if got is None or want is None:
                continue
            compared += 1
            assert np.array_equal(got.packed, want.packed), regex.pattern
            assert np.array_equal(got.quote_rows, want.quote_rows), regex.pattern
            assert np.array_equal(got.quote_ok, want.quote_ok), regex.pattern
            assert got.feed_rows == want.feed_rows, regex.pattern
    assert compared > 50


@pytest.mark.parametrize("spare", [1, 64])
def test_a_run_that_outgrows_its_reserved_rows_resumes(
    vocab: Vocab, spare: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled run asks for cells as it meets them but cannot follow a table that grows: with one
    spare row it stops at each new state past it and resumes after the table grows. Its verdicts
    still equal the numpy run's, on patterns of a few states and of many (counted repeats)."""
    monkeypatch.setattr(pattern_module, "_SPARE_ROWS", spare)
    trie = trie_for(vocab)
    views = _TrieViews(trie)
    for pattern in ("^[a-f0-9]{40}$", "^[^\\s]{1,20}-[0-9]{2,9}$", "(ab|cd)+x", "^.{0,30}\\.json$"):
        regex = Regex(pattern, search=True)
        native, plain = PatternTable(regex, trie, views), PatternTable(regex, trie, views)
        plain.native = False
        at = regex.initial
        for ch in "a" * 3:
            got, want = native.verdict(at), plain.verdict(at)
            assert got is not None and want is not None
            assert np.array_equal(got.packed, want.packed), pattern
            assert np.array_equal(got.quote_ok, want.quote_ok), pattern
            nxt = at.step(ch)
            if nxt is None:
                break
            at = nxt
        assert len(native.states) == len(plain.states) or spare == 1, pattern


def test_a_failing_cell_callback_raises(vocab: Vocab) -> None:
    """An exception in the cell callback ends the compiled run with that exception, not a wrong state."""
    assert NATIVE is not None
    n = 3
    zeros = np.zeros(n, dtype=np.int32)
    table = np.full((3, 2), -1, dtype=np.int32)
    no_parent = np.full(n, -1, dtype=np.int32)

    def broken(cell: int) -> int:
        raise RuntimeError(f"cell {cell}")

    with pytest.raises(RuntimeError, match="cell 4"):
        NATIVE.dfa_run(
            table, 2, 2, zeros[:1], zeros, no_parent, zeros, zeros, np.zeros(0, np.int32),
            np.zeros(n, np.int32), np.empty(n, np.int32), broken,
        )  # fmt: skip
    assert NATIVE.dfa_run(
        table, 2, 2, zeros[:1], zeros, no_parent, zeros, zeros, np.zeros(0, np.int32),
        np.zeros(n, np.int32), np.empty(n, np.int32), lambda cell: 2,
    ) == 0  # fmt: skip


def test_bad_arguments_raise_instead_of_reading_outside(vocab: Vocab) -> None:
    assert NATIVE is not None
    small = ByteTrie([(b"ab", 0), (b"c", 1)], 2)
    first = np.empty(2, dtype=np.int16)
    last = np.empty(2, dtype=np.int16)
    table = np.zeros(256, dtype=np.bool_)
    offsets = np.array([0, 7], dtype=np.int64)  # the second row past the end of the bytes
    with pytest.raises(ValueError):
        NATIVE.scan_runs(small.flat, table, np.zeros(0, np.bool_), offsets, small.lengths, first, last)
    with pytest.raises(ValueError):
        NATIVE.scan_runs(
            small.flat, table[:100], np.zeros(0, np.bool_), small.offsets, small.lengths, first, last
        )
    n = 3
    zeros = np.zeros(n, dtype=np.int32)
    far = np.array([0, 5, 0], dtype=np.int32)  # a child range past the last node
    run_table = np.full((3, 2), 2, dtype=np.int32)
    every = np.full(n, n, dtype=np.int32)  # each node's children are all the nodes: a cycle
    no_parent = np.full(n, -1, dtype=np.int32)
    roots = np.arange(n, dtype=np.int32)
    for kid_lo, kid_hi, start in ((zeros, far, 0), (zeros, zeros, 9), (zeros, every, 0)):
        with pytest.raises(ValueError):
            NATIVE.dfa_run(
                run_table, 2, start, zeros[:1], zeros, no_parent, kid_lo, kid_hi, roots,
                np.zeros(n, np.int32), np.empty(n, np.int32),
            )  # fmt: skip
    later = np.array([1, 2, -1], dtype=np.int32)  # a parent after its child: not a trie in order
    with pytest.raises(ValueError):
        NATIVE.dfa_run(
            run_table, 2, 0, zeros[:1], zeros, later, zeros, zeros, np.zeros(0, np.int32),
            np.zeros(n, np.int32), np.empty(n, np.int32),
        )  # fmt: skip
    rows = np.zeros(2, dtype=np.int32)

    def index_rows(first: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> object:
        return NATIVE.index_rows(
            first, np.zeros(2, np.int16), np.zeros(2, np.bool_), np.zeros(2, np.bool_), small.lengths,
            small.flat, offsets, ids, small.nchars, table, True, 10, np.empty(2, np.uint8),
            np.zeros(2, np.bool_), np.zeros(2, np.int16), rows, rows, rows, np.empty(257, np.int64),
        )  # fmt: skip

    zero = np.zeros(2, dtype=np.int16)
    assert index_rows(zero.copy(), small.offsets, small.ids) == (
        0,
        0,
        0,
        2,
    )  # both rows pure, "ab" of two chars
    for bad_first, bad_offsets, bad_ids in (
        (zero, small.offsets, np.array([0, 2], np.int32)),  # an id past the vocabulary
        (zero, small.offsets, np.array([0, -1], np.int32)),  # a negative id
        (zero, offsets, small.ids),  # a row past the end of the bytes
        (np.array([0, -3], np.int16), small.offsets, small.ids),  # a first bad byte before the row
    ):
        with pytest.raises(ValueError):
            index_rows(bad_first.copy(), bad_offsets, bad_ids)
    with pytest.raises(ValueError):
        NATIVE.alive_bits(
            np.zeros(n, np.int32), np.array([0, 7], np.int64), np.array([0, 1], np.int32), first
        )


def test_fill_mask_matches_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole mask from its parts, by C and by numpy: a shared base or none, ids taken out and put in
    (an id in both ends up in, as `to_mask` says), and packed bits, which stay with numpy."""
    n = 262_144
    rng = np.random.default_rng(7)
    base = rng.random(n) < 0.3
    ids = rng.integers(0, n, 3_000).astype(np.int32)
    minus = np.concatenate([rng.integers(0, n, 500), ids[:10]]).astype(np.int32)
    none = np.zeros(0, dtype=np.int32)
    cases = [
        (base, None, ids, minus),
        (None, None, ids, none),
        (base, None, none, none),
        (None, None, none, none),
        (None, np.packbits(base), ids, minus),
        (base, None, ids.astype(np.int64), minus),  # another dtype: numpy's way
    ]
    for parts in cases:
        got = to_mask(parts, n)  # type: ignore[arg-type]
        monkeypatch.setattr(mask_module, "NATIVE", None)
        want = to_mask(parts, n)  # type: ignore[arg-type]
        monkeypatch.undo()
        assert got.dtype == np.bool_ and np.array_equal(got, want)
        assert not np.shares_memory(got, base)
    assert to_mask((base, None, ids, minus), n)[ids].all()


def test_fill_mask_refuses_ids_outside_the_mask() -> None:
    assert NATIVE is not None
    out = np.empty(8, dtype=np.bool_)
    fine = np.array([1, 7], dtype=np.int32)
    for base, minus, ids in (
        (b"", fine, np.array([8], np.int32)),  # one past the end
        (b"", np.array([-1], np.int32), fine),  # negative
        (np.zeros(9, np.bool_), fine, fine),  # a base of another size
        (b"", fine, np.array([1], np.int16)),  # two bytes: not a whole number of int32 ids
    ):
        with pytest.raises(ValueError):
            NATIVE.fill_mask(out, base, minus, ids)
    NATIVE.fill_mask(out, b"", np.zeros(0, np.int32), fine)
    assert out.tolist() == [False, True, False, False, False, False, False, True]
