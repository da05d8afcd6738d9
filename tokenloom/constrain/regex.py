"""The subset of Python `re` syntax people write for structured output, as a lazily determinised NFA.

Supports literals, escapes (\\d \\w \\s and negations, \\n \\t \\xhh \\uhhhh, escaped punctuation), `.`,
classes with ranges and negation, groups (capturing, `?:`, named), `|`, `* + ? {m} {m,} {m,n}` (lazy and
possessive forms match the same strings), `^`/`$` anchors, word boundaries `\\b`/`\\B` (see
`_word_bounded`), and look-aheads right after a leading `^` (`^(?=.*[A-Z])(?!.*--)...`, as intersections:
see `Regex.settle`). Back-references, other look-arounds and inline flags raise GrammarError. Knows
nothing of JSON or vocabularies.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from tokenloom.constrain.charset import ANY, EMPTY, CharSet
from tokenloom.constrain.interpreted import let_others_run
from tokenloom.constrain.parser import Frame, FreeRun
from tokenloom.constrain.regex_syntax import WORD, Ast, RegexParser
from tokenloom.errors import GrammarError

_T = TypeVar("_T")

MAX_NFA_STATES = 20_000
# DFA states a pattern with leading look-aheads may have: it is explored whole at compile time (see
# `Regex._trim`); past this it is compiled without them (a superset, named unenforced)
MAX_LOOK_STATES = 2_000  # about 0.2 s of exploring (the counted-repeat password pattern: 1,232)
_UNIVERSAL_LIMIT = 512  # DFA states explored before `is_universal` gives up (and says no)
_FULL_LIMIT = 32  # DFA states explored before `Regex.canonical` gives up (and keeps the state)
SHARED_REGEXES = 64  # patterns kept compiled for the next schema that uses them (as many as grammars)
# A shared pattern whose DFA has grown past this many states is not handed to new grammars: they start
# afresh, so what earlier requests reached does not bring a new one nearer the 50,000-state limit.
SHARED_STATES = 10_000


class LookaheadsTooLarge(GrammarError):
    """The leading look-aheads' automaton passed MAX_LOOK_STATES (they may still be dropped instead)."""


class Nfa:
    """Thompson NFA with character-set edges; anchors are epsilon edges usable only at start / end. Word
    boundaries (`bounds`: target, whether it is `\\b`) are made plain edges by `_word_bounded` before use."""

    def __init__(self) -> None:
        self.edges: list[list[tuple[CharSet, int]]] = []
        self.eps: list[list[int]] = []
        self.bol: list[list[int]] = []
        self.eol: list[list[int]] = []
        self.bounds: list[list[tuple[int, bool]]] = []

    def new(self) -> int:
        if len(self.edges) >= MAX_NFA_STATES:
            raise GrammarError(f"regex too large (more than {MAX_NFA_STATES} automaton states)")
        for lst in (self.edges, self.eps, self.bol, self.eol, self.bounds):
            lst.append([])
        return len(self.edges) - 1

    def build(self, node: Ast, s: int) -> int:
        kind = node[0]
        if kind == "set":
            e = self.new()
            self.edges[s].append((node[1], e))
            return e
        if kind == "cat":
            for item in node[1]:
                s = self.build(item, s)
            return s
        if kind == "alt":
            e = self.new()
            for opt in node[1]:
                self.eps[self.build(opt, s)].append(e)
            return e
        if kind in ("bol", "eol"):
            e = self.new()
            (self.bol if kind == "bol" else self.eol)[s].append(e)
            return e
        if kind == "bound":
            e = self.new()
            self.bounds[s].append((e, node[1]))
            return e
        _, item, lo, hi = node
        for _ in range(lo):
            s = self.build(item, s)
        if hi is None:
            loop = self.new()
            self.eps[s].append(loop)
            self.eps[self.build(item, loop)].append(loop)
            return loop
        e = self.new()
        for _ in range(hi - lo):
            self.eps[s].append(e)
            s = self.build(item, s)
        self.eps[s].append(e)
        return e

    def live_states(self, final: int) -> frozenset[int]:
        """States from which `final` is reachable without `^` (only usable before the first char)."""
        back: dict[int, list[int]] = {}
        for s in range(len(self.edges)):
            for t in self.eps[s] + self.eol[s] + [t for _, t in self.edges[s]]:
                back.setdefault(t, []).append(s)
        seen = {final}
        todo = [final]
        while todo:
            for s in back.get(todo.pop(), []):
                if s not in seen:
                    seen.add(s)
                    todo.append(s)
        return frozenset(seen)

    def closure(self, states: set[int], at_start: bool, at_end: bool = False) -> frozenset[int]:
        todo = list(states)
        seen = set(states)
        while todo:
            s = todo.pop()
            nxt = self.eps[s] + (self.bol[s] if at_start else []) + (self.eol[s] if at_end else [])
            for t in nxt:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return frozenset(seen)


