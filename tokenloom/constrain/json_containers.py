"""JSON strings and arrays against a compiled schema, one character at a time (objects: `json_objects`).

String contents are free runs for the trie walk. Knows nothing of vocabularies.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, TypeVar

from tokenloom.constrain.charset import EMPTY, JSON_STRING_FREE, CharSet
from tokenloom.constrain.json_frames import (
    ESC_CHARS,
    ESCAPES,
    HEX,
    QUOTE,
    Replacements,
    ValueFrame,
    WsFrame,
    escape_chars,
    hex_digits,
)
from tokenloom.constrain.parser import Frame, FreeRun
from tokenloom.constrain.regex import DState
from tokenloom.constrain.regex_horizon import horizon_rep
from tokenloom.constrain.schema_ir import Schema
from tokenloom.errors import GrammarError

_T = TypeVar("_T")
_FEW_EXITS = 4  # a stateful run over a pattern's own chars pays off only when few chars end it
_RUNS_KEY = "json_containers.runs"  # where a pattern keeps what free_run found of its states
MAX_RUN_STATES = 8  # pattern states a compile looks at per string for the runs it prepares (pattern_runs)
MAX_RUN_CLASSES = 64  # ... past the start only for patterns of at most this many character classes


def _memo_of(d: DState, what: str, make: Callable[[], _T]) -> _T:
    """`make()`, kept per pattern state: what a string's free run asks of the pattern is the same at
    every count, and each new count is a new parser state that asks again (each answer costs CharSet
    arithmetic, and the first a search of the DFA)."""
    memo: dict[tuple[DState, str], Any] = d.regex.table(_RUNS_KEY, dict)
    key = (d, what)
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]
    got = memo[key] = make()
    return got


def pattern_runs(nodes: Iterable[Schema], deadline: float) -> list[CharSet]:
    """The classes of the free runs the pattern strings of these schema nodes are in over their first
    chars (the pattern's states breadth first from its start, at most MAX_RUN_STATES a pattern, each at
    its count and at minLength), each once, in node order, found until `deadline` (time.monotonic):
    the trie index each needs (trie.FreeIndex) can then be built with the compile (api.prepare_runs)."""
    runs: dict[CharSet, None] = {}
    for node in nodes:
        regex = node.regex
        if regex is None or node.options is not None or node.combo is not None or "string" not in node.types:
            continue
        try:
            _runs_of(node, regex.initial, runs, deadline)
        except GrammarError:
            continue  # the pattern's automaton is past its bound: masks meet it if they get there
        if time.monotonic() > deadline:
            break
    return list(runs)


def _runs_of(node: Schema, start: DState, runs: dict[CharSet, None], deadline: float) -> None:
    """Add to `runs` the run classes of the string `node` in its first MAX_RUN_STATES pattern states."""
    classes = len(start.regex.bounds)
    depths: dict[DState, int] = {start: 0}
    order = [start]
    for d in order:  # (grows as it goes)
        if time.monotonic() > deadline:
            return
        depth = depths[d]
        for count in dict.fromkeys((depth, max(depth, node.min_len))):
            run = StrFrame(node, count, d).free_run()
            if run is not None:
                runs[run.klass] = None
        if classes > MAX_RUN_CLASSES:
            continue
        for k in range(classes):
            if len(depths) >= MAX_RUN_STATES:
                break  # enough states: stepping on would only build automaton states nobody asked for
            nxt = d.step_class_index(k)
            if nxt is not None and nxt not in depths:
                depths[nxt] = depth + 1
                order.append(nxt)


class StrFrame(Frame):
    """Inside a string value: `count` chars read (capped), `esc` escape progress, `regex` pattern state.

    esc: 0 plain, 1 after a backslash, 2..5 inside \\uXXXX with `code` accumulated.
    """

    __slots__ = ("code", "count", "esc", "regex", "schema")

    schema: Schema
    count: int
    regex: DState | None
    esc: int
    code: int

    def __init__(self, schema: Schema, count: int, regex: DState | None, esc: int = 0, code: int = 0) -> None:
        self._hash = 0
        self.schema = schema
        self.count = count
        self.regex = regex
        self.esc = esc
        self.code = code

    def identity(self) -> tuple[object, ...]:
        return (self.schema, self.count, self.regex, self.esc, self.code)

    def _content_ok(self) -> bool:
        mx = self.schema.max_len
        return mx is None or self.count < mx

    def _can_close(self) -> bool:
        return self.count >= self.schema.min_len and (self.regex is None or self.regex.accepting)

    def chars(self) -> CharSet:
        if self.esc == 1:
            return ESC_CHARS if self.regex is None else escape_chars(self.regex.chars)
        if self.esc:
            return HEX if self.regex is None else hex_digits(self.regex.chars, self.code, 5 - self.esc)
        acc = QUOTE if self._can_close() else EMPTY
        if self._content_ok():
            content = JSON_STRING_FREE if self.regex is None else self.regex.chars & JSON_STRING_FREE
            acc = acc | content
            if self._may_escape():
                acc = acc | CharSet.of("\\")
        return acc

    def _may_escape(self) -> bool:
        """Whether a backslash may come: some escape writes a char the content takes here (an escape
        that could only end the pattern would leave a state with no way on)."""
        return self._content_ok() and (self.regex is None or not escape_chars(self.regex.chars).is_empty())

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
                if self.regex is not None and "u" not in escape_chars(self.regex.chars):
                    return []  # the pattern takes no char a \uXXXX escape can write
                return [(StrFrame(self.schema, self.count, self.regex, 2, 0),)]
            return self._content(ESCAPES[c]) if c in ESCAPES else []
        if self.esc:
            if c not in "0123456789abcdefABCDEF":
                return []
            code = self.code * 16 + int(c, 16)
            if self.esc < 5:
                if self.regex is not None and not hex_digits(
                    self.regex.chars, self.code, 5 - self.esc
                ).contains_cp(ord(c)):
                    return []  # no \uXXXX this starts is a char the pattern takes here
                return [(StrFrame(self.schema, self.count, self.regex, self.esc + 1, code),)]
            return self._content(chr(code))
        if c == '"':
            return [()] if self._can_close() else []
        if c == "\\":
            return [(StrFrame(self.schema, self.count, self.regex, 1),)] if self._may_escape() else []
        if not JSON_STRING_FREE.contains_cp(ord(c)):
            return []
        return self._content(c)

    def can_end(self) -> bool:
        return False

    def free_run(self) -> FreeRun | None:
        if self.esc:
            return None
        mx, mn = self.schema.max_len, self.schema.min_len
        unbounded = mx is None and self.count >= mn
        klass: CharSet | None = JSON_STRING_FREE
        limit: int | None = None
        if self.regex is not None:
            if unbounded:
                stateful = _memo_of(self.regex, "stateful", self._stateful_run)
                if stateful is not None:
                    return stateful
            klass, limit = _memo_of(self.regex, "run", self._pattern_run)
            if klass is None:
                return None
        assert klass is not None  # internal: a pattern without a run returned above
        if unbounded and limit is None:
            # (a partial, not a closure: mypyc compiles this module)
            if self.regex is not None and _memo_of(
                self.regex, "wider", partial(self._delegates_wider, klass)
            ):
                return None  # e.g. only "|" loops at the start of a regex text: delegation does better
            return FreeRun(klass, None)
        remaining = (mx - self.count) if mx is not None else 1 << 30
        if limit is not None:
            remaining = min(remaining, limit)
        return FreeRun(klass, remaining) if remaining > 0 else None

    def _stateful_run(self) -> FreeRun | None:
        """An unanchored pattern still searching, `^[^/].*` after the opening quote, `\\S+@\\S+`: no
        run of these chars kills the pattern; tokens leaving the run must end on `exits`."""
        assert self.regex is not None  # internal: asked for pattern strings only
        klass = JSON_STRING_FREE
        narrow = self._narrow_universal()
        for run in (klass, narrow or EMPTY, self.regex.chars & klass):
            reach = None if run.is_empty() else self.regex.universal_exits(run)
            if reach is None:
                continue
            exits = (reach[0] & klass) | CharSet.of("\\") | (QUOTE if reach[1] else EMPTY)
            if run is klass or run is narrow or _size(exits) <= _FEW_EXITS:
                return FreeRun(run, None, stateful=True, exits=exits)
        return None

    def _pattern_run(self) -> tuple[CharSet | None, int | None]:
        """The chars the pattern state loops on, or a counted run's chars and length (None: neither).
        `.{1,64}`: a quote, a backslash or a control char of the run is written escaped, so it leaves the
        raw run (checked by the walk); the raw chars of the run all move it alike."""
        assert self.regex is not None  # internal: asked for pattern strings only
        klass = self.regex.loop_chars() & JSON_STRING_FREE
        if not klass.is_empty():
            return klass, None
        chain = self.regex.chain()  # a counted run such as [0-9a-f]{64}
        if chain is None:
            return None, None
        run = chain[0] & JSON_STRING_FREE
        return (None, None) if run.is_empty() else (run, chain[1])

    def pattern(self) -> tuple[DState, int, int, int | None] | None:
        """(pattern state, chars read, minLength, maxLength) while plain content is read; None in
        escapes and in strings without a pattern."""
        if self.esc or self.regex is None:
            return None
        return self.regex, self.count, self.schema.min_len, self.schema.max_len

    def _narrow_universal(self) -> CharSet | None:
        """The chars this pattern state takes, when they are nearly all string chars, no run of them
        can kill it, and neither its own loop nor a delegation covers as much (e.g. `^[^/].*`)."""
        assert self.regex is not None  # internal: asked for pattern strings only
        loop = self.regex.loop_chars() & JSON_STRING_FREE
        narrow = self.regex.chars & JSON_STRING_FREE
        if _size(JSON_STRING_FREE - narrow) > 64:  # a narrow class: most tokens would leave the run
            return None
        if _size(loop) * 2 >= _size(narrow) or self._delegates_wider(loop):
            return None
        return narrow if self.regex.is_universal(narrow) else None

    def _delegates_wider(self, klass: CharSet) -> bool:
        assert self.regex is not None  # internal: asked for pattern strings only
        hint = self.regex.default()
        return hint is not None and _size(hint[0] & JSON_STRING_FREE) > _size(klass)

    def for_horizon(self, horizon: int) -> StrFrame:
        """The same frame for the next `horizon` chars (see ParserState.mask_rep): a length already
        past minLength and more than `horizon` chars short of maxLength behaves like minLength itself,
        and the pattern's state like the first one seen that takes the same strings of up to
        `horizon` chars (regex_horizon.py: the counts of a counted repeat far from its bounds). Inside
        an escape too: the count waits for the escaped char, and the escapes allowed depend on the
        pattern's next chars alone, which the representative shares."""
        mx, mn = self.schema.max_len, self.schema.min_len
        count = self.count
        if mx is not None and mn < count and count + horizon < mx:
            count = mn
        regex = horizon_rep(self.regex, horizon) if self.regex is not None else None
        if count == self.count and regex is self.regex:
            return self
        return StrFrame(self.schema, count, regex, self.esc, self.code)

    def skip(self, n: int) -> Frame:
        regex = self.regex
        if regex is not None and n and regex.loop_chars().is_empty():
            chain = regex.chain()
            assert chain is not None  # internal: skip follows free_run
            regex = regex.advance(n, chain[0])
        return StrFrame(self.schema, self._bump(n), regex)

    def skip_chars(self, most: int) -> CharSet | None:
        """The chars of `skip(1)` .. `skip(most)` together, when the pattern (if any) stays as it is:
        the quote needs the count at least minLength, content and escapes need it under maxLength,
        and the count only grows, so the two extremes hold every char (None inside a counted run)."""
        if self.esc or (self.regex is not None and self.regex.loop_chars().is_empty()):
            return None
        return self.skip(1).chars() | self.skip(most).chars()

    def skips(self, most: int) -> list[Frame]:
        """`skip(1)` .. `skip(most)`, the pattern's counted run advanced one step at a time."""
        regex = self.regex
        chain = regex.chain() if regex is not None and regex.loop_chars().is_empty() else None
        out: list[Frame] = []
        for n in range(1, most + 1):
            if regex is not None and chain is not None:
                regex = regex.advance(1, chain[0])
            out.append(StrFrame(self.schema, self._bump(n), regex))
        return out

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


