"""JSON objects against a compiled schema, one character at a time.

Property names follow the schema's order, or come in any order where the schema says
"x-tokenloom-any-order" (`pos` is then the set of properties seen, as bits); additional names and names
under patternProperties are free runs for the trie walk when nothing distinguishes their characters.
Knows nothing of vocabularies.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache

from tokenloom.constrain import name_musts
from tokenloom.constrain.charset import ANY, EMPTY, JSON_STRING_FREE, CharSet
from tokenloom.constrain.json_frames import (
    BACKSLASH,
    ESCAPES,
    QUOTE,
    Replacements,
    ValueFrame,
    WsFrame,
    escape_chars,
    hex_digits,
)
from tokenloom.constrain.parser import Frame, FreeRun
from tokenloom.constrain.regex import DState, Regex
from tokenloom.constrain.regex_horizon import horizon_rep
from tokenloom.constrain.schema_ir import Carry, Probe, Schema

ProbeStart = Callable[[Probe, "ObjFrame", str, Schema], Replacements]
_probe_start: list[ProbeStart] = []  # json_probe.start_probe, installed by json_values


def install_probe_start(start: ProbeStart) -> None:
    """`json_values` installs `json_probe.start_probe` here (json_probe builds on ObjFrame, so this module
    cannot import it)."""
    _probe_start[:] = [start]


class Phase(IntEnum):
    OPEN = 1  # after "{"
    KEY = 2  # inside a property name
    COLON = 3  # after the name's closing quote
    AFTER_VALUE = 4  # after a property value
    AFTER_COMMA = 5  # after ","


class ObjFrame(Frame):
    """An object: `pos` is the next schema property allowed (order follows the schema), or the bits of
    the properties seen (any order), `num` keys read.

    In the KEY phase `key` is the name so far, or None once it can only be an additional property;
    `pats` are the states of the patternProperties patterns on the name (None: no longer matching).
    In the COLON phase `value` is the schema of the coming value (and `key` its name, where `carry` checks
    that value). `carry` is set on an object read under a probe (`schema_ir.Carry`): it gathers the
    probe's features, and the object ends in the frame the probe picks instead of being popped.
    `met` are the bits of the schema's name musts (name_musts.py) the names so far meet (-1: not known,
    not tracked); where they are tracked, `key` keeps the whole name.
    """

    __slots__ = (
        "carry",
        "code",
        "depth",
        "esc",
        "key",
        "met",
        "num",
        "pats",
        "phase",
        "pos",
        "schema",
        "value",
    )

    schema: Schema
    phase: Phase
    pos: int
    num: int
    key: str | None
    value: Schema | None
    depth: int
    esc: int  # escape progress inside a property name, as in StrFrame
    pats: tuple[DState | None, ...]
    code: int
    carry: Carry | None
    met: int

    def __init__(
        self,
        schema: Schema,
        phase: Phase,
        pos: int = 0,
        num: int = 0,
        key: str | None = "",
        value: Schema | None = None,
        depth: int = 1,
        esc: int = 0,
        pats: tuple[DState | None, ...] = (),
        code: int = 0,
        carry: Carry | None = None,
        met: int = 0,
    ) -> None:
        self._hash = 0
        self.schema = schema
        self.phase = phase
        self.pos = pos
        self.num = num
        self.key = key
        self.value = value
        self.depth = depth
        self.esc = esc
        self.pats = pats
        self.code = code
        self.carry = carry
        self.met = met

    def identity(self) -> tuple[object, ...]:
        return (
            self.schema,
            self.phase,
            self.pos,
            self.num,
            self.key,
            self.value,
            self.depth,
            self.esc,
            self.pats,
            self.code,
            self.carry,
            self.met,
        )

    def _candidates(self) -> tuple[tuple[int, str], ...]:
        return _candidates(self.schema, self.pos)

    def _can_close(self) -> bool:
        s = self.schema
        if self.num < s.min_props:
            return False
        if self._tracked() and self.met != name_musts.all_bits(s):
            return False  # a must no name met: the `not` it stands for refuses the object
        if s.any_order:
            return self.pos & _required_bits(s) == _required_bits(s)
        return all(n not in s.required for n, _ in s.props[self.pos :])

    def _more_keys(self) -> bool:
        mx = self.schema.max_props
        if mx is not None and self.num >= mx:
            return False
        s = self.schema
        if self._gates() == ():
            return False  # no name could leave the musts still unmet coverable
        return bool(self._candidates()) or s.additional is not None or bool(s.pattern_props)

    def _live(self) -> bool:
        return any(d is not None for d in self.pats)

    def _tight(self) -> bool:
        """Every slot maxProperties leaves is needed by a required name not written yet: the next name
        must be one of those (another one would leave the object no way to end)."""
        s = self.schema
        mx = s.max_props
        return mx is not None and bool(s.required) and _missing_required(s, self.pos) >= mx - self.num

    def _bits(self) -> int:
        """The known names the next name may be, as bits (only required ones when `_tight`)."""
        bits = _candidate_bits(self.schema, self.pos)
        return bits & _required_bits(self.schema) if self._tight() else bits

    def _extra(self) -> Schema | None:
        """The schema of additional names here: none when `_tight`."""
        return None if self._tight() else self.schema.additional

    def _tracked(self) -> bool:
        """Whether the names are matched against the schema's musts (see name_musts.py)."""
        s = self.schema
        if not s.name_musts:  # nearly every object: no call into name_musts
            return False
        return self.met >= 0 and name_musts.tracked(s)

    def _gates(self) -> tuple[Regex, ...] | None:
        """The regexes one of which the next name must match (None: any name will do)."""
        if not self._tracked():
            return None
        s = self.schema
        mx = s.max_props
        assert mx is not None  # internal: tracked only under maxProperties
        return name_musts.gate(s, name_musts.all_bits(s) & ~self.met, mx - self.num)

    def _gate_states(self) -> tuple[DState, ...] | None:
        """In a name: the gate regexes' states on it (None: no gate)."""
        gates = self._gates()
        if gates is None or self.key is None:
            return None
        return name_musts.states(gates, self.key)

    def chars(self) -> CharSet:
        ph = self.phase
        if ph is Phase.KEY:
            return self._key_chars()
        if ph is Phase.COLON:
            return CharSet.of(":")
        acc = QUOTE if ph is Phase.AFTER_COMMA or (ph is Phase.OPEN and self._more_keys()) else EMPTY
        if ph is not Phase.AFTER_COMMA and self._can_close():
            acc = acc | CharSet.of("}")
        if ph is Phase.AFTER_VALUE and self._more_keys():
            acc = acc | CharSet.of(",")
        return acc

    def _key_chars(self) -> CharSet:
        key = self.key
        if self.esc:
            targets = self._escape_targets()
            return escape_chars(targets) if self.esc == 1 else hex_digits(targets, self.code, 5 - self.esc)
        acc = EMPTY if key is None else _next_known_chars(self.schema, self._bits(), key)
        if self._extra() is not None:
            acc = acc | JSON_STRING_FREE
        else:
            for d in _closing_pats(self.schema, self.pats):
                acc = acc | (d.chars & JSON_STRING_FREE)
        acc = self._gated(acc)
        if self._may_escape():
            acc = acc | BACKSLASH
        if self._close_key() is not None:
            acc = acc | QUOTE
        return acc

    def _escape_targets(self) -> CharSet:
        """The chars an escape may write into the name here: those `_key_char` keeps alive (a known
        name's next char, any char of an additional name, a char some live pattern takes)."""
        if self._extra() is not None:
            return self._gated(ANY)
        acc = EMPTY if self.key is None else _next_known_chars(self.schema, self._bits(), self.key)
        for d in _closing_pats(self.schema, self.pats):
            acc = acc | d.chars
        return self._gated(acc)

    def _gated(self, acc: CharSet) -> CharSet:
        """`acc` less the chars no gate regex takes next."""
        gated = self._gate_states()
        if gated is None:
            return acc
        allowed = EMPTY
        for d in gated:
            allowed = allowed | d.chars
        return acc & allowed

    def _may_escape(self) -> bool:
        """A backslash: only where a char may still follow (not after `[a-z]{1,3}` is full) and some
        escape writes a char that keeps the name alive."""
        growing = any(not d.chars.is_empty() for d in _closing_pats(self.schema, self.pats))
        return (self._extra() is not None or growing) and not escape_chars(self._escape_targets()).is_empty()

    def _close_key(self) -> tuple[int, Schema] | None:
        """(next pos, value schema) if the name read so far can end here."""
        key, s = self.key, self.schema
        gated = self._gate_states()
        if gated is not None and not any(d.accepting for d in gated):
            return None
        if key is not None:
            known = _known_index(s, self._bits(), key)
            if known is not None:
                return (self.pos | 1 << known if s.any_order else known + 1), s.props[known][1]
        if key is not None and key in s.prop_names():
            return None
        matched = frozenset(i for i, d in enumerate(self.pats) if d is not None and d.accepting)
        if matched & _refusing(s):
            return None
        if matched:
            value = s.pattern_sets.get(matched) or s.pattern_sets[frozenset((min(matched),))]
            return self.pos, value
        extra = self._extra()
        return None if extra is None else (self.pos, extra)

    def _key_char(self, ch: str) -> Replacements:
        """The name grows by the (decoded) character `ch`."""
        s = self.schema
        key = None if self.key is None else self.key + ch
        pats = tuple(None if d is None else d.step(ch) for d in self.pats) if self.pats else ()
        if _refused_for_good(s, pats):
            return []
        closing = _closing_pats(s, pats)
        extra = self._extra()
        known = key is not None and _next_known(s, self._bits(), key)
        if key is not None and not known:
            if extra is None and not closing:
                return []
            if not _any_name_from(s, key) and not self._tracked():
                key = None  # can only be an additional (or pattern) property from here on
        if key is None and extra is None and not closing:
            return []
        gates = self._gates()
        if gates is not None and key is not None and not name_musts.states(gates, key):
            return []  # no gate regex can match a name starting so
        grown = ObjFrame(
            s, Phase.KEY, self.pos, self.num, key, None, self.depth, 0, pats, 0, self.carry, met=self.met
        )
        if (
            not known
            and extra is None
            and all(d.chars.is_empty() for d in closing)
            and grown._close_key() is None
        ):
            return []  # a full pattern name that cannot close (a known name written before: "a" twice)
        return [(grown,)]

    def _key_escape(self, c: str) -> Replacements:
        """A backslash escape inside a name (`esc` 1: after the backslash, 2..5: \\uXXXX digits)."""
        esc = self.esc
        if esc == 0:
            return [(self._escaping(1, 0),)]
        if esc == 1:
            if c == "u":
                return (
                    [(self._escaping(2, 0),)]
                    if escape_chars(self._escape_targets()).contains_cp(0x75)
                    else []
                )
            return self._key_char(ESCAPES[c]) if c in ESCAPES else []
        if c not in "0123456789abcdefABCDEF":
            return []
        code = self.code * 16 + int(c, 16)
        if esc < 5:
            if not hex_digits(self._escape_targets(), self.code, 5 - esc).contains_cp(ord(c)):
                return []  # no \uXXXX this starts is a char that keeps the name alive
            return [(self._escaping(esc + 1, code),)]
        return self._key_char(chr(code))

    def _escaping(self, esc: int, code: int) -> ObjFrame:
        return ObjFrame(
            self.schema,
            Phase.KEY,
            self.pos,
            self.num,
            self.key,
            None,
            self.depth,
            esc,
            self.pats,
            code,
            self.carry,
            met=self.met,
        )

    def feed(self, c: str) -> Replacements:
        ph, s = self.phase, self.schema
        if ph is Phase.KEY:
            if self.esc:
                return self._key_escape(c)
            if c == "\\":
                return self._key_escape(c) if self._may_escape() else []
            if c == '"':
                close = self._close_key()
                if close is None:
                    return []
                carry, name = self.carry, None
                if carry is not None and self.key is not None:  # a name the probe's features may count
                    carry = carry.present(self.key)
                    name = self.key if self.key in carry.probe.checks else None
                met = self.met
                if self.key is not None and self._tracked():
                    met |= name_musts.met_by(s, self.key)
                colon = ObjFrame(
                    s, Phase.COLON, close[0], self.num, name, close[1], self.depth, 0, (), 0, carry, met=met
                )
                return [(colon, WsFrame(0, self.depth))]
            if not JSON_STRING_FREE.contains_cp(ord(c)):
                return []
            return self._key_char(c)
        if ph is Phase.COLON:
            if c != ":" or self.value is None:
                return []
            # past its bounds the count changes nothing: capped, so the entries of a map share states
            num = min(self.num + 1, max(s.min_props, s.max_props or 0) + 1)
            after = ObjFrame(
                s, Phase.AFTER_VALUE, self.pos, num, "", None, self.depth, 0, (), 0, self.carry, met=self.met
            )
            if self.carry is not None and self.key is not None:  # a value the probe checks
                return _probe_start[0](self.carry.probe, after, self.key, self.value)
            if self.value.probe is not None:  # a value whose features pick the rest of the object
                return _probe_start[0](self.value.probe, after, "", self.value.probe.value)
            ws = WsFrame(0, self.depth)
            return [(after, ws, ValueFrame(self.value, self.depth), ws)]
        if c == '"' and (ph is Phase.AFTER_COMMA or (ph is Phase.OPEN and self._more_keys())):
            tight = self._tight()  # only a required name may come: no pattern or additional name
            pats = tuple(r.initial for r in s.pattern_props) if s.pattern_props and not tight else ()
            # None: no name to follow (nor musts to match), the name is free from its first char
            key = "" if s.props or self._tracked() else None
            return [
                (
                    ObjFrame(
                        s,
                        Phase.KEY,
                        self.pos,
                        self.num,
                        key,
                        None,
                        self.depth,
                        0,
                        pats,
                        0,
                        self.carry,
                        met=self.met,
                    ),
                )
            ]
        if c == "}" and ph is not Phase.AFTER_COMMA and self._can_close():
            return [self._resumed()] if self.carry is not None else [()]
        if c == "," and ph is Phase.AFTER_VALUE and self._more_keys():
            return [
                (
                    ObjFrame(
                        s,
                        Phase.AFTER_COMMA,
                        self.pos,
                        self.num,
                        "",
                        None,
                        self.depth,
                        0,
                        (),
                        0,
                        self.carry,
                        met=self.met,
                    ),
                    WsFrame(0, self.depth),
                )
            ]
        return []

    def _resumed(self) -> tuple[Frame, ...]:
        """Where an object read under a probe ends: the object around it goes on (before its `,` or `}`)
        under the node the probe picks by the features gathered."""
        carry = self.carry
        assert carry is not None  # internal: only an object under a probe resumes another
        after = carry.after
        assert isinstance(after, ObjFrame)  # internal: a Carry holds the frame of the object around
        return after.going_on(carry.probe.pick(carry.features), after.carry)

    def going_on(self, schema: Schema, carry: Carry | None) -> tuple[Frame, Frame]:
        """This frame after a value (AFTER_VALUE) under `schema` and `carry` instead of its own, with the
        whitespace before its `,` or `}`: where a value read under a probe leaves its object."""
        met = self.met if schema is self.schema else -1  # another schema's musts: not tracked
        after = ObjFrame(
            schema, Phase.AFTER_VALUE, self.pos, self.num, "", None, self.depth, 0, (), 0, carry, met=met
        )
        return (after, WsFrame(0, self.depth))

    def can_end(self) -> bool:
        return False

    def free_run(self) -> FreeRun | None:
        """Inside a name that is no longer a known one: the chars every live pattern loops on leave
        the frame as is. Otherwise patterns change the frame but cannot kill it while other names are
        allowed, or while one is a search that can always match later (a stateful run); a single
        pattern in a counted run (`[a-z]{2,8}`) gives a bounded run."""
        if self.phase is not Phase.KEY or self.key is not None or self.esc:
            return None
        live = [d for d in self.pats if d is not None]
        if not live:
            return FreeRun(JSON_STRING_FREE, None) if self._extra() is not None else None
        klass = JSON_STRING_FREE
        for d in live:
            klass = klass & d.loop_chars()
        if not klass.is_empty():
            return FreeRun(klass, None)
        if any(self.pats[i] is not None for i in _refusing(self.schema)):
            return None  # a run may complete a refused name: no claim that a run keeps it alive
        if self._extra() is not None or any(d.is_universal(JSON_STRING_FREE) for d in live):
            return FreeRun(JSON_STRING_FREE, None, stateful=True)
        chain = live[0].chain() if len(live) == 1 else None
        if chain is None:
            return None
        # `[^\n]{1,64}`: the string chars of the class step alike, so they are the run
        run = chain[0] & JSON_STRING_FREE
        return None if run.is_empty() else FreeRun(run, chain[1])

    def forced_text(self) -> tuple[str, Replacements] | None:
        """Inside a name that can only be one known name (no additional or pattern names, so no
        escape either): the rest of that name and its closing quote, and the frames they lead to. The
        mask walk then follows the name down the trie without making a parser state per char."""
        if self.phase is not Phase.KEY or self.esc or self.key is None or self._tracked():
            return None
        s = self.schema
        if self._extra() is not None or self._live():
            return None
        name = _only_name(s, self._bits(), self.key)
        if name is None:
            return None
        rest = name[len(self.key) :]
        if not all(JSON_STRING_FREE.contains_cp(ord(ch)) for ch in rest):
            return None
        whole = ObjFrame(
            s,
            Phase.KEY,
            self.pos,
            self.num,
            name,
            None,
            self.depth,
            0,
            self.pats,
            0,
            self.carry,
            met=self.met,
        )
        return rest + '"', whole.feed('"')

    def takes_any_name(self) -> bool:
        """Inside a name (no escape under way) of an object that takes additional properties: any run of
        string chars keeps the name alive, whichever known name it strays from (the mask walk then
        judges a known name's subtree of such runs in bulk)."""
        s = self.schema
        return (
            self.phase is Phase.KEY
            and not self.esc
            and self._extra() is not None
            and not _refusing(s)
            and not self._tracked()  # the name is kept whole: each run is a state of its own
        )

    def delegate(self) -> tuple[CharSet, Frame] | None:
        """(D, F): chars that leave the name to one frame F in a plain run. D avoids the next chars
        of known names; each live pattern takes all of D alike (loops, dies, moves to one state, or
        follows its own delegation hint) so F is one frame."""
        key, s = self.key, self.schema
        extra = self._extra()
        if self.phase is not Phase.KEY or self.esc or (extra is None and not self._live()):
            return None
        if self._tracked():
            return None  # the name is kept whole: no frame stands for a class of chars
        klass = JSON_STRING_FREE
        if key is not None:
            klass = klass - _name_starts(s, key)
        may_die = extra is not None or sum(d is not None for d in self.pats) > 1
        pats: list[DState | None] = []
        for d in self.pats:
            if d is None:
                pats.append(None)
                continue
            options: list[tuple[CharSet, DState | None]] = [(klass & d.loop_chars(), d)]
            if may_die:
                options.append((klass - d.chars, None))
            moved = klass & d.chars
            t = d.step_class(moved) if not moved.is_empty() else None
            if t is not None:
                options.append((moved & t.loop_chars(), t))
            hint = d.default()
            if hint is not None:
                options.append((klass & hint[0], hint[1]))
            klass, kept = max(options, key=_option_size)
            pats.append(kept)
        if extra is None and not _closing_pats(s, pats):
            return None
        if _refused_for_good(s, pats):
            return None
        target = self._free_name(tuple(pats))
        if klass.is_empty() or target == self:
            return None
        if any(pats[i] is not None for i in _refusing(s)) and target.free_run() is None:
            return None  # a refusing pattern still live may leave the target no free run to hand chars to
        return klass, target

    def for_horizon(self, horizon: int) -> ObjFrame:
        """The same frame for the next `horizon` chars (see ParserState.mask_rep): inside a name, each
        live pattern's state stands for every state that takes the same strings of up to `horizon`
        chars (regex_horizon.py), as in a string value. A name under `^[^\\n]{1,64}$` is a new state
        at each count, and each had a walk of its own; the value its closing quote opens depends on
        which patterns accept then, which the representative keeps."""
        if self.phase is not Phase.KEY or not self._live():
            return self
        # a refusing pattern keeps its state: whether a name is refused for good looks past any horizon
        refusing = _refusing(self.schema)
        pats = tuple(
            None if d is None else d if i in refusing else horizon_rep(d, horizon)
            for i, d in enumerate(self.pats)
        )
        if all(a is b for a, b in zip(pats, self.pats, strict=True)):
            return self
        return ObjFrame(
            self.schema,
            self.phase,
            self.pos,
            self.num,
            self.key,
            self.value,
            self.depth,
            self.esc,
            pats,
            self.code,
            self.carry,
            met=self.met,
        )

    def skip(self, n: int) -> Frame:
        """After `n` chars of a bounded run: the one live pattern advanced along its counted run."""
        live = [i for i, d in enumerate(self.pats) if d is not None]
        if self._extra() is not None or len(live) != 1:
            return self
        d = self.pats[live[0]]
        chain = d.chain() if d is not None else None
        if d is None or chain is None:
            return self
        pats = list(self.pats)
        pats[live[0]] = d.advance(n, chain[0])
        return self._free_name(tuple(pats))

    def _free_name(self, pats: tuple[DState | None, ...]) -> ObjFrame:
        """This frame inside a name that can only be a pattern or additional one, its patterns at `pats`."""
        return ObjFrame(
            self.schema,
            Phase.KEY,
            self.pos,
            self.num,
            None,
            None,
            self.depth,
            0,
            pats,
            0,
            self.carry,
            met=self.met,
        )