class DState:
    """One state of the lazily built DFA; identity-hashed because each is made once per regex."""

    __slots__ = (
        "_always",
        "_atom_list",
        "_chain",
        "_default",
        "_has_chain",
        "_has_default",
        "_uniform",
        "_universal",
        "accepting",
        "by_class",
        "chars",
        "loop",
        "nfa",
        "regex",
        "states",
        "trans",
    )

    def __init__(self, regex: Regex, states: frozenset[int]) -> None:
        self.regex = regex
        self.states = states
        nfa = regex.nfa
        acc = EMPTY
        for s in states:
            for cs, t in nfa.edges[s]:
                if t in regex.live:
                    acc = acc | cs
        self.chars = acc
        at_end = nfa.closure(set(states), at_start=False, at_end=True)
        self.accepting = regex.final in at_end and (not regex._looks or regex.looks_accept(states, at_end))
        self.trans: dict[str, DState | None] = {}
        self.by_class: dict[int, DState | None] = {}
        self.loop: CharSet | None = None
        self._default: tuple[CharSet, DState] | None = None
        self._has_default = False
        self._uniform: dict[CharSet, DState | None] = {}
        self._chain: tuple[CharSet, int] | None = None
        self._has_chain = False
        self._universal: dict[CharSet, tuple[CharSet, bool] | None] = {}
        self._atom_list: list[tuple[int, int]] | None = None
        self._always: bool | None = None

    def step(self, c: str) -> DState | None:
        known = self.trans.get(c)
        if known is not None or c in self.trans:
            return known
        res = self.trans[c] = self.step_class_index(self.regex.class_of(ord(c)))
        return res

    def step_class_index(self, k: int) -> DState | None:
        """The state after any char of the regex's character class `k` (see `Regex.class_of`)."""
        known = self.by_class.get(k)
        if known is not None or k in self.by_class:
            return known
        res = self.raw_step(k)
        if res is not None:
            res = self.regex.canonical(res)
        self.by_class[k] = res
        return res

    def raw_step(self, k: int) -> DState | None:
        """`step_class_index` before `Regex.canonical` (not memoised). Each new step of the automaton
        passes through plain Python once (`let_others_run`): a big automaton built while masking must
        not hold the interpreter from the scheduler thread (engine/masking.py)."""
        let_others_run()
        regex = self.regex
        known = regex._moves
        targets: set[int] = set()
        for s in self.states:
            by_class = known.get(s)
            if by_class is None:
                by_class = regex.moves(s)
            ts = by_class.get(k)
            if ts:
                targets.update(ts)
        if not targets:
            return None
        states = regex.closure_after(targets)
        if regex._looks:
            settled = regex.settle(states, self.states)
            if settled is None:
                return None
            states = settled
        return regex.dstate(states)

    def loop_chars(self) -> CharSet:
        """Characters that lead back to this very state (the trie walk takes them in bulk)."""
        if self.loop is None:
            bounds = sorted(
                {lo for r in _edge_sets(self) for lo, _ in r.ranges}
                | {hi + 1 for r in _edge_sets(self) for _, hi in r.ranges}
            )
            keep: list[tuple[int, int]] = []
            for lo, hi in itertools.pairwise(bounds):
                if self.chars.contains_cp(lo) and self.step(chr(lo)) is self:
                    keep.append((lo, hi - 1))
            self.loop = CharSet(keep)
        return self.loop

    def _atoms(self) -> list[tuple[int, int]]:
        """Maximal ranges on which every transition of this state agrees."""
        if self._atom_list is None:
            self._atom_list = self._find_atoms()
        return self._atom_list

    def _find_atoms(self) -> list[tuple[int, int]]:
        sets = _edge_sets(self)
        bounds = sorted(
            {0, 0x110000}
            | {lo for r in sets for lo, _ in r.ranges}
            | {hi + 1 for r in sets for _, hi in r.ranges}
        )
        return [(lo, hi - 1) for lo, hi in itertools.pairwise(bounds)]

    def default(self) -> tuple[CharSet, DState] | None:
        """(D, F): the widest set of chars leading to one state F that itself loops on all of D."""
        if not self._has_default:
            self._has_default = True
            groups: dict[DState, list[tuple[int, int]]] = {}
            for lo, hi in self._atoms():
                if self.chars.contains_cp(lo) and (t := self.step(chr(lo))) is not None:
                    groups.setdefault(t, []).append((lo, hi))
            best: tuple[CharSet, DState] | None = None
            best_size = 8  # narrow classes too: their tokens are taken in bulk from a FreeIndex
            for target, ranges in groups.items():
                cls = CharSet(ranges) & target.loop_chars()  # the part the target keeps looping on
                size = sum(hi - lo + 1 for lo, hi in cls.ranges)
                if size > best_size:
                    best, best_size = (cls, target), size
            self._default = best
        return self._default

    def uniform_step(self, klass: CharSet) -> DState | None:
        """The one state every char of `klass` leads to, or None if they disagree or fail."""
        if klass in self._uniform:
            return self._uniform[klass]
        res = self._uniform[klass] = self._uniform_step(klass)
        return res

    def step_class(self, klass: CharSet) -> DState | None:
        """The one state every char of `klass` leads to (klass may cut through atoms), else None."""
        target: DState | None = None
        for lo, hi in self._atoms():
            part = klass & CharSet([(lo, hi)])
            if part.is_empty():
                continue
            t = self.step(chr(part.ranges[0][0]))
            if t is None or (target is not None and t is not target):
                return None
            target = t
        return target

    def _uniform_step(self, klass: CharSet) -> DState | None:
        target: DState | None = None
        for lo, hi in self._atoms():
            if not klass.overlaps(lo, hi):
                continue
            if klass & CharSet([(lo, hi)]) != CharSet([(lo, hi)]):
                return None
            t = self.step(chr(lo))
            if t is None or (target is not None and t is not target):
                return None
            target = t
        return target

    def chain(self) -> tuple[CharSet, int] | None:
        """(C, n): a counted run such as `[0-9a-f]{64}`: any n chars of C are accepted in a row. A run
        of one char counts only when C holds non-ASCII chars (the last char of `[^\n]{1,64}`): walking
        those one by one makes a state per char, thousands of them, where an ASCII class has a few."""
        if not self._has_chain:
            self._has_chain = True
            hint = self.default_any()
            if hint is not None:
                klass, n, cur = hint, 0, self
                while n < 4096:
                    nxt = cur.uniform_step(klass)
                    if nxt is None or nxt is cur:
                        break
                    cur, n = nxt, n + 1
                wide = n == 1 and klass.overlaps(0x80, 0x10FFFF)
                if (n >= 2 or wide) and (cur.chars & klass).is_empty():  # the run really ends after n
                    self._chain = (klass, n)
        return self._chain

    def default_any(self) -> CharSet | None:
        """The widest class of chars that all lead to one next state."""
        groups: dict[DState, list[tuple[int, int]]] = {}
        for lo, hi in self._atoms():
            if self.chars.contains_cp(lo) and (t := self.step(chr(lo))) is not None:
                groups.setdefault(t, []).append((lo, hi))
        best: CharSet | None = None
        best_size = 8
        for ranges in groups.values():
            size = sum(hi - lo + 1 for lo, hi in ranges)
            if size > best_size:
                best, best_size = CharSet(ranges), size
        return best

    def is_universal(self, klass: CharSet) -> bool:
        return self.universal_exits(klass) is not None

    def always_accepts(self) -> bool:
        """Whether every string from here (any chars) still matches: a search that found its match.
        A property name there is settled for good (patternProperties {P: false} refuses it). Explored
        over the DFA; past _UNIVERSAL_LIMIT states it gives up and says no."""
        if self._always is None:
            self._always = self._explore_always()
        return self._always

    def _explore_always(self) -> bool:
        seen = self._reachable(ANY)
        if seen is None or not all(state.accepting for state in seen):
            return False
        for state in seen:
            state._always = True
        return True

    def universal_exits(self, klass: CharSet) -> tuple[CharSet, bool] | None:
        """None unless no string of `klass` chars can reach a dead end from here (searches that can
        always still match later, `.*`; explored over the DFA, given up past a bound). Else the chars
        outside `klass` that may follow such a string, and whether it may end the match there."""
        if klass not in self._universal:
            self._universal[klass] = self._explore_universal(klass)
        return self._universal[klass]

    def _explore_universal(self, klass: CharSet) -> tuple[CharSet, bool] | None:
        """Explore; on success every state seen is universal too (what it reaches was explored,
        so the exits found here are a superset of its own: safe as a filter)."""
        seen = self._reachable(klass)
        if seen is None:
            return None
        exits, accepting = EMPTY, False
        for state in seen:
            exits, accepting = exits | (state.chars - klass), accepting or state.accepting
        found = (exits, accepting)
        for state in seen:
            state._universal.setdefault(klass, found)
        return found

    def _reachable(self, klass: CharSet) -> set[DState] | None:
        """The states strings of `klass` chars reach from here (this one too); None when one of them
        kills the match, or past _UNIVERSAL_LIMIT states."""
        seen: set[DState] = {self}
        todo = [self]
        classes = self.regex.classes_within(klass)
        while todo:
            cur = todo.pop()
            for k in classes:
                nxt = cur.step_class_index(k)
                if nxt is None:
                    return None
                if nxt not in seen:
                    if len(seen) >= _UNIVERSAL_LIMIT:
                        return None
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def advance(self, n: int, klass: CharSet) -> DState:
        """The state after `n` chars of a chain (`chain()` guarantees they agree)."""
        cur = self
        for _ in range(n):
            nxt = cur.uniform_step(klass)
            assert nxt is not None  # internal: within the chain length
            cur = nxt
        return cur