class ArrFrame(Frame):
    """An array with `count` items read, `found` of them counted toward `contains` (up to minContains,
    or exactly up to maxContains); `open` until the first item or "]".

    While too few are counted, each item is read two ways side by side: as an item, and as an item that
    also matches `contains` (counted). The array may close once enough are, so it holds exactly the
    arrays with that many items matching."""

    __slots__ = ("after_value", "count", "depth", "found", "schema")

    schema: Schema
    count: int
    after_value: bool
    depth: int
    found: int

    def __init__(
        self,
        schema: Schema,
        count: int,
        after_value: bool = False,
        depth: int = 1,
        found: int = 0,
    ) -> None:
        self._hash = 0
        self.schema = schema
        self.count = count
        self.after_value = after_value
        self.depth = depth
        self.found = found

    def identity(self) -> tuple[object, ...]:
        return (self.schema, self.count, self.after_value, self.depth, self.found)

    def _item(self) -> Schema | None:
        s = self.schema
        if self.count < len(s.prefix):
            return s.prefix[self.count]
        if s.max_items is not None and self.count >= s.max_items:
            return None
        return s.items

    def _ways(self) -> list[tuple[int, Schema]]:
        """(items counted after it, its schema) for each way the next item may be read: uncounted only
        while the items left under maxItems can still bring the count up (else that way is a dead end);
        counted while the count is short of minContains, or of maxContains when there is one (the
        uncounted way then reads the item against `not contains`, so the count is exact)."""
        item = self._item()
        if item is None:
            return []
        s = self.schema
        need = s.min_contains - self.found
        most = s.max_contains
        if need <= 0 and most is None:
            return [(self.found, item)]
        ways = []
        at = self.count < len(s.prefix)
        uncounted = item if most is None else (s.prefix_missed[self.count] if at else s.items_missed)
        if uncounted is not None and (s.max_items is None or s.max_items - self.count - 1 >= need):
            ways.append((self.found, uncounted))
        counted = s.prefix_found[self.count] if at else s.items_found
        if counted is not None and (need > 0 if most is None else self.found < most):
            ways.append((self.found + 1, counted))
        return ways

    def _can_close(self) -> bool:
        return self.count >= self.schema.min_items and self.found >= self.schema.min_contains

    def chars(self) -> CharSet:
        acc = CharSet.of("]") if self._can_close() else EMPTY
        for _, sub in self._ways():
            acc = acc | (CharSet.of(",") if self.after_value else sub.first_chars())
        return acc

    def feed(self, c: str) -> Replacements:
        if c == "]":
            return [()] if self._can_close() else []
        ways = self._ways()
        if not ways:
            return []
        cap = max(self.schema.min_items, self.schema.max_items or 0, len(self.schema.prefix)) + 1
        count = min(self.count + 1, cap)
        ws = WsFrame(0, self.depth)
        nexts = [(ArrFrame(self.schema, count, True, self.depth, found), sub) for found, sub in ways]
        if self.after_value:
            return [(nxt, ws, ValueFrame(sub, self.depth), ws) for nxt, sub in nexts] if c == "," else []
        return [(nxt, ws, *rep) for nxt, sub in nexts for rep in ValueFrame(sub, self.depth).feed(c)]

    def can_end(self) -> bool:
        return False


def _size(klass: CharSet) -> int:
    return sum(hi - lo + 1 for lo, hi in klass.ranges)
