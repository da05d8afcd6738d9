"""Incremental, copyable character-level parsers: frames on persistent stacks, interned into states.

A `Frame` is one immutable piece of a parse (a literal half-read, an object between keys, ...).
A `ParserState` is a set of alternative frame stacks; `add_char` returns a new state and never
mutates the old one. States are interned per grammar so equal states are one object, which turns the
per-state memo of transitions, allowed characters and masks into a lazily built automaton.
Knows nothing of JSON, regexes or vocabularies.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokenloom.constrain.charset import EMPTY, CharSet
from tokenloom.constrain.interpreted import WeaklyHeld
from tokenloom.errors import GrammarError

if TYPE_CHECKING:
    from tokenloom.constrain.regex import DState

MAX_ALTERNATIVES = 256  # parallel stacks (ambiguous anyOf, regex-free choices) before we give up
# States interned by all grammars together (about 3 KB each with their transitions and memos, measured on the
# hard schema set): past it the grammar holding the most drops its automaton, so a stream of large
# schemas or long generations cannot grow the server without bound.
MAX_INTERNED = 100_000


class Frame:
    """One immutable element of a parse stack.

    A subclass names its fields in `identity`, which makes equality and the hash (computed once and kept:
    every new state is interned by its stacks, and a tuple hashes each of its frames again each time).
    It overrides `chars`, `feed` and `can_end`, and the hooks below that concern it; the defaults say
    "not this kind of frame". Frames are compiled classes with the engine (setup.py): a call through
    this base is a direct one, where a protocol's was a lookup by name.
    """

    __slots__ = ("_hash",)

    _hash: int

    def identity(self) -> tuple[object, ...]:
        """The fields that make this frame what it is (equality and the hash)."""
        raise NotImplementedError

    def __hash__(self) -> int:
        h = self._hash
        if not h:
            h = self._hash = hash(self.identity()) or 1
        return h

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not type(self) or not isinstance(other, Frame):
            return False
        return hash(self) == hash(other) and self.identity() == other.identity()

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.identity()!r}"

    def chars(self) -> CharSet:
        """Characters this frame itself can consume next."""
        raise NotImplementedError

    def feed(self, c: str) -> list[tuple[Frame, ...]]:
        """Frames that replace this one after consuming `c` (top last); [] = rejected, [()] = done."""
        raise NotImplementedError

    def can_end(self) -> bool:
        """Whether this frame may be popped now without consuming anything more."""
        raise NotImplementedError

    def free_run(self) -> FreeRun | None:
        """The run of chars this frame is in, if any (JSON string contents, free text)."""
        return None

    def skip(self, n: int) -> Frame:
        """This frame after `n` chars of its bounded free run."""
        return self

    def skips(self, most: int) -> list[Frame]:
        """`skip(1)` .. `skip(most)` (a frame may build them step by step)."""
        return [self.skip(n) for n in range(1, most + 1)]

    def skip_chars(self, most: int) -> CharSet | None:
        """The chars allowed after 1 .. `most` chars of the run, if the frame knows them alone."""
        return None

    def delegate(self) -> tuple[CharSet, Frame] | None:
        """(D, F): chars that leave this frame to the one frame F in a plain run (ParserState.delegate)."""
        return None

    def for_horizon(self, horizon: int) -> Frame:
        """A frame that takes the same strings of up to `horizon` chars (ParserState.mask_rep)."""
        return self

    def forced_text(self) -> tuple[str, list[tuple[Frame, ...]]] | None:
        """The text this frame must read next and the frames it leads to, when there is one."""
        return None

    def takes_any_name(self) -> bool:
        """Whether any run of string chars keeps this frame alive (a name of an open object)."""
        return False

    def pattern(self) -> tuple[DState, int, int, int | None] | None:
        """The pattern string this frame reads, for the whole-vocabulary pattern pass."""
        return None

    def unpadded(self) -> tuple[int, Frame | None] | None:
        """How many more whitespace chars fit, and what is left once they stop (see mask._padding)."""
        return None

    def splits(self) -> bool:
        """Whether `split` may give more than this frame."""
        return False

    def split(self) -> tuple[Frame, ...]:
        """One frame per alternative of an item read by a parser of its own (ParserState.alternatives)."""
        return (self,)

    def popped(self) -> Frame | None:
        """What this frame becomes once the frame it wraps is done; None: it is popped."""
        return None


@dataclass(frozen=True, slots=True)
class FreeRun:
    """A frame that accepts any run of `klass` characters: the trie walk adds such tokens in bulk.

    `remaining` is how many more such characters fit (None: unlimited and the frame is unchanged by
    them). `frame` is the frame so `skip` can be asked of it.
    """

    klass: CharSet
    remaining: int | None
    # The frame changes with each char (a regex still searching for its match) but no run of `klass`
    # chars can kill it: tokens inside the run are all allowed, the rest need the state they reach.
    stateful: bool = False
    exits: CharSet | None = None  # for a stateful run: every char that may follow it


Stack = tuple[Frame, ...]


class _Interned:
    """The states every live grammar holds, counted together; the trigger for `Grammar.forget`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.grammars: weakref.WeakSet[Grammar] = weakref.WeakSet()
        self.made = 0  # states made since the last count (cheap to bump; recounted past the limit)
        self.lock = threading.Lock()

    def total(self) -> int:
        with self.lock:
            return sum(len(g._states) for g in list(self.grammars))

    def grew(self) -> None:
        self.made += 1
        if self.made < self.limit // 8:
            return
        with self.lock:
            self.made = 0
            grammars = list(self.grammars)
            total = sum(len(g._states) for g in grammars)
            while total > self.limit and grammars:
                biggest = max(grammars, key=lambda g: len(g._states))
                total -= len(biggest._states)
                biggest.forget()
                grammars.remove(biggest)