def _class_bounds(nfa: Nfa) -> list[int]:
    """The starts of the maximal code-point ranges on which every edge of `nfa` agrees."""
    cuts = {0}
    for edges in nfa.edges:
        for cs, _ in edges:
            for lo, hi in cs.ranges:
                cuts.add(lo)
                cuts.add(hi + 1)
    return sorted(c for c in cuts if c <= 0x10FFFF)


def _edge_sets(d: DState) -> list[CharSet]:
    return [cs for s in d.states for cs, _ in d.regex.nfa.edges[s]]


class Regex:
    """A compiled pattern: `fullmatch` semantics, or `search` semantics for JSON Schema `pattern`."""

    def __init__(self, pattern: str, search: bool = False, lenient: bool = False) -> None:
        # lenient: every look-around is dropped (the fallback once the exact form was refused)
        looks, body = leading_lookaheads(pattern) if not lenient else ([], pattern)
        parser = RegexParser(body, lenient)
        ast = parser.parse()
        self.lenient = parser.dropped  # look-arounds were dropped: this matches a superset
        if search:
            anywhere = ("rep", ("set", ANY), 0, None)
            ast = ("cat", [anywhere, ast, anywhere])
        self.pattern = pattern
        self.nfa = Nfa()
        start = self.nfa.new()
        self.final = self.nfa.build(ast, start)
        if any(self.nfa.bounds):
            if looks:
                raise GrammarError(f"regex {pattern!r}: \\b or \\B beside look-aheads is not supported")
            self.nfa, start, self.final = _word_bounded(self.nfa, start, self.final)
        self._main_end = len(self.nfa.edges)  # NFA states below this one are the pattern's own
        # leading look-aheads, each its own part of the NFA: (positive, its final, its marker, its
        # states' range); see `settle`
        self._looks: list[tuple[bool, int, int, int, int]] = []
        starts = {start}
        for positive, look in looks:
            lo = self.nfa.new()
            look_final = self.nfa.build(("cat", [look, ("rep", ("set", ANY), 0, None)]), lo)
            marker = self.nfa.new()
            self._looks.append((positive, look_final, marker, lo, marker))
            starts.add(lo)
        self._dstates: dict[frozenset[int], DState] = {}
        self.live = self.nfa.live_states(self.final).union(
            *(self.nfa.live_states(final) for _, final, _, _, _ in self._looks)
        )
        self._kept = frozenset(
            s for s in self.live if self.nfa.edges[s] or self.nfa.eol[s] or s == self.final
        ).union(*({final, marker} for _, final, marker, _, _ in self._looks))
        self.bounds = _class_bounds(self.nfa)
        self._moves: dict[int, dict[int, tuple[int, ...]]] = {}
        self._closures: dict[int, frozenset[int]] = {}
        self._within: dict[CharSet, tuple[int, ...]] = {}
        self._full: dict[DState, bool] = {}
        self._full_state: DState | None = None
        first = self.settle(self.nfa.closure(starts, at_start=True) & self._kept, frozenset())
        if first is None:
            first = frozenset()  # a look-ahead already fails: nothing matches
        self.initial = self.canonical(self.dstate(first))
        self.tables: dict[object, tuple[object, object]] = {}  # for consumers (per-vocabulary mask tables)
        if self._looks:
            self._trim()

    def settle(self, states: frozenset[int], before: frozenset[int]) -> frozenset[int] | None:
        """The leading look-aheads' verdict on a state reached from `before` (None: no match can
        follow). A positive one holds once its part reaches its final state (the look-ahead matched a
        prefix, and `.*` follows it): its part is replaced by its marker for good; its part dying first
        kills the match. A negative one kills the match once its part matches, and is kept by dying."""
        if not self._looks:
            return states
        if not any(s < self._main_end for s in states):
            return None
        out = set(states)
        for positive, final, marker, lo, hi in self._looks:
            mine = {s for s in states if lo <= s < hi}
            if positive:
                if marker in before or final in mine:
                    out -= mine
                    out.add(marker)
                elif not mine:
                    return None
            elif final in mine:
                return None
        return frozenset(out)

    def looks_accept(self, states: frozenset[int], at_end: frozenset[int]) -> bool:
        """Whether the look-aheads hold for a text ending in a state of `states` (epsilon closure at
        the end `at_end`): each positive one matched (or matches with `$` here), no negative one does."""
        for positive, final, marker, _, _ in self._looks:
            if positive and marker not in states and final not in at_end:
                return False
            if not positive and final in at_end:
                return False
        return True

    def _trim(self) -> None:
        """With look-aheads a state may be alive in each part yet unable to reach a match (a bounded
        pattern with no room left for the digit a look-ahead wants): explore the whole automaton (a
        GrammarError past MAX_LOOK_STATES: the caller drops the look-aheads) and cut every transition
        into a state that cannot reach an accepting one, so each state left can still match."""
        classes = range(len(self.bounds))
        seen = {self.initial}
        order = [self.initial]
        for d in order:
            for k in classes:
                t = d.step_class_index(k)
                if t is not None and t not in seen:
                    if len(seen) >= MAX_LOOK_STATES:
                        raise LookaheadsTooLarge(
                            f"regex {self.pattern!r}: its look-aheads need more than {MAX_LOOK_STATES} states"
                        )
                    seen.add(t)
                    order.append(t)
        back: dict[DState, list[DState]] = {}
        for d in order:
            for t in d.by_class.values():
                if t is not None:
                    back.setdefault(t, []).append(d)
        alive = {d for d in order if d.accepting}
        todo = list(alive)
        while todo:
            for d in back.get(todo.pop(), []):
                if d not in alive:
                    alive.add(d)
                    todo.append(d)
        ends = [*self.bounds[1:], 0x110000]
        for d in order:
            keep: list[tuple[int, int]] = []
            for k, t in list(d.by_class.items()):
                if t is not None and t not in alive:
                    d.by_class[k] = None
                elif t is not None:
                    keep.append((self.bounds[k], ends[k] - 1))
            d.chars = CharSet(keep)
            d.trans.clear()

    def table(self, key: str, make: Callable[[], _T]) -> _T:
        """The consumer table kept with this pattern under `key`, made by `make()` on first use (for
        tables of one pattern alone; per-vocabulary ones keep their trie beside them in `tables`)."""
        hit = self.tables.get(key)
        if hit is None:
            hit = self.tables.setdefault(key, (self, make()))
        return hit[1]  # type: ignore[return-value]

    def dstate(self, states: frozenset[int]) -> DState:
        """The DFA state of a set of kept NFA states (those with a char or `$` edge, and the final one:
        epsilon-only states are left out, so sets that differ only in them are one state)."""
        d = self._dstates.get(states)
        if d is None:
            if len(self._dstates) > 50_000:
                raise GrammarError(f"regex {self.pattern!r} needs too many automaton states")
            d = self._dstates[states] = DState(self, states)
        return d

    def canonical(self, d: DState) -> DState:
        """`d`, or the one state that stands for every state accepting any text from here on (a search
        pattern once matched: `^description_[a-zA-Z0-9_]+` after `description_x`). The subset
        construction makes several such states; as one state, a name or string past its match is an
        unchanged free run for the trie walk instead of a narrow class checked token by token."""
        if not d.accepting:
            return d
        full = self._full.get(d)
        if full is None:
            full = self._explore_full(d)
        if not full:
            return d
        if self._full_state is None:
            self._full_state = d
        return self._full_state

    def _explore_full(self, d: DState) -> bool:
        """Whether every text is accepted from `d`: each state it reaches accepts and moves on every
        char class (given up, as no, past `_FULL_LIMIT` states)."""
        seen = {d}
        todo = [d]
        classes = range(len(self.bounds))
        while todo:
            cur = todo.pop()
            if not cur.accepting or self._full.get(cur) is False:
                self._full[d] = False
                return False
            for k in classes:
                nxt = cur.raw_step(k)
                if nxt is None:
                    self._full[d] = False
                    return False
                if nxt not in seen:
                    if len(seen) >= _FULL_LIMIT:
                        self._full[d] = False
                        return False
                    seen.add(nxt)
                    todo.append(nxt)
        for state in seen:
            self._full[state] = True
        return True

    def states_made(self) -> int:
        """How many DFA states the lazy construction has made so far."""
        return len(self._dstates)

    def class_of(self, cp: int) -> int:
        """The index of the character class holding `cp`: chars of one class move every state alike."""
        return bisect.bisect_right(self.bounds, cp) - 1

    def classes_within(self, klass: CharSet) -> tuple[int, ...]:
        """The character classes holding some char of `klass` (each class moves every state alike)."""
        hit = self._within.get(klass)
        if hit is None:
            ends = [*self.bounds[1:], 0x110000]
            hit = tuple(k for k, lo in enumerate(self.bounds) if klass.overlaps(lo, ends[k] - 1))
            self._within[klass] = hit
        return hit

    def moves(self, s: int) -> dict[int, tuple[int, ...]]:
        """NFA state `s`'s live targets per character class (made once per state)."""
        hit = self._moves.get(s)
        if hit is None:
            by_class: dict[int, list[int]] = {}
            for cs, t in self.nfa.edges[s]:
                if t not in self.live:
                    continue
                for lo, hi in cs.ranges:
                    for k in range(self.class_of(lo), self.class_of(hi) + 1):
                        by_class.setdefault(k, []).append(t)
            hit = self._moves[s] = {k: tuple(ts) for k, ts in by_class.items()}
        return hit

    def closure_after(self, targets: set[int]) -> frozenset[int]:
        """The kept states reached from `targets` by epsilon edges (one cached closure per target)."""
        closures = self._closures
        parts: list[frozenset[int]] = []
        for t in targets:
            hit = closures.get(t)
            if hit is None:
                hit = closures[t] = self.nfa.closure({t}, at_start=False) & self._kept
            parts.append(hit)
        return parts[0] if len(parts) == 1 else frozenset().union(*parts)

    def fullmatch(self, text: str) -> bool:
        d: DState | None = self.initial
        for c in text:
            if d is None:
                return False
            d = d.step(c)
        return d is not None and d.accepting


