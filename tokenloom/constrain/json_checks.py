"""Values checked against several schemas side by side: `oneOf` (exactly one) and `not`.

A `ComboFrame` runs one sub-parser per part of a `schema_ir.Combo` on the same characters. As soon as
the outcome is decided by a single part (the other `oneOf` branches died, the `not` part died) the frame
unwraps into that part's own stacks, so the usual fast paths (free runs in strings) come back. While
undecided, the value is accepted at its end only if the rule holds. The mask stays exact with respect
to this parser; what it cannot see ahead is a prefix after which every completion breaks the rule (two
`oneOf` branches both already satisfied for good): such a prefix is a dead end, never a wrong output.
Only what the compiler cannot settle comes here: `negation` turns a `not` over object names, values and
types into plain branches, and `disjoint` proves many `oneOf`s plain unions. Knows nothing of vocabularies.
"""

from __future__ import annotations

from tokenloom.constrain.charset import EMPTY, CharSet
from tokenloom.constrain.json_frames import ValueFrame
from tokenloom.constrain.parser import Frame, FreeRun, Grammar, ParserState, stack_run
from tokenloom.constrain.regex import DState
from tokenloom.constrain.schema_ir import Combo

Subs = tuple[ParserState | None, ...]
Replacements = list[tuple[Frame, ...]]


def start_combo(combo: Combo, c: str, depth: int) -> Replacements:
    """Frames for a value of `combo` whose first character `c` was just read."""
    starts = combo.starts.get(depth)
    if starts is None:
        starts = tuple(Grammar((ValueFrame(p, depth),)).initial for p in combo.parts)
        combo.starts[depth] = starts
    return _settle(combo, tuple(s.add_char(c) for s in starts))


def _stack_runs(st: ParserState) -> list[FreeRun | None]:
    """The free run of each stack of a part (a part may hold several stacks, e.g. an anyOf)."""
    return [None if r is None else r[0] for r in (stack_run(stack) for stack in st.stacks)]


def _finished(st: ParserState) -> bool:
    return st.allowed_chars().is_empty()


def _settle(combo: Combo, subs: Subs) -> Replacements:
    """The replacements for a combination in state `subs`: unwrapped, kept, done or rejected."""
    if combo.kind == "oneOf":
        live = [s for s in subs if s is not None]
        if not live:
            return []
        if len(live) == 1:
            return list(live[0].stacks)
        if all(_finished(s) for s in live):
            return [()] if sum(s.can_end() for s in live) == 1 else []
        return [(ComboFrame(combo, subs),)]
    main, neg = subs
    if main is None:
        return []
    if neg is None:
        return list(main.stacks)
    if _finished(main):  # the value is over: it holds if the main part ends here and the negated one does not
        return [] if neg.can_end() or not main.can_end() else [()]
    return [(ComboFrame(combo, subs),)]


def joint_run(subs: Subs, driving: int) -> FreeRun | None:
    """A run every stack of every live sub-parser takes (e.g. all inside the same string value); stateful
    if one is. The first `driving` subs drive the value, the others only watch it (a `not` part, a
    probe's checks). A bound must hold for the whole: the driving stacks are all unbounded or all share
    one bound, and a watching one is unbounded or shares it too (a sub that dies inside the run while
    another lives on would make the bound a lie). Where a watching stack takes a narrower run or none
    (a `not` of a property-name pattern beside a free name), an unbounded driving run is the run, stateful:
    its intersection with the watcher's ({"a"}) left nearly every token to be fed one by one."""
    driving_runs: list[FreeRun] = []
    watching: list[FreeRun] = []
    watching_apart = False  # some watching stack leaves the driving run's class or is in none at all
    watchers = 0  # watching stacks
    for i, s in enumerate(subs):
        if s is None:
            continue
        for run in _stack_runs(s):
            if run is None and i < driving:
                return None
            if i >= driving:
                watchers += 1
            if run is None:
                watching_apart = True
            else:
                (driving_runs if i < driving else watching).append(run)
    if not driving_runs:
        return None
    if not watching_apart and watching:
        own = driving_runs[0].klass
        watching_apart = any(
            not (own - r.klass).is_empty() or r.stateful or r.remaining is not None for r in watching
        )
    bounds = {r.remaining for r in driving_runs}
    if watching_apart and bounds == {None}:
        # a watching part never refuses a char (it only vetoes where the value ends, or drops out): the
        # driving run alone says which chars are taken, and the watching state moves with them
        klass = driving_runs[0].klass
        for r in driving_runs[1:]:
            klass = klass & r.klass
        return None if klass.is_empty() else FreeRun(klass, None, stateful=True)
    if len(watching) < watchers:
        return None  # a watching stack in no run: no run holds the whole unless the one above
    runs = driving_runs + watching
    klass = runs[0].klass
    for r in runs[1:]:
        klass = klass & r.klass
    stateful = any(r.stateful for r in runs)
    if klass.is_empty() or len(bounds) > 1 or (stateful and bounds != {None}):
        return None
    bound = bounds.pop()
    if any(r.remaining is not None and r.remaining != bound for r in watching):
        return None
    return FreeRun(klass, bound, stateful)