# Name lookups by (schema, position, name so far): every new parser state asks them again, and the
# trie walk makes a new state for each character of each candidate name it follows, so they are
# answered from one table of name prefixes per schema.
@lru_cache(maxsize=1 << 16)
def _candidates(schema: Schema, pos: int) -> tuple[tuple[int, str], ...]:
    """Known properties that may come next: from `pos` up to the first required one (any order: all
    those not seen yet). A name whose value schema admits no value (`false`, a negation's "this name is
    absent", a value pruned as endless) is never offered, yet stays claimed: the name cannot be closed
    as an additional one either (`_close_key`). Offered, it would be a dead end after its colon."""
    if schema.any_order:
        return tuple(
            (i, name)
            for i, (name, value) in enumerate(schema.props)
            if not pos >> i & 1 and not value.first_chars().is_empty()
        )
    out = []
    for i in range(pos, len(schema.props)):
        name, value = schema.props[i]
        if not value.first_chars().is_empty():
            out.append((i, name))
        if name in schema.required:
            break
    return tuple(out)


@lru_cache(maxsize=1 << 12)
def _refusing(schema: Schema) -> frozenset[int]:
    """The patternProperties whose value schema admits no value (`{P: false}`, propertyNames `not P`):
    a name one of them matches cannot be closed, and a name one of them matches whatever follows
    (`DState.always_accepts`) is refused at once, so it never grows into a dead end."""
    sets = schema.pattern_sets
    return frozenset(
        i for i in range(len(schema.pattern_props)) if sets[frozenset((i,))].first_chars().is_empty()
    )