_FREE, _WORD_NEXT, _OTHER_NEXT = 0, 1, 2  # what a word boundary passed on the way says of the next char


def _word_bounded(nfa: Nfa, start: int, final: int) -> tuple[Nfa, int, int]:
    """`nfa` without boundary edges, as (NFA, start, final): each state also knows whether the last char
    read was a word char (none read counts as not) and what a boundary passed since says of the next
    char. `\\b` holds where the last and the next char differ in being word chars, `\\B` where they
    agree; the end of the text counts as a char that is not. Only the combinations reached are made."""
    out = Nfa()
    made: dict[tuple[int, bool, int], int] = {}
    todo: list[tuple[int, bool, int]] = []

    def state(key: tuple[int, bool, int]) -> int:
        got = made.get(key)
        if got is None:
            got = made[key] = out.new()
            todo.append(key)
        return got

    new_start = state((start, False, _FREE))
    new_final = out.new()
    while todo:
        key = todo.pop()
        s, word, need = key
        here = made[key]
        if s == final and need != _WORD_NEXT:
            out.eps[here].append(new_final)
        out.eps[here].extend(state((t, word, need)) for t in nfa.eps[s])
        out.bol[here].extend(state((t, word, need)) for t in nfa.bol[s])
        if need != _WORD_NEXT:  # the end is not a word char
            out.eol[here].extend(state((t, word, need)) for t in nfa.eol[s])
        for t, boundary in nfa.bounds[s]:
            wants = _WORD_NEXT if boundary != word else _OTHER_NEXT
            if need in (_FREE, wants):
                out.eps[here].append(state((t, word, wants)))
        for klass, t in nfa.edges[s]:
            words, others = klass & WORD, klass - WORD
            if need != _OTHER_NEXT and not words.is_empty():
                out.edges[here].append((words, state((t, True, _FREE))))
            if need != _WORD_NEXT and not others.is_empty():
                out.edges[here].append((others, state((t, False, _FREE))))
    return out, new_start, new_final


