"""Reading a value under a probe (`schema_ir.Probe`: conditions on an earlier property, `schema_probes`).

The probe's features come from reading P's value. An object P is read as usual by object frames that carry
the features (`schema_ir.Carry`: which names it holds); the values of the few properties the conditions
check are read by a `ProbeFrame` beside those checks. A scalar P is read by a `ProbeFrame` beside one
check per condition. A `ProbeFrame` holds a sub-parser of the value and one of each check, all fed the
same characters (as a `json_checks.ComboFrame` holds its parts), and the object frame that follows the
value: when the value ends, the verdicts of the checks are features, and the object goes on with them
(or, for a scalar P, under the node they pick). Only the value drives; a check that rejects it is a
verdict of False, and once every check has, the frame unwraps into the value's own stacks. Knows nothing
of vocabularies.
"""

from __future__ import annotations

from tokenloom.constrain.charset import CharSet
from tokenloom.constrain.json_checks import joint_run, skipped
from tokenloom.constrain.json_frames import Replacements, ValueFrame, WsFrame
from tokenloom.constrain.json_objects import ObjFrame, Phase
from tokenloom.constrain.parser import Frame, FreeRun, Grammar, ParserState
from tokenloom.constrain.schema_ir import Carry, Probe, Schema

Subs = tuple[ParserState | None, ...]
_OPEN = CharSet.of("{")


def _checks(probe: Probe, name: str) -> tuple[Schema, ...]:
    """What the value of P's property `name` is read beside (`""`: P's whole value, a scalar)."""
    return probe.whole if not name else tuple(node for _, node in probe.checks[name])


def start_probe(probe: Probe, after: ObjFrame, name: str, value: Schema) -> Replacements:
    """The frames after the colon of P (`name` ""), or of P's property `name` (of schema `value`); `after`
    is the object once that value is read."""
    if not name and not probe.whole:
        return [(OpenFrame(probe, after), WsFrame(0, after.depth))]
    depth = after.depth
    key = (name, depth, value)
    starts = probe.starts.get(key)
    if starts is None:
        starts = tuple(
            Grammar((ValueFrame(schema, depth), WsFrame(0, depth))).initial
            for schema in (value, *_checks(probe, name))
        )
        probe.starts[key] = starts
    return [(ProbeFrame(probe, after, name, starts),)]


class OpenFrame(Frame):
    """Before the `{` of an object P under a probe: the object frame it opens carries the features."""

    __slots__ = ("after", "probe")

    probe: Probe
    after: ObjFrame

    def __init__(self, probe: Probe, after: ObjFrame) -> None:
        self._hash = 0
        self.probe = probe
        self.after = after

    def identity(self) -> tuple[object, ...]:
        return (self.probe, self.after)

    def chars(self) -> CharSet:
        return _OPEN & self.probe.value.first_chars()

    def feed(self, c: str) -> Replacements:
        if c != "{":
            return []
        depth = self.after.depth
        carry = Carry(self.probe, self.after, self.probe.initial)
        out: Replacements = []
        for alt in self.probe.value.alternatives():
            if alt.combo is None and alt.literals is None and alt.types == frozenset({"object"}):
                out.append((ObjFrame(alt, Phase.OPEN, depth=depth + 1, carry=carry), WsFrame(0, depth + 1)))
                continue
            # not a plain object (the compiler saw none): read as usual, D as its own schema says
            below = self.after.going_on(self.probe.fallback, self.after.carry)
            out.extend(below + stack for stack in ValueFrame(alt, depth).feed(c))
        return out

    def can_end(self) -> bool:
        return False


def _fed(stack: tuple[Frame, ...], c: str) -> Replacements:
    """`stack` (top last) after `c`: its top takes it, or, where the top may end, a frame below does."""
    out: Replacements = []
    i = len(stack) - 1
    while i >= 0:
        top = stack[i]
        for rep in top.feed(c):
            out.append(stack[:i] + rep)
        if not top.can_end():
            break
        i -= 1
    return out


def _verdicts(subs: Subs) -> tuple[bool, ...]:
    return tuple(s is not None and s.can_end() for s in subs[1:])


def _continued(probe: Probe, after: ObjFrame, name: str, verdicts: tuple[bool, ...]) -> tuple[Frame, ...]:
    """The object after the value (with the whitespace before its `,`): an object P with the verdicts as
    features, or, after a scalar P, the object around it under the node they pick."""
    carry = after.carry
    if name and carry is not None:
        slots = tuple(slot for slot, _ in probe.checks[name])
        return after.going_on(after.schema, carry.checked(slots, verdicts))
    return after.going_on(probe.pick(verdicts), carry)


def _settled(probe: Probe, after: ObjFrame, name: str, subs: Subs) -> Replacements:
    """The replacements for a probe in state `subs`: kept, unwrapped, ended or rejected."""
    main = subs[0]
    if main is None:
        return []
    if main.allowed_chars().is_empty():  # the value is over: the object goes on
        return [_continued(probe, after, name, _verdicts(subs))] if main.can_end() else []
    if all(s is None for s in subs[1:]):  # every check failed: the verdicts are known already
        below = _continued(probe, after, name, _verdicts(subs))
        return [below + stack for stack in main.stacks]
    return [(ProbeFrame(probe, after, name, subs),)]


class ProbeFrame(Frame):
    """A value read beside checks: `subs` are the sub-parsers of the value and of each check (None: that
    check rejected it), `after` the object frame once the value is read, `name` the property of an
    object P whose value this is ("": P itself, a scalar)."""

    __slots__ = ("after", "name", "probe", "subs")

    probe: Probe
    after: ObjFrame
    name: str
    subs: Subs

    def __init__(self, probe: Probe, after: ObjFrame, name: str, subs: Subs) -> None:
        self._hash = 0
        self.probe = probe
        self.after = after
        self.name = name
        self.subs = subs

    def identity(self) -> tuple[object, ...]:
        return (self.probe, self.after, self.name, self.subs)

    def _main(self) -> ParserState:
        main = self.subs[0]
        assert main is not None  # internal: a probe whose value was rejected is not kept
        return main

    def chars(self) -> CharSet:
        main = self._main()
        acc = main.allowed_chars()
        if main.can_end():
            resumed, ws = _continued(self.probe, self.after, self.name, _verdicts(self.subs))
            acc = acc | ws.chars() | resumed.chars()
        return acc

    def feed(self, c: str) -> Replacements:
        main = self._main()
        out: Replacements = []
        nxt = main.add_char(c)
        if nxt is not None:
            checks = tuple(None if s is None else s.add_char(c) for s in self.subs[1:])
            out.extend(_settled(self.probe, self.after, self.name, (nxt, *checks)))
        if main.can_end():
            out.extend(_fed(_continued(self.probe, self.after, self.name, _verdicts(self.subs)), c))
        return out

    def can_end(self) -> bool:
        return False  # the object after the value cannot end either

    def free_run(self) -> FreeRun | None:
        """Inside the value (a string, say) where every check takes the same run; none where the value
        may end, since the object's chars come next."""
        if self._main().can_end():
            return None
        return joint_run(self.subs, 1)

    def skip(self, n: int) -> ProbeFrame:
        return ProbeFrame(self.probe, self.after, self.name, skipped(self.subs, n))