def _closing_pats(schema: Schema, pats: tuple[DState | None, ...] | list[DState | None]) -> list[DState]:
    """The live pattern states through which the name may still be closed (not the refusing ones)."""
    if not pats:
        return []
    refusing = _refusing(schema)
    return [d for i, d in enumerate(pats) if d is not None and i not in refusing]


def _refused_for_good(schema: Schema, pats: tuple[DState | None, ...] | list[DState | None]) -> bool:
    """Whether a refusing pattern matches the name whatever follows."""
    if not pats:
        return False
    for i in _refusing(schema):
        d = pats[i]
        if d is not None and d.always_accepts():
            return True
    return False


@lru_cache(maxsize=1 << 12)
def _required_bits(schema: Schema) -> int:
    return sum(1 << i for i, (name, _) in enumerate(schema.props) if name in schema.required)


@lru_cache(maxsize=1 << 12)
def _candidate_bits(schema: Schema, pos: int) -> int:
    """The candidates at `pos` as bits of property indexes."""
    return sum(1 << i for i, _ in _candidates(schema, pos))


@lru_cache(maxsize=1 << 12)
def _missing_required(schema: Schema, pos: int) -> int:
    """How many required names are not written yet at `pos` (schema order: those from `pos` on)."""
    if schema.any_order:
        return (_required_bits(schema) & ~pos).bit_count()
    return sum(1 for name, _ in schema.props[pos:] if name in schema.required)