def leading_lookaheads(pattern: str) -> tuple[list[tuple[bool, Ast]], str]:
    """The look-aheads right after a leading `^` ((positive, body) each) and the pattern without them;
    ([], pattern) when there are none, when one cannot be parsed on its own (nested look-arounds), or
    when the rest has branches at its top (the look-aheads would hold for the first alone): those are
    left to the parser (refused, or dropped when lenient)."""
    if not pattern.startswith(("^(?=", "^(?!")):
        return [], pattern
    looks: list[tuple[bool, Ast]] = []
    i = 1
    while pattern.startswith(("(?=", "(?!"), i):
        parser = RegexParser(pattern)
        parser.i = i + 3
        try:
            body = parser.alternation()
        except GrammarError:
            return [], pattern
        if parser.i >= len(pattern) or pattern[parser.i] != ")":
            return [], pattern
        looks.append((pattern[i + 2] == "=", body))
        i = parser.i + 1
    rest = "^" + pattern[i:]
    try:
        whole = RegexParser(rest, lenient=True).parse()
    except GrammarError:
        return [], pattern
    if whole[0] == "alt":
        return [], pattern  # `^(?=a)b|c`: the look-ahead belongs to the first branch alone
    return looks, rest


_shared: OrderedDict[tuple[str, bool, bool], Regex] = OrderedDict()
_refused: OrderedDict[tuple[str, bool, bool], str] = OrderedDict()  # look-aheads over MAX_LOOK_STATES
_shared_lock = threading.Lock()


