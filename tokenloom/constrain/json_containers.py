"""JSON strings, objects and arrays against a compiled schema, one character at a time.

String contents and additional property names are free runs for the trie walk; property names follow
the schema's order. Knows nothing of vocabularies.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tokenloom.constrain.charset import EMPTY, JSON_STRING_FREE, CharSet
from tokenloom.constrain.json_frames import (
    ESC_CHARS,
    ESCAPES,
    HEX,
    QUOTE,
    Replacements,
    ValueFrame,
    WsFrame,
    start_value,
)
from tokenloom.constrain.parser import Frame, FreeRun
from tokenloom.constrain.regex import DState
from tokenloom.constrain.schema_ir import Schema

_FEW_EXITS = 4  # a stateful run over a pattern's own chars pays off only when few chars end it


def _count(chars: CharSet) -> int:
    return sum(hi - lo + 1 for lo, hi in chars.ranges)


@dataclass(frozen=True, slots=True)
class StrFrame:
    """Inside a string value: `count` chars read (capped), `esc` escape progress, `regex` pattern state.

    esc: 0 plain, 1 after a backslash, 2..5 inside \\uXXXX with `code` accumulated.
    """

    schema: Schema
    count: int
    regex: DState | None
    esc: int = 0
    code: int = 0

    def _content_ok(self) -> bool:
        mx = self.schema.max_len
        return mx is None or self.count < mx

    def _can_close(self) -> bool:
        return self.count >= self.schema.min_len and (self.regex is None or self.regex.accepting)

    def chars(self) -> CharSet:
        if self.esc == 1:
            return ESC_CHARS
        if self.esc:
            return HEX
        acc = QUOTE if self._can_close() else EMPTY
        if self._content_ok():
            content = JSON_STRING_FREE if self.regex is None else self.regex.chars & JSON_STRING_FREE
            acc = acc | content
            if self.regex is None or not self.regex.chars.is_empty():
                acc = acc | CharSet.of("\\")
        return acc

    def _content(self, ch: str) -> Replacements:
        if not self._content_ok():
            return []
        regex = self.regex
        if regex is not None:
            regex = regex.step(ch)
            if regex is None:
                return []
        return [(StrFrame(self.schema, self._bump(1), regex),)]

    def _bump(self, n: int) -> int:
        cap = self.schema.max_len if self.schema.max_len is not None else self.schema.min_len
        return min(self.count + n, cap)

    def feed(self, c: str) -> Replacements:
        if self.esc == 1:
            if c == "u":
                return [(StrFrame(self.schema, self.count, self.regex, 2, 0),)]
            return self._content(ESCAPES[c]) if c in ESCAPES else []
        if self.esc:
            if c not in "0123456789abcdefABCDEF":
                return []
            code = self.code * 16 + int(c, 16)
            if self.esc < 5:
                return [(StrFrame(self.schema, self.count, self.regex, self.esc + 1, code),)]
            return self._content(chr(code))
        if c == '"':
            return [()] if self._can_close() else []
        if c == "\\":
            return [(StrFrame(self.schema, self.count, self.regex, 1),)] if self._content_ok() else []
        if not JSON_STRING_FREE.contains_cp(ord(c)):
            return []
        return self._content(c)

    def can_end(self) -> bool:
        return False

    def free_run(self) -> FreeRun | None:
        if self.esc:
            return None
        klass = JSON_STRING_FREE
        limit: int | None = None
        mx, mn = self.schema.max_len, self.schema.min_len
        if self.regex is not None and mx is None and self.count >= mn:
            # e.g. an unanchored pattern still searching, or `\S+@\S+` that no run of its chars kills
            for run in (klass, self.regex.chars & klass):
                reach = None if run.is_empty() else self.regex.universal_exits(run)
                if reach is None:
                    continue
                # what may end the run: the regex's exits, an escape, the quote
                exits = (reach[0] & klass) | CharSet.of("\\") | (QUOTE if reach[1] else EMPTY)
                if run is klass or _count(exits) <= _FEW_EXITS:  # else tokens leaving it are too many
                    return FreeRun(run, None, stateful=True, exits=exits)
        if self.regex is not None:
            klass = self.regex.loop_chars() & JSON_STRING_FREE
            if klass.is_empty():  # a counted run such as [0-9a-f]{64}
                chain = self.regex.chain()
                if chain is None or not (chain[0] - JSON_STRING_FREE).is_empty():
                    return None
                klass, limit = chain
        if mx is None and self.count >= mn and limit is None:
            return FreeRun(klass, None)
        remaining = (mx - self.count) if mx is not None else 1 << 30
        if limit is not None:
            remaining = min(remaining, limit)
        return FreeRun(klass, remaining) if remaining > 0 else None

    def skip(self, n: int) -> Frame:
        regex = self.regex
        if regex is not None and n and regex.loop_chars().is_empty():
            chain = regex.chain()
            assert chain is not None  # internal: skip follows free_run
            regex = regex.advance(n, chain[0])
        return StrFrame(self.schema, self._bump(n), regex)

    def delegate(self) -> tuple[CharSet, Frame] | None:
        """In a pattern, most characters usually lead to one looping state (e.g. `.*` of a search)."""
        if (
            self.esc
            or self.regex is None
            or self.schema.max_len is not None
            or self.count < self.schema.min_len
        ):
            return None
        hint = self.regex.default()
        if hint is None or hint[1] is self.regex:
            return None
        return hint[0] & JSON_STRING_FREE, StrFrame(self.schema, self.count, hint[1])


class Phase(Enum):
    OPEN = 1  # after "{"
    KEY = 2  # inside a property name
    COLON = 3  # after the name's closing quote
    AFTER_VALUE = 4  # after a property value
    AFTER_COMMA = 5  # after ","


@dataclass(frozen=True, slots=True)
class ObjFrame:
    """An object: `pos` is the next schema property allowed (order follows the schema), `num` keys read.

    In the KEY phase `key` is the name so far, or None once it can only be an additional property.
    In the COLON phase `value` is the schema of the coming value.
    """

    schema: Schema
    phase: Phase
    pos: int = 0
    num: int = 0
    key: str | None = ""
    value: Schema | None = None
    depth: int = 1
    esc: int = 0  # escape progress inside an additional property's name, as in StrFrame

    def _candidates(self) -> list[tuple[int, str]]:
        """Known properties that may come next: from `pos` up to the first required one."""
        out = []
        props, required = self.schema.props, self.schema.required
        for i in range(self.pos, len(props)):
            out.append((i, props[i][0]))
            if props[i][0] in required:
                break
        return out

    def _can_close(self) -> bool:
        props, required = self.schema.props, self.schema.required
        return self.num >= self.schema.min_props and all(n not in required for n, _ in props[self.pos :])

    def _more_keys(self) -> bool:
        mx = self.schema.max_props
        if mx is not None and self.num >= mx:
            return False
        return bool(self._candidates()) or self.schema.additional is not None

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
            return ESC_CHARS if self.esc == 1 else HEX
        if key is None:
            return JSON_STRING_FREE | QUOTE | CharSet.of("\\")
        n = len(key)
        acc = CharSet.of(
            "".join(name[n] for _, name in self._candidates() if name.startswith(key) and len(name) > n)
        )
        if self.schema.additional is not None:
            acc = acc | JSON_STRING_FREE | CharSet.of("\\")
        if self._close_key() is not None:
            acc = acc | QUOTE
        return acc

    def _close_key(self) -> tuple[int, Schema] | None:
        """(next pos, value schema) if the name read so far can end here."""
        key = self.key
        for i, name in self._candidates():
            if name == key:
                return i + 1, self.schema.props[i][1]
        extra = self.schema.additional
        if extra is not None and (key is None or key not in self.schema.prop_names()):
            return self.pos, extra
        return None

    def feed(self, c: str) -> Replacements:
        ph, s = self.phase, self.schema
        if ph is Phase.KEY and (self.esc or (c == "\\" and s.additional is not None)):
            # escapes only in additional property names (known names are matched raw)
            if self.esc == 0:
                esc = 1
            elif self.esc == 1:
                esc = 2 if c == "u" else 0 if c in ESCAPES else -1
            else:
                esc = (self.esc + 1) % 6 if c in "0123456789abcdefABCDEF" else -1
            if esc < 0:
                return []
            return [(ObjFrame(s, Phase.KEY, self.pos, self.num, None, None, self.depth, esc),)]
        if ph is Phase.KEY:
            if c == '"':
                close = self._close_key()
                if close is None:
                    return []
                colon = ObjFrame(s, Phase.COLON, close[0], self.num, None, close[1], self.depth)
                return [(colon, WsFrame(0, self.depth))]
            if not JSON_STRING_FREE.contains_cp(ord(c)):
                return []
            key = None if self.key is None else self.key + c
            if key is not None and not any(n.startswith(key) for _, n in self._candidates()):
                if s.additional is None:
                    return []
                if not any(n.startswith(key) for n in s.prop_names()):
                    key = None  # can only be an additional property from here on
            return [(ObjFrame(s, Phase.KEY, self.pos, self.num, key, None, self.depth),)]
        if ph is Phase.COLON:
            if c != ":" or self.value is None:
                return []
            after = ObjFrame(s, Phase.AFTER_VALUE, self.pos, self.num + 1, "", None, self.depth)
            ws = WsFrame(0, self.depth)
            return [(after, ws, ValueFrame(self.value, self.depth), ws)]
        if c == '"' and (ph is Phase.AFTER_COMMA or (ph is Phase.OPEN and self._more_keys())):
            return [(ObjFrame(s, Phase.KEY, self.pos, self.num, "", None, self.depth),)]
        if c == "}" and ph is not Phase.AFTER_COMMA and self._can_close():
            return [()]
        if c == "," and ph is Phase.AFTER_VALUE and self._more_keys():
            return [
                (
                    ObjFrame(s, Phase.AFTER_COMMA, self.pos, self.num, "", None, self.depth),
                    WsFrame(0, self.depth),
                )
            ]
        return []

    def can_end(self) -> bool:
        return False

    def free_run(self) -> FreeRun | None:
        if self.phase is Phase.KEY and self.key is None and not self.esc:
            return FreeRun(JSON_STRING_FREE, None)
        return None

    def delegate(self) -> tuple[CharSet, Frame] | None:
        """At the start of a name that may be an additional property: chars no known name starts with."""
        key = self.key
        if self.phase is not Phase.KEY or key is None or self.esc or self.schema.additional is None:
            return None
        n = len(key)
        starts = CharSet.of(
            "".join(p[n] for p in self.schema.prop_names() if len(p) > n and p.startswith(key))
        )
        if key in self.schema.prop_names():
            starts = starts | QUOTE  # the closing quote ends a known name here, not an additional one
        return JSON_STRING_FREE - starts, ObjFrame(
            self.schema, Phase.KEY, self.pos, self.num, None, None, self.depth
        )

    def skip(self, n: int) -> Frame:
        return self


@dataclass(frozen=True, slots=True)
class ArrFrame:
    """An array with `count` items read; `open` until the first item or "]"."""

    schema: Schema
    count: int
    after_value: bool = False
    depth: int = 1

    def _item(self) -> Schema | None:
        s = self.schema
        if self.count < len(s.prefix):
            return s.prefix[self.count]
        if s.max_items is not None and self.count >= s.max_items:
            return None
        return s.items

    def _can_close(self) -> bool:
        return self.count >= self.schema.min_items

    def chars(self) -> CharSet:
        acc = CharSet.of("]") if self._can_close() else EMPTY
        item = self._item()
        if item is not None:
            acc = acc | (CharSet.of(",") if self.after_value else item.first_chars())
        return acc

    def feed(self, c: str) -> Replacements:
        if c == "]":
            return [()] if self._can_close() else []
        item = self._item()
        if item is None:
            return []
        cap = max(self.schema.min_items, self.schema.max_items or 0, len(self.schema.prefix)) + 1
        nxt = ArrFrame(self.schema, min(self.count + 1, cap), True, self.depth)
        ws = WsFrame(0, self.depth)
        if self.after_value:
            return [(nxt, ws, ValueFrame(item, self.depth), ws)] if c == "," else []
        return [(nxt, ws, *rep) for rep in start_value(item, c, self.depth)]

    def can_end(self) -> bool:
        return False
