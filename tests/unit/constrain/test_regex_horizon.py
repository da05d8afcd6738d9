"""Pattern states merged by their behaviour over the next few chars (regex_horizon.py)."""

from __future__ import annotations

import itertools
import random

import pytest

import tokenloom.constrain.regex_horizon as horizon
from tokenloom.constrain.regex import DState, Regex
from tokenloom.constrain.regex_horizon import horizon_rep


def _states(regex: Regex, text: str) -> list[DState]:
    """The states after each prefix of `text` (the empty one first)."""
    out = [regex.initial]
    for ch in text:
        nxt = out[-1].step(ch)
        assert nxt is not None
        out.append(nxt)
    return out


def _verdict(d: DState, text: str) -> tuple[bool, bool]:
    """(still alive, accepting) after `text` from `d`."""
    cur: DState | None = d
    for ch in text:
        cur = cur.step(ch) if cur is not None else None
    return cur is not None, cur is not None and cur.accepting


def _explorations(regex: Regex) -> int:
    """How many new states of `regex` had their representative looked for."""
    return horizon._signatures(regex).explored


def test_counts_far_from_the_bound_share_one_representative() -> None:
    states = _states(Regex("[a-f0-9]{64}"), "a" * 64)
    reps = [horizon_rep(d, 8) for d in states]
    # 9 or more chars still to come: the next 8 cannot tell them apart
    assert all(rep is states[0] for rep in reps[:56])
    # nearer the end, each count is its own state
    assert [rep is d for rep, d in zip(reps[56:], states[56:], strict=True)] == [True] * 9
    assert len({id(rep) for rep in reps}) == 1 + 9


@pytest.mark.parametrize(
    ("pattern", "search", "merges"),
    [
        (r"^[ab]{2,9}c?$", False, True),
        (r"(ab|a){0,6}b", False, True),
        (r"^(?:[ab]c){0,9}x$", False, True),
        (r"x{3}a", True, False),
        (r"^(?:[ab]+c){1,3}$", False, False),
    ],
)
def test_a_representative_takes_the_same_strings_up_to_the_horizon(
    pattern: str, search: bool, merges: bool
) -> None:
    regex = Regex(pattern, search=search)
    alphabet = "abcx"
    rng = random.Random(3)
    checked = merged = 0
    for _ in range(30):
        d: DState | None = regex.initial
        for _ in range(12):  # a search pattern never dies: bounded walks
            if d is None:
                break
            rep = horizon_rep(d, 4)
            merged += rep is not d
            for n in range(5):
                for letters in itertools.product(alphabet, repeat=n):
                    text = "".join(letters)
                    assert _verdict(rep, text) == _verdict(d, text), (pattern, text)
                    checked += 1
            d = d.step(rng.choice(alphabet))
    assert checked
    assert bool(merged) == merges  # counted repeats far from their bounds merge, and were checked


def test_a_costly_exploration_leaves_the_state_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(horizon, "MAX_NEW_SIGNATURES", 3)
    states = _states(Regex("[0-9]{40}"), "1" * 10)
    assert all(horizon_rep(d, 20) is d for d in states)


def test_a_pattern_whose_explorations_keep_failing_stops_paying_for_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a step budget this small gives up on every state: after three give-ups in a row, only every
    # RETRY_EVERY-th new state is explored again, and each still stands for itself
    monkeypatch.setattr(horizon, "MAX_NEW_STEPS", 2)
    regex = Regex("[0-9a-z]{60}")
    states = _states(regex, "1" * 40)
    assert all(horizon_rep(d, 20) is d for d in states)
    asked_after = len(states) - horizon.GIVE_UPS_IN_A_ROW
    assert _explorations(regex) == horizon.GIVE_UPS_IN_A_ROW + asked_after // horizon.RETRY_EVERY


def test_a_wide_pattern_gives_up_within_its_step_budget() -> None:
    # 600 signatures of a pattern with hundreds of character classes would be tens of thousands of
    # DFA steps: the step budget ends the exploration first
    classes = "".join(f"{chr(c)}{chr(c + 1)}x" for c in range(0x100, 0x400, 3))
    regex = Regex(f"(?:[{classes}]|a[b-y]){{0,30}}z")
    d = regex.initial
    assert horizon_rep(d, 20) is d
    sigs = horizon._signatures(regex)
    stepped = sum(len(regex.bounds) for _ in sigs.groups)
    assert stepped <= horizon.MAX_NEW_STEPS + len(regex.bounds)


def test_a_pattern_whose_states_are_all_unalike_stops_exploring(monkeypatch: pytest.MonkeyPatch) -> None:
    # every state of a literal of distinct letters is unlike every other: each exploration finds the
    # state its own representative and adds horizon + 1 signatures; past MAX_UNSHARED_SIGNATURES of
    # them in a row, only every RETRY_EVERY-th new state is explored
    monkeypatch.setattr(horizon, "MAX_UNSHARED_SIGNATURES", 100)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    regex = Regex(letters)
    states = _states(regex, letters)
    assert all(horizon_rep(d, 20) is d for d in states)
    first = -(-100 // 21)  # explorations until the unshared signatures reach the limit
    assert _explorations(regex) == first + (len(states) - first) // horizon.RETRY_EVERY


def test_a_shared_representative_keeps_the_exploration_going(monkeypatch: pytest.MonkeyPatch) -> None:
    # a counted repeat's first states are new classes, the next ones share: the count starts over and
    # the whole run far from the bound keeps one representative, even under a tight limit
    monkeypatch.setattr(horizon, "MAX_UNSHARED_SIGNATURES", 20)
    states = _states(Regex("x[a-f0-9]{64}"), "x" + "a" * 64)
    reps = [horizon_rep(d, 8) for d in states]
    assert all(rep is states[1] for rep in reps[1:57])