@dataclass(frozen=True, slots=True)
class _Prefix:
    """One prefix of some property names: the names that start with it (bits), the same per next char,
    and the indexes of the names equal to it."""

    names: int
    next_chars: tuple[tuple[str, int], ...]
    whole: tuple[int, ...]


class _Names:
    """The property names of one schema in sorted order, where the names starting with a prefix are
    one run; each prefix's `_Prefix` is made the first time it is asked for. Building every prefix of
    every name at once took 30-90 ms for a schema of 475 names, most of them never asked about."""

    __slots__ = ("_by_name", "_entries", "_names")

    def __init__(self, schema: Schema) -> None:
        self._by_name = sorted((name, i) for i, (name, _) in enumerate(schema.props))
        self._names = [name for name, _ in self._by_name]
        self._entries: dict[str, _Prefix | None] = {}

    def get(self, prefix: str) -> _Prefix | None:
        """The names that start with `prefix`, or None when none does."""
        known = self._entries.get(prefix)
        if known is not None or prefix in self._entries:
            return known
        names = 0
        nexts: dict[str, int] = {}
        whole: list[int] = []
        size = len(prefix)
        by_name = self._by_name
        at = bisect_left(self._names, prefix)
        while at < len(by_name) and by_name[at][0].startswith(prefix):
            name, i = by_name[at]
            names |= 1 << i
            if len(name) == size:
                whole.append(i)
            else:
                nexts[name[size]] = nexts.get(name[size], 0) | 1 << i
            at += 1
        entry = _Prefix(names, tuple(sorted(nexts.items())), tuple(sorted(whole))) if names else None
        self._entries[prefix] = entry
        return entry