_INTERNED = _Interned(MAX_INTERNED)


class Grammar(WeaklyHeld):
    """The interning table of one compiled grammar; states from different grammars never mix."""

    def __init__(self, start: Stack) -> None:
        self._states: dict[tuple[Stack, ...], ParserState] = {}
        self._start = start
        with _INTERNED.lock:
            _INTERNED.grammars.add(self)
        self.initial = self.state((start,))

    def state(self, stacks: tuple[Stack, ...]) -> ParserState:
        st = self._states.get(stacks)
        if st is None:
            st = self._states.setdefault(stacks, ParserState(self, stacks))
            _INTERNED.grew()
        return st

    def forget(self) -> None:
        """Drop the automaton explored so far: every state loses its links to others, so the states
        nobody holds are freed (a table cleared alone frees nothing while `initial` reaches them all).
        States still held (a running request's position) go on working and intern anew; only the
        memoised work is lost."""
        old = self._states
        self._states = {}
        for st in list(old.values()):
            st.forget_links()
        self.initial = self.state((self._start,))


class ParserState:
    """A set of alternative stacks; hashable by identity because states are interned."""

    __slots__ = (
        "_allowed",
        "_can_end",
        "_dele",
        "_free",
        "_has_dele",
        "_has_free",
        "_next",
        "_rep",
        "grammar",
        "memo",
        "stacks",
    )

    def __init__(self, grammar: Grammar, stacks: tuple[Stack, ...]) -> None:
        self.grammar = grammar
        self.stacks = stacks
        self._next: dict[str, ParserState | None] = {}
        self._allowed: CharSet | None = None
        self._can_end: bool | None = None
        self._free: tuple[FreeRun, Frame] | None = None
        self._has_free = False
        self._dele: tuple[CharSet, ParserState] | None = None
        self._has_dele = False
        self._rep: dict[int, ParserState] | None = None  # by horizon
        self.memo: dict[object, object] | None = None  # for consumers (the mask walk), made on first use

    def forget_links(self) -> None:
        """Drop what this state memoised about other states (see `Grammar.forget`)."""
        self._next = {}
        self._has_dele = False
        self._dele = None
        self._rep = None
        self.memo = None

    def add_char(self, c: str) -> ParserState | None:
        """The state after `c`, or None if `c` is not allowed here."""
        known = self._next.get(c)  # (not try/except: a compiled raise builds a traceback, ~1 µs)
        if known is not None or c in self._next:
            return known
        stacks = self.stacks
        if len(stacks) == 1 and stacks[0] and not stacks[0][-1].can_end():
            stack = stacks[0]  # the common case: one stack whose top takes the char or rejects it
            reps = stack[-1].feed(c)
            if len(reps) == 1:
                nxt: ParserState | None = self.grammar.state((stack[:-1] + reps[0],))
                self._next[c] = nxt
                return nxt
            if not reps:
                self._next[c] = None
                return None
        out: dict[Stack, None] = {}
        for stack in stacks:
            i = len(stack) - 1
            while i >= 0:
                top = stack[i]
                for rep in top.feed(c):
                    out[stack[:i] + rep] = None
                if not top.can_end():
                    break
                i -= 1
        if len(out) > MAX_ALTERNATIVES:
            raise GrammarError("grammar too ambiguous: too many parallel alternatives")
        nxt = self.grammar.state(tuple(out)) if out else None
        self._next[c] = nxt
        return nxt

    def allowed_chars(self) -> CharSet:
        if self._allowed is None:
            acc = EMPTY
            for stack in self.stacks:
                for frame in reversed(stack):
                    acc = acc | frame.chars()
                    if not frame.can_end():
                        break
            self._allowed = acc
        return self._allowed

    def can_end(self) -> bool:
        if self._can_end is None:
            self._can_end = any(all(f.can_end() for f in stack) for stack in self.stacks)
        return self._can_end

    def free_run(self) -> tuple[FreeRun, Frame] | None:
        """The free run of the top frame(s), when nothing below could take their characters.

        With several stacks (an anyOf of strings) every top must be in an unlimited run; the class is
        then the intersection, and `skip` is never needed since the state does not change. Stacks
        that differ only below one same top frame (one string, two parents) share its run.
        """
        if not self._has_free:
            self._has_free = True
            runs = [stack_run(stack) for stack in self.stacks]
            if runs and all(r is not None and r == runs[0] for r in runs):
                self._free = runs[0]
            elif runs and all(r is not None and r[0].remaining is None and not r[0].stateful for r in runs):
                klass = runs[0][0].klass  # type: ignore[index]
                for r in runs[1:]:
                    klass = klass & r[0].klass  # type: ignore[index]
                if not klass.is_empty():
                    self._free = (FreeRun(klass, None), runs[0][1])  # type: ignore[index]
        return self._free

    def delegate(self) -> tuple[CharSet, ParserState] | None:
        """(D, F): every char of D leads from here to the free state F, which D keeps unchanged."""
        if not self._has_dele:
            self._has_dele = True
            self._dele = self._delegate()
        return self._dele

    def _delegate(self) -> tuple[CharSet, ParserState] | None:
        """Per stack: a frame hint (D_i, F_i), or else the stack must reject D (outside its chars).

        D is what every hinted stack sends to its F_i and every other stack rejects; the target is
        the state of all F_i stacks, which must be an unlimited free run covering D.
        """
        klass: CharSet | None = None
        targets: list[Stack] = []
        others: list[Stack] = []
        for stack in self.stacks:
            top = stack[-1] if stack else None
            hint = top.delegate() if top is not None else None
            if hint is None and top is not None:
                run = stack_run(stack)  # a stack already in an unlimited run is its own target
                if run is not None and run[0].remaining is None and not run[0].stateful:
                    hint = (run[0].klass, top)
            if hint is None:
                others.append(stack)
                continue
            klass = hint[0] if klass is None else klass & hint[0]
            targets.append((*stack[:-1], hint[1]))
        if klass is None:
            return None
        for stack in others:
            klass = klass - _stack_chars(stack)
        if klass.is_empty():
            return None
        target = self.grammar.state(tuple(dict.fromkeys(targets)))
        run = target.free_run()
        if run is None or run[0].remaining is not None or run[0].stateful:
            return None
        if not (klass - run[0].klass).is_empty():
            return None
        return klass, target

    def mask_rep(self, horizon: int) -> ParserState:
        """A state that takes exactly the same strings of up to `horizon` characters as this one.

        Counters far from their bounds (a string's length well inside its maxLength) make many states
        that differ only beyond the next token: they share one representative, so they share one mask.
        Frames opt in with `for_horizon(h)`; the others are kept as they are.
        """
        reps = self._rep
        if reps is None:
            reps = self._rep = {}
        else:
            hit = reps.get(horizon)
            if hit is not None:
                return hit
        stacks = tuple(dict.fromkeys(tuple(f.for_horizon(horizon) for f in stack) for stack in self.stacks))
        state = self if stacks == self.stacks else self.grammar.state(stacks)
        reps[horizon] = state
        return state

    def alternatives(self) -> tuple[ParserState, ...]:
        """Single-alternative states whose masks join to this state's mask (stacks evolve apart, so a
        token fits this state when it fits one of them): one per stack, and a stack whose top frame
        reads an item with a parser of its own (`split`, a uniqueItems item) split by that parser's
        alternatives too. An anyOf of a free string and an enum is then one bulk run and one short
        walk instead of a joint walk down every token the string takes."""
        memo = self.memo
        if memo is None:
            memo = self.memo = {}
        hit = memo.get(_ALTERNATIVES_KEY)
        if hit is None:
            stacks: dict[Stack, None] = {}
            for stack in self.stacks:
                if not stack:
                    stacks[stack] = None
                    continue
                tops = stack[-1].split()
                stacks.update(dict.fromkeys((*stack[:-1], top) for top in tops))
            hit = memo[_ALTERNATIVES_KEY] = (
                (self,) if len(stacks) == 1 else tuple(self.grammar.state((stack,)) for stack in stacks)
            )
        return hit  # type: ignore[return-value]

    def common_top(self) -> Frame | None:
        """The one top frame every stack shares (e.g. one string read under two parents), if any."""
        tops = {stack[-1] if stack else None for stack in self.stacks}
        return tops.pop() if len(tops) == 1 else None

    def closed(self) -> ParserState:
        """The state once the top frame of every stack is done: popped, or, for a frame that wraps
        another (a uniqueItems item), replaced by what its `popped()` says it becomes."""
        return self.grammar.state(tuple(dict.fromkeys(_closed(stack) for stack in self.stacks)))

    def skips(self, most: int) -> list[ParserState]:
        """`skip(1)` .. `skip(most)` at once (a frame may build them step by step: `skips` of its own)."""
        run = self.free_run()
        assert run is not None  # internal: only called on bounded free states (one top for all stacks)
        top = run[1]
        tops = top.skips(most)
        return [
            self.grammar.state(tuple(dict.fromkeys((*stack[:-1], t) for stack in self.stacks))) for t in tops
        ]

    def skip_chars(self, most: int) -> CharSet:
        """The chars allowed after 1 .. `most` characters of the current free run, together. A top
        frame that cannot end may answer from its own `skip_chars` (a string with maxLength: from its
        two extremes) without making the `most` look-ahead states; otherwise from `skips`."""
        run = self.free_run()
        assert run is not None  # internal: only called on bounded free states (one top for all stacks)
        top = run[1]
        got = top.skip_chars(most) if not top.can_end() else None
        if got is not None:
            return got
        acc = EMPTY
        for later in self.skips(most):
            acc = acc | later.allowed_chars()
        return acc

    def skip(self, n: int) -> ParserState:
        """The state after `n` characters of the current free run."""
        run = self.free_run()
        assert run is not None  # internal: only called on bounded free states (one top for all stacks)
        top = run[1].skip(n)
        return self.grammar.state(tuple(dict.fromkeys((*stack[:-1], top) for stack in self.stacks)))


