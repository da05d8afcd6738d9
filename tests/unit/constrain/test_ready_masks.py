"""Masks handed out ready (read-only, shared by equal states) and bounded strings sharing one mask while
their length is far from maxLength: both must give exactly the mask the walk computes for the real state."""

from __future__ import annotations

import numpy as np
import pytest

from tokenloom.constrain import compile as compile_constraint
from tokenloom.constrain.constraint import HORIZON
from tokenloom.constrain.mask import compute, to_mask
from tokenloom.engine.vocab import Vocab

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 3, "maxLength": 120, "pattern": "^[a-z ]+$"}},
    "required": ["name"],
}


def _walked(c: object, vocab: Vocab) -> np.ndarray:
    """The mask of the constraint's exact state, computed afresh by the trie walk (no sharing)."""
    state, pending = c._state, c._pending  # type: ignore[attr-defined]
    trie = c._compiled.trie  # type: ignore[attr-defined]
    mask = to_mask(compute(trie, state, pending), vocab.n_vocab)
    if c.is_accepting():  # type: ignore[attr-defined]
        mask[sorted(vocab.eog_ids)] = True
    return mask


def test_ready_masks_are_read_only_and_shared(vocab: Vocab) -> None:
    a = compile_constraint({"json_schema": SCHEMA}, vocab)
    b = compile_constraint({"json_schema": SCHEMA}, vocab)
    mask = a.allowed()
    assert mask is not None and not mask.flags.writeable
    with pytest.raises(ValueError):
        mask[0] = True
    assert b.allowed() is mask  # the same state of the same grammar: the same ready mask


@pytest.mark.parametrize("length", [0, 2, 3, 4, 40, 85, 88, 89, 90, 100, 118, 119, 120])
def test_bounded_string_mask_is_exact_at_every_length(vocab: Vocab, length: int) -> None:
    c = compile_constraint({"json_schema": SCHEMA}, vocab)
    for piece in ['{"', "name", '":"']:
        c._feed(piece.encode(), None)  # type: ignore[attr-defined]
    c._feed(("ab " * 60)[:length].encode(), None)  # type: ignore[attr-defined]
    got = c.allowed()
    assert got is not None
    assert np.array_equal(got, _walked(c, vocab))


def test_far_lengths_share_one_representative(vocab: Vocab) -> None:
    """Lengths 4..(120 - horizon) all stand for minLength; near the bound each length is its own."""
    c = compile_constraint({"json_schema": SCHEMA}, vocab)
    for piece in ['{"', "name", '":"']:
        c._feed(piece.encode(), None)  # type: ignore[attr-defined]
    horizon = c._compiled.trie.max_len + 1  # type: ignore[attr-defined]
    reps = []
    for _ in range(120):
        reps.append(c._state.mask_rep(horizon))  # type: ignore[attr-defined]
        c._feed(b"a", None)  # type: ignore[attr-defined]
    far = {id(r) for r in reps[3 : 120 - horizon]}
    assert len(far) == 1
    near = {id(r) for r in reps[120 - horizon :]}
    assert len(near) == horizon


@pytest.mark.parametrize(
    "string",
    [
        {"type": "string", "pattern": "^[0-9a-f]{40}$"},
        {"type": "string", "maxLength": 50},
        {"type": "string", "pattern": "^[A-Z]{2}[0-9]{30}$", "maxLength": 32},
    ],
)
def test_skips_are_the_skips_one_by_one(vocab: Vocab, string: dict[str, object]) -> None:
    c = compile_constraint({"json_schema": string}, vocab)
    c._feed(b'"', None)  # type: ignore[attr-defined]
    st = c._state  # type: ignore[attr-defined]
    run = st.free_run()
    assert run is not None and run[0].remaining is not None
    most = min(run[0].remaining, 31)
    assert st.skips(most) == [st.skip(k) for k in range(1, most + 1)]


def test_counted_pattern_masks_stay_exact(vocab: Vocab) -> None:
    c = compile_constraint({"json_schema": {"type": "string", "pattern": "^[0-9a-f]{40}$"}}, vocab)
    c._feed(b'"', None)  # type: ignore[attr-defined]
    for _ in range(41):
        got = c.allowed()
        assert got is not None and np.array_equal(got, _walked(c, vocab))
        if c._state.allowed_chars().contains_cp(ord("a")):  # type: ignore[attr-defined]
            c._feed(b"a", None)  # type: ignore[attr-defined]


def test_escapes_far_from_max_length_are_judged_once_and_masks_stay_exact(vocab: Vocab) -> None:
    """A backslash at each count of a string far from its maxLength leads to states that differ only
    in the count: the tails after it (`\\n`, `\\",` ...) are judged once, from one representative over
    their longest, and the masks equal feeding every token, far from the bound and near it."""
    from tests.unit.constrain.test_vocab_masks import _brute_force
    from tokenloom.constrain.charset import JSON_STRING_FREE

    c = compile_constraint(
        {"json_schema": {"type": "array", "items": {"type": "string", "maxLength": 40}}}, vocab
    )
    c._feed(b'["', None)  # type: ignore[attr-defined]
    tails = c._compiled.trie.free_index(JSON_STRING_FREE).tails  # type: ignore[attr-defined]
    horizon = tails.chars_after_first(ord("\\"))
    assert 0 < horizon < 20
    reps = []
    for count in range(40):
        if count in (0, 1, 12, 40 - horizon - 1, 40 - horizon, 38, 39):
            assert {int(t) for t in np.flatnonzero(c.allowed())} == _brute_force(c, vocab), count
        reps.append(c._state.add_char("\\").mask_rep(horizon))  # type: ignore[attr-defined]
        c._feed(b"a", None)  # type: ignore[attr-defined]
    far = 40 - horizon - 1  # counts up to `far` stand for minLength (0) over the horizon
    assert len({id(rep) for rep in reps[: far + 1]}) == 1
    assert len({id(rep) for rep in reps}) == 1 + (39 - far)  # near the bound each count is its own


def test_pattern_names_far_from_their_bound_share_a_representative_and_stay_exact(vocab: Vocab) -> None:
    """A property name under `^[^\\n]{1,40}$` (patternProperties) is a new state at each count: the
    counts the next `horizon` chars cannot tell apart share one representative, the masks equal
    feeding every token, and near the bound (or past a quote) each count is its own."""
    from tests.unit.constrain.test_vocab_masks import _brute_force

    schema = {
        "type": "object",
        "patternProperties": {"^[^\\n]{1,40}$": {"type": "integer"}},
        "additionalProperties": False,
    }
    c = compile_constraint({"json_schema": schema}, vocab)
    c._feed(b'{"', None)  # type: ignore[attr-defined]
    horizon = HORIZON  # what `allowed` asks for
    reps = []
    for count in range(40):
        if count in (0, 1, 5, 40 - horizon - 1, 40 - horizon, 38, 39):
            assert {int(t) for t in np.flatnonzero(c.allowed())} == _brute_force(c, vocab), count
        reps.append(c._state.mask_rep(horizon))  # type: ignore[attr-defined]
        c._feed(b"a", None)  # type: ignore[attr-defined]
    far = 40 - horizon  # from count 1 to `far`, 1..40 more chars may follow: alike over the horizon
    assert len({id(rep) for rep in reps[1:far]}) == 1
    assert len({id(rep) for rep in reps[far:]}) == 40 - far