def skipped(subs: Subs, n: int) -> Subs:
    """The subs after `n` chars of their joint run: stacks in a bounded run skip them, the others are
    unchanged by them."""
    out: list[ParserState | None] = []
    for s in subs:
        if s is None:
            out.append(None)
            continue
        stacks: list[tuple[Frame, ...]] = []
        for stack, run in zip(s.stacks, _stack_runs(s), strict=True):
            top = stack[-1] if stack else None
            if top is not None and run is not None and run.remaining is not None:
                stacks.append((*stack[:-1], top.skip(n)))
            else:
                stacks.append(stack)
        out.append(s.grammar.state(tuple(dict.fromkeys(stacks))))
    return tuple(out)


def _hint(s: ParserState) -> tuple[CharSet, ParserState] | None:
    """A part's delegation hint (ParserState.delegate); also where the part is in a counted run (a
    minLength not reached yet) that one char takes into an unlimited run: every char of both runs then
    leads to that one state (a `not` over a string's start, `minLength: 1` beside `not: {pattern}`)."""
    hint = s.delegate()
    if hint is not None:
        return hint
    run = s.free_run()
    if run is None or run[0].remaining is None or run[0].stateful or run[0].remaining < 1:
        return None
    after = s.skip(1)
    later = after.free_run()
    if later is None or later[0].remaining is not None or later[0].stateful:
        return None
    return run[0].klass & later[0].klass, after


class ComboFrame(Frame):
    """An undecided combination: the sub-parser states of its parts (None: that part rejected)."""

    __slots__ = ("combo", "subs")

    combo: Combo
    subs: Subs

    def __init__(self, combo: Combo, subs: Subs) -> None:
        self._hash = 0
        self.combo = combo
        self.subs = subs

    def identity(self) -> tuple[object, ...]:
        return (self.combo, self.subs)

    def _driving(self) -> Subs:
        """The parts whose characters the value may take (a `not` part only vetoes)."""
        return self.subs if self.combo.kind == "oneOf" else self.subs[:1]

    def chars(self) -> CharSet:
        acc = EMPTY
        for s in self._driving():
            if s is not None:
                acc = acc | s.allowed_chars()
        return acc

    def feed(self, c: str) -> Replacements:
        return _settle(self.combo, tuple(None if s is None else s.add_char(c) for s in self.subs))

    def can_end(self) -> bool:
        if self.combo.kind == "oneOf":
            return sum(s is not None and s.can_end() for s in self.subs) == 1
        main, neg = self.subs
        return main is not None and main.can_end() and not (neg is not None and neg.can_end())

    def free_run(self) -> FreeRun | None:
        """A run every stack of every live part takes (see `joint_run`; a `not` part only vetoes)."""
        return joint_run(self.subs, len(self.subs) if self.combo.kind == "oneOf" else 1)

    def skip(self, n: int) -> ComboFrame:
        return ComboFrame(self.combo, skipped(self.subs, n))

    def pattern(self) -> tuple[DState, int, int, int | None] | None:
        """The pattern string every live part reads (one same top frame in each, as two `oneOf` branches
        of an object read one property's value): the whole-vocabulary pattern pass then judges the
        tokens inside the string, alike for every part, and those that close it go on from `popped()`."""
        top: Frame | None = None
        for s in self.subs:
            if s is None:
                continue
            mine = s.common_top()
            if mine is None or (top is not None and mine != top):
                return None
            top = mine
        return top.pattern() if top is not None else None

    def popped(self) -> ComboFrame:
        """This combination once the string `pattern` names closes in every part."""
        return ComboFrame(self.combo, tuple(None if s is None else s.closed() for s in self.subs))

    def delegate(self) -> tuple[CharSet, Frame] | None:
        """(D, F) as a stack top: the parts' own hints agree on D, parts without one reject D.

        F keeps the parts that take D (possibly just one: F then behaves as that part alone, which
        is what `feed` would unwrap to)."""
        klass: CharSet | None = None
        targets: list[ParserState | None] = []
        for s in self.subs:
            hint = _hint(s) if s is not None else None
            targets.append(hint[1] if hint is not None else None)
            if hint is not None:
                klass = hint[0] if klass is None else klass & hint[0]
        if klass is None:
            return None
        for s, t in zip(self.subs, targets, strict=True):
            if s is not None and t is None:
                klass = klass - s.allowed_chars()
        if self.combo.kind == "not" and targets[0] is None:
            return None
        return (klass, ComboFrame(self.combo, tuple(targets))) if not klass.is_empty() else None
