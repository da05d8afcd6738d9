"""Pattern states that no token can tell apart share one representative.

A counted repeat (`[0-9a-f]{64}`, `[^\\n]{1,64}`) makes one DFA state per count, so every char read in
such a string is a new parser state with a mask of its own, though far from the bound the states take
the same strings of up to a token's length. `horizon_rep(d, h)` maps `d` to the first state seen that
behaves like it on every string of up to `h` chars: the same strings stay alive and the same ones may
end the match. It compares h-step signatures over the lazily built DFA (a state's signature at depth k:
whether it accepts, and which character classes lead to which signatures at depth k - 1), with every
(state, depth) signature memoised per pattern. The exploration is bounded (a state past the bound is
its own representative), since it may visit states the text never reaches, and a pattern whose
explorations keep being given up (a wide pattern of many character classes) stops paying for them: it
tries again only now and then. Knows nothing of JSON or vocabularies.
"""

from __future__ import annotations

import threading
from typing import Final

from tokenloom.constrain.regex import DState, Regex
from tokenloom.errors import GrammarError

MAX_NEW_SIGNATURES = 600  # (state, depth) signatures one call may add before `d` stands for itself
# DFA steps one call may take (each new state's successors cost one step per character class of the
# pattern): the signatures alone let a pattern of many classes explore for 15 ms before giving up
MAX_NEW_STEPS = 3_000
GIVE_UPS_IN_A_ROW = 3  # explorations given up one after another before a pattern stops trying ...
# ... or this many signatures made, since the last state that found a representative other than
# itself, by explorations that found none (each state of `format: regex`'s pattern is unlike every
# other, and exploring each cost 3 ms; a counted repeat's unshared states near its bound cost ~20 each)
MAX_UNSHARED_SIGNATURES = 2_000
RETRY_EVERY = 16  # ... except for every RETRY_EVERY-th new state (the text may reach easier ones)
MAX_SIGNATURES = 40_000  # signatures one pattern keeps; past it new states stand for themselves
MAX_EXPLORED = 5_000  # DFA states a pattern may hold for the exploration to go on (each is real work)
_KEY = "regex_horizon"  # where a pattern keeps its signatures (Regex.tables is for consumers)


GAVE_UP: Final = -1  # a signature that needs more exploration than allowed


class _Signatures:
    """One pattern's memo: signatures by (state, depth), their shapes interned as small ints, the
    live successor groups of each state, and the representative of each (depth, signature)."""

    __slots__ = (
        "asked", "explored", "give_ups", "groups", "lock", "memo", "rep_of", "reps", "shapes", "unshared",
    )  # fmt: skip

    def __init__(self) -> None:
        self.memo: dict[tuple[DState, int], int] = {}
        self.shapes: dict[tuple[object, ...], int] = {}
        self.groups: dict[DState, tuple[tuple[int, DState], ...]] = {}
        self.reps: dict[tuple[int, int], DState] = {}
        self.rep_of: dict[tuple[DState, int], DState] = {}
        self.lock = threading.Lock()
        self.give_ups = 0  # explorations given up since the last one that finished
        self.unshared = 0  # signatures made since the last state that found another representative
        self.asked = 0  # new states asked about while `give_ups` says to stop trying
        self.explored = 0  # explorations started (how often the limits above let one run)

    def should_explore(self) -> bool:
        """Whether to look for a new state's representative (not while explorations keep failing or
        keep finding that each state stands for itself)."""
        if self.give_ups < GIVE_UPS_IN_A_ROW and self.unshared < MAX_UNSHARED_SIGNATURES:
            return True
        self.asked += 1
        return self.asked % RETRY_EVERY == 0

    def successors(self, d: DState, budget: list[int]) -> tuple[tuple[int, DState], ...] | None:
        """(class set id, next state) for each live next state of `d`, classes grouped by target;
        the steps it takes come out of `budget[1]` (None: spent)."""
        hit = self.groups.get(d)
        if hit is None:
            budget[1] -= len(d.regex.bounds)
            if budget[1] < 0:
                return None
            by_target: dict[DState, list[int]] = {}
            for k in range(len(d.regex.bounds)):
                nxt = d.step_class_index(k)
                if nxt is not None:
                    by_target.setdefault(nxt, []).append(k)
            hit = self.groups[d] = tuple(
                (self.shapes.setdefault(("classes", *ks), len(self.shapes)), nxt)
                for nxt, ks in by_target.items()
            )
        return hit

    def signature(self, d: DState, depth: int, budget: list[int]) -> int:
        """A number shared by the states that accept the same strings of up to `depth` chars; GAVE_UP
        once a budget is spent (a return, not a raise: compiled, a raise builds a traceback per level)."""
        hit = self.memo.get((d, depth))
        if hit is not None:
            return hit
        budget[0] -= 1
        if budget[0] < 0 or d.regex.states_made() > MAX_EXPLORED:
            return GAVE_UP
        shape: tuple[object, ...]
        if depth == 0:
            shape = (d.accepting,)
        else:
            successors = self.successors(d, budget)
            if successors is None:
                return GAVE_UP
            parts: list[tuple[int, int]] = []
            for group, nxt in successors:
                sig = self.signature(nxt, depth - 1, budget)
                if sig == GAVE_UP:
                    return GAVE_UP
                parts.append((group, sig))
            shape = (d.accepting, *sorted(parts))
        sig = self.shapes.setdefault(shape, len(self.shapes))
        self.memo[(d, depth)] = sig
        return sig


def _signatures(regex: Regex) -> _Signatures:
    return regex.table(_KEY, _Signatures)


def horizon_rep(d: DState, horizon: int) -> DState:
    """The state that stands for `d` on strings of up to `horizon` chars (`d` itself when the
    signature is too costly to find)."""
    sigs = _signatures(d.regex)
    hit = sigs.rep_of.get((d, horizon))
    if hit is not None:
        return hit
    with sigs.lock:
        rep = d
        if len(sigs.memo) < MAX_SIGNATURES and sigs.should_explore():
            sigs.explored += 1
            budget = [MAX_NEW_SIGNATURES, MAX_NEW_STEPS]
            try:
                sig = sigs.signature(d, horizon, budget)
            except GrammarError:  # the automaton grew past its bound
                sig = GAVE_UP
            if sig == GAVE_UP:
                sigs.give_ups += 1
            else:
                rep = sigs.reps.setdefault((horizon, sig), d)
                sigs.give_ups = 0
                sigs.unshared = sigs.unshared + MAX_NEW_SIGNATURES - budget[0] if rep is d else 0
        sigs.rep_of[(d, horizon)] = rep
        return rep