@lru_cache(maxsize=1 << 10)
def _prefixes(schema: Schema) -> _Names:
    """The property names of `schema`, by prefix (kept per schema: the walk down the trie asks about
    thousands of prefixes, and any-order objects have as many candidate sets as subsets seen)."""
    return _Names(schema)


def _next_known(schema: Schema, bits: int, key: str) -> bool:
    """Whether some candidate name (`bits`) starts with `key` (or is it)."""
    entry = _prefixes(schema).get(key)
    return entry is not None and entry.names & bits != 0


@lru_cache(maxsize=1 << 16)
def _next_known_chars(schema: Schema, bits: int, key: str) -> CharSet:
    entry = _prefixes(schema).get(key)
    if entry is None:
        return EMPTY
    return CharSet.of("".join(ch for ch, names in entry.next_chars if names & bits))


def _only_name(schema: Schema, candidates: int, key: str) -> str | None:
    """The one candidate name that starts with `key` (or is it), if there is exactly one."""
    entry = _prefixes(schema).get(key)
    if entry is None:
        return None
    bits = entry.names & candidates
    if bits == 0 or bits & (bits - 1):
        return None
    return schema.props[bits.bit_length() - 1][0]


def _known_index(schema: Schema, bits: int, key: str) -> int | None:
    entry = _prefixes(schema).get(key)
    if entry is None or not entry.whole:
        return None
    return next((i for i in entry.whole if bits >> i & 1), None)


def _any_name_from(schema: Schema, key: str) -> bool:
    return _prefixes(schema).get(key) is not None


@lru_cache(maxsize=1 << 16)
def _name_starts(schema: Schema, key: str) -> CharSet:
    """Chars that continue some property name after `key`, and the quote if `key` is one."""
    entry = _prefixes(schema).get(key)
    if entry is None:
        return EMPTY
    starts = CharSet.of("".join(ch for ch, _ in entry.next_chars))
    return starts | QUOTE if entry.whole else starts


def _size(klass: CharSet) -> int:
    return sum(hi - lo + 1 for lo, hi in klass.ranges)


def _option_size(option: tuple[CharSet, DState | None]) -> int:
    """A delegation option's class size (a function of its own: mypyc takes no lambda in a frame method)."""
    return _size(option[0])