def shared_regex(pattern: str, *, search: bool = False, lenient: bool = False) -> Regex:
    """The compiled pattern, one object for every grammar that uses it while it stays among the
    SHARED_REGEXES used last. Its lazily built DFA, the horizon signatures and the vocabulary tables
    hang on it, and a `format` (date-time, uri, ...) or a common pattern comes back schema after
    schema: each new schema built them again, the most of its first masks' time. Grammars share
    states of one pattern as the requests of one grammar always did (nothing in a Regex is per
    grammar). A refused pattern raises each time; one grown past SHARED_STATES is compiled anew."""
    key = (pattern, search, lenient)
    with _shared_lock:
        hit = _shared.get(key)
        if hit is not None and hit.states_made() <= SHARED_STATES:
            _shared.move_to_end(key)
            return hit
        refused = _refused.get(key)
    if refused is not None:
        raise GrammarError(refused)  # its look-aheads were explored to the limit once already
    try:
        made = Regex(pattern, search=search, lenient=lenient)
    except LookaheadsTooLarge as e:
        with _shared_lock:
            _refused[key] = e.message
            while len(_refused) > SHARED_REGEXES:
                _refused.popitem(last=False)
        raise
    with _shared_lock:
        hit = _shared.get(key)
        if hit is None or hit.states_made() > SHARED_STATES:
            hit = _shared[key] = made
        _shared.move_to_end(key)
        while len(_shared) > SHARED_REGEXES:
            _shared.popitem(last=False)
    return hit


class RegexFrame(Frame):
    """A whole regex as one frame (the `{"regex": ...}` spec); free runs on self-loops such as `[a-z]*`."""

    __slots__ = ("d",)

    d: DState

    def __init__(self, d: DState) -> None:
        self._hash = 0
        self.d = d

    def identity(self) -> tuple[object, ...]:
        return (self.d,)

    def chars(self) -> CharSet:
        return self.d.chars

    def feed(self, c: str) -> list[tuple[Frame, ...]]:
        nxt = self.d.step(c)
        return [] if nxt is None else [(RegexFrame(nxt),)]

    def can_end(self) -> bool:
        return self.d.accepting

    def free_run(self) -> FreeRun | None:
        loop = self.d.loop_chars()
        return None if loop.is_empty() or loop == self.d.chars else FreeRun(loop, None)

    def skip(self, n: int) -> Frame:
        return self

    def delegate(self) -> tuple[CharSet, Frame] | None:
        hint = self.d.default()
        return None if hint is None or hint[1] is self.d else (hint[0], RegexFrame(hint[1]))