_ALTERNATIVES_KEY = "parser.alternatives"  # where `alternatives` keeps its answer in a state's memo


def _closed(stack: Stack) -> Stack:
    popped = stack[-1].popped() if stack else None
    return stack[:-1] if popped is None else (*stack[:-1], popped)


def stack_run(stack: Stack) -> tuple[FreeRun, Frame] | None:
    """The free run of the stack's top frame, when nothing below could take its characters."""
    if not stack:
        return None
    top = stack[-1]
    run = top.free_run()
    if run is None or (top.can_end() and not (_below_chars(stack) & run.klass).is_empty()):
        return None
    return run, top


def _stack_chars(stack: Stack) -> CharSet:
    acc = EMPTY
    for frame in reversed(stack):
        acc = acc | frame.chars()
        if not frame.can_end():
            break
    return acc


def _below_chars(stack: Stack) -> CharSet:
    acc = EMPTY
    for frame in reversed(stack[:-1]):
        acc = acc | frame.chars()
        if not frame.can_end():
            break
    return acc


def feed_text(state: ParserState | None, text: str) -> ParserState | None:
    """Advance by every character of `text` (None once rejected). The trie walk feeds tokens by the
    hundred thousand, mostly along steps made before: those are read from the table directly, and
    only a step not made yet costs a call of `add_char`."""
    for c in text:
        if state is None:
            return None
        at = state
        state = at._next.get(c)
        if state is None:  # not made yet, or rejected (add_char answers that from the table too)
            state = at.add_char(c)
    return state


def accepts(state: ParserState, text: str) -> bool:
    """Whether `text` is a complete sentence from `state` (used by tests and the brute-force check)."""
    end = feed_text(state, text)
    return end is not None and end.can_end()
