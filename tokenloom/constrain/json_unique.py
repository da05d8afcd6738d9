"""Arrays with `uniqueItems`: the array frame keeps the canonical text of every item it has read.

A `UniqFrame` stays on top for the whole array and parses the current item with a sub-parser, so it
sees the item's characters and can refuse the one that would complete a duplicate (the closing quote
of a repeated string, the `,` after a repeated number). Masks are computed on a *twin* state
(`twin_state`): once the item is unlike every seen item (`json_partial.may_become`, exact but for
numbers and escapes cut short) its text is dropped (FRESH), so states inside items repeat, their masks
are memoised and pattern strings get the whole-vocabulary pattern pass (`pattern`/`popped`);
unique_mask.py re-judges from the exact state the few tokens the twin cannot. A twin reading a FRESH
item is laid out as plain stacks (`flattened`: the frame after the item, the item's own stacks on top),
which the mask walk reads at the speed and with the fast paths of any other stack. An unfinished string,
object or array item that may still repeat one is dropped too: it can only complete at a closing quote,
brace or bracket, so unique_mask.py re-judges the allowed tokens holding one of those bytes as well.

Inside an item's string, while the text may still equal a seen item, the frame offers a *stateful*
free run: the trie walk checks every token leaving the run from the exact state it reaches. Once the
item can no longer repeat a seen one (its prefix matches none), the run is declared *unchanged* even
though the frame still records the text (for later items): the walk then judges a token's tail from
the state at the token's start. That only differs from the exact state if one token, after run
characters, also completes a *later* item of the same array (`x","y"`); no token of the default
vocabulary does (checked in tests/unit/constrain/test_vocab_masks.py), and it keeps string items as
cheap as plain strings. Knows nothing of vocabularies.
"""

from __future__ import annotations

import json
from enum import Enum
from functools import lru_cache
from typing import Any

from tokenloom.constrain.charset import EMPTY, WHITESPACE, CharSet
from tokenloom.constrain.json_equality import value_key
from tokenloom.constrain.json_frames import Replacements, ValueFrame, ws_cap
from tokenloom.constrain.json_partial import may_become
from tokenloom.constrain.parser import Frame, FreeRun, Grammar, ParserState, Stack
from tokenloom.constrain.regex import DState
from tokenloom.constrain.schema_ir import Schema
from tokenloom.json_brackets import BracketState, scan_brackets

_CLOSE = CharSet.of("]")
_COMMA = CharSet.of(",")
# The text of an item already unlike every seen item, in the twin states masks are computed on
# (`twin_state`): its characters are not kept, so the states repeat. No JSON text starts with a NUL.
FRESH = "\0fresh"


class Slot(Enum):
    OPEN = 1  # after "["
    ITEM = 2  # inside an item
    AFTER = 3  # after an item
    COMMA = 4  # after ","


def canonical(text: str) -> str:
    """The text of a JSON value up to equality (key order, escapes, 1 == 1.0 do not matter)."""
    return value_key(json.loads(text))


def _start(item: Schema, depth: int) -> ParserState:
    st = item.starts.get(depth)
    if st is None:
        st = item.starts[depth] = Grammar((ValueFrame(item, depth),)).initial
    return st


class UniqFrame(Frame):
    """An array of distinct items: `seen` canonical item texts, `text` of the current item (None: not
    known, only in the look-ahead states `skip` makes), `ws` consecutive whitespace characters."""

    __slots__ = ("depth", "schema", "seen", "slot", "sub", "text", "ws")

    schema: Schema
    slot: Slot
    depth: int
    seen: frozenset[str]
    sub: ParserState | None
    text: str | None
    ws: int

    def __init__(
        self,
        schema: Schema,
        slot: Slot,
        depth: int,
        seen: frozenset[str] = frozenset(),
        sub: ParserState | None = None,
        text: str | None = "",
        ws: int = 0,
    ) -> None:
        self._hash = 0
        self.schema = schema
        self.slot = slot
        self.depth = depth
        self.seen = seen
        self.sub = sub
        self.text = text
        self.ws = ws

    def identity(self) -> tuple[object, ...]:
        return (self.schema, self.slot, self.depth, self.seen, self.sub, self.text, self.ws)

    def _item(self) -> Schema | None:
        s, n = self.schema, len(self.seen)
        if n < len(s.prefix):
            return s.prefix[n]
        if s.max_items is not None and n >= s.max_items:
            return None
        return s.items

    def _done(self) -> UniqFrame | None:
        """The frame after the current item, if it is complete here and new."""
        sub = self.sub
        if sub is None or not sub.can_end():
            return None
        if self.text is None or self.text == FRESH:  # it still counts (minItems, maxItems, prefixItems)
            return self._after_unknown()
        key = canonical(self.text)
        if key in self.seen:
            return None
        return UniqFrame(self.schema, Slot.AFTER, self.depth, self.seen | {key})

    def _after_unknown(self) -> UniqFrame:
        """The frame after the current item when its text is not known (a look-ahead, a twin's FRESH
        item): the item is counted as an unknown one."""
        unknown = f"\0unknown {len(self.seen)}"  # no canonical JSON text holds a raw NUL
        return UniqFrame(self.schema, Slot.AFTER, self.depth, self.seen | {unknown}, text=None)

    def flattened(self) -> list[Stack] | None:
        """A twin reading a FRESH item as plain stacks: the frame after the item, then each stack of
        the item's own parser on top of it. Nothing in a FRESH item is compared with the seen items,
        so these stacks take exactly the strings this frame takes. The mask walk reads them as it
        reads any other stack, without the item's sub-parser building and interning a second state at
        each char, and takes the fast paths of their top frames."""
        if self.slot is not Slot.ITEM or self.text != FRESH or self.sub is None:
            return None
        after = self._after_unknown()
        return [(after, *stack) for stack in self.sub.stacks]

    def chars(self) -> CharSet:
        if self.slot is Slot.ITEM:
            assert self.sub is not None  # internal: an item slot holds its sub-parser
            done = self._done()
            return self.sub.allowed_chars() | (done.chars() if done is not None else EMPTY)
        acc = WHITESPACE if self.ws < ws_cap(self.depth) else EMPTY
        item = self._item()
        if self.slot is not Slot.COMMA and len(self.seen) >= self.schema.min_items:
            acc = acc | _CLOSE
        if item is not None:
            acc = acc | (_COMMA if self.slot is Slot.AFTER else item.first_chars())
        return acc

    def feed(self, c: str) -> Replacements:
        if self.slot is Slot.ITEM:
            return self._feed_item(c)
        if c in " \t\n\r":
            if self.ws >= ws_cap(self.depth):
                return []
            return [(UniqFrame(self.schema, self.slot, self.depth, self.seen, None, "", self.ws + 1),)]
        if c == "]":
            ok = self.slot is not Slot.COMMA and len(self.seen) >= self.schema.min_items
            return [()] if ok else []
        item = self._item()
        if item is None:
            return []
        if self.slot is Slot.AFTER:
            return [(UniqFrame(self.schema, Slot.COMMA, self.depth, self.seen),)] if c == "," else []
        sub = _start(item, self.depth).add_char(c)
        if sub is None:
            return []
        return self._item_state(sub, c)

    def _feed_item(self, c: str) -> Replacements:
        assert self.sub is not None  # internal: an item slot holds its sub-parser
        out: Replacements = []
        sub = self.sub.add_char(c)
        if sub is not None:
            text = self.text
            out.extend(self._item_state(sub, text if text is None or text == FRESH else text + c))
        done = self._done()
        if done is not None:
            out.extend(done.feed(c))
        return out

    def _item_state(self, sub: ParserState, text: str | None) -> Replacements:
        """The frame inside an item; a finished duplicate is refused at its last character."""
        if (
            text is not None
            and text != FRESH
            and sub.allowed_chars().is_empty()
            and canonical(text) in self.seen
        ):
            return []
        return [(UniqFrame(self.schema, Slot.ITEM, self.depth, self.seen, sub, text),)]

    def can_end(self) -> bool:
        return False

    def unpadded(self) -> tuple[int, Frame | None] | None:
        """Between items: how many more whitespace chars fit, and this frame once they stop (it takes
        no more, and the next char is judged as before any): the mask walk judges a token's leading
        whitespace and its rest apart. None inside an item."""
        if self.slot is Slot.ITEM:
            return None
        cap = ws_cap(self.depth)
        return max(0, cap - self.ws), UniqFrame(self.schema, self.slot, self.depth, self.seen, None, "", cap)

    def free_run(self) -> FreeRun | None:
        """The item's own run (inside a string). While the item may still repeat a seen one, a
        stateful run (the walk checks leaving tokens from the exact states they reach); once it
        cannot, the run is declared unchanged (see the module docstring); bounded runs stay bounded."""
        if self.slot is not Slot.ITEM or self.sub is None or self.sub.can_end():
            return None
        run = self.sub.free_run()
        if run is None:
            return self._delegated_run(self.sub) if self._may_repeat() else None
        if run[0].remaining is not None:
            return FreeRun(run[0].klass, run[0].remaining)
        return FreeRun(run[0].klass, None, stateful=run[0].stateful or self._may_repeat())

    def delegate(self) -> tuple[CharSet, Frame] | None:
        """The item's delegation hint, once the item can no longer repeat a seen one."""
        if self.slot is not Slot.ITEM or self.sub is None or self._may_repeat():
            return None
        hint = self.sub.delegate()
        if hint is None:
            return None
        return hint[0], UniqFrame(self.schema, Slot.ITEM, self.depth, self.seen, hint[1], self.text)

    def pattern(self) -> tuple[DState, int, int, int | None] | None:
        """The item's pattern-string hint (one same pattern frame on top of every item stack), once
        the item can no longer repeat a seen one: the whole-vocabulary pattern pass then judges the
        tokens inside the string, and those that close it go on from `popped()`."""
        sub = self.sub
        if self.slot is not Slot.ITEM or sub is None or self.text != FRESH:
            return None
        top = sub.common_top()
        return top.pattern() if top is not None else None

    def popped(self) -> UniqFrame:
        """This twin once the item's pattern string closes (the string frame popped from the item)."""
        assert self.sub is not None  # internal: popped follows pattern
        return UniqFrame(self.schema, Slot.ITEM, self.depth, self.seen, self.sub.closed(), FRESH)

    def splits(self) -> bool:
        return True

    def split(self) -> tuple[UniqFrame, ...]:
        """One frame per alternative of the item's parser (ParserState.alternatives): the array takes
        a text when one of them does, since the item's text, not its parse, decides the rest."""
        if self.sub is None:
            return (self,)
        alts = self.sub.alternatives()
        if len(alts) == 1:
            return (self,)
        return tuple(
            UniqFrame(self.schema, self.slot, self.depth, self.seen, alt, self.text, self.ws) for alt in alts
        )

    def twin(self) -> UniqFrame:
        """The frame masks are computed on: an item already unlike every seen one keeps no text
        (FRESH), nested uniqueItems arrays likewise; equal to self when nothing can be dropped."""
        sub = twin_state(self.sub) if self.sub is not None else None
        text = self.text
        forget = not self._may_repeat() or self._closes_later()
        if self.slot is Slot.ITEM and text is not None and text != FRESH and forget:
            text = FRESH
        seen = self.seen
        if self.slot is Slot.ITEM and text == FRESH:
            seen = _counted(self.schema, len(seen))
        if sub is self.sub and text == self.text and seen == self.seen:
            return self
        return UniqFrame(self.schema, self.slot, self.depth, seen, sub, text, self.ws)

    def _closes_later(self) -> bool:
        """An unfinished string, object or array item: it can only become a duplicate at its closing
        quote, brace or bracket, so the twin may forget its text while unique_mask.py re-judges, from the
        exact state, the allowed tokens holding such a byte (`twin_forgets_repeatable`)."""
        sub, text = self.sub, self.text
        return sub is not None and text is not None and text[:1] in _CLOSER and not sub.can_end()

    def forgets_repeatable(self) -> bool:
        """Whether `twin` drops the text of an item that may still repeat a seen one (here or nested)."""
        if self.sub is not None and twin_forgets_repeatable(self.sub):
            return True
        return self.forgets_own()

    def forgets_own(self) -> bool:
        """Whether `twin` drops the text of this array's own item while it may still repeat a seen one."""
        text = self.text
        return (
            self.slot is Slot.ITEM
            and text is not None
            and text != FRESH
            and self._may_repeat()
            and self._closes_later()
        )

    def _may_repeat(self) -> bool:
        """Whether the current item could still turn out equal to a seen one (json_partial: exact but
        for numbers and escapes cut short, which may be anything of their kind)."""
        text = self.text
        if text == FRESH:
            return False
        if not self.seen or text is None:
            return bool(self.seen)
        return _may_become_seen(text, self.seen, _names_unique(self._item()))

    @staticmethod
    def _delegated_run(sub: ParserState) -> FreeRun | None:
        """A pattern's item: the chars its delegation hint sends to one looping state (e.g. the body
        of `^[a-z]+$`) also make a stateful run here."""
        hint = sub.delegate()
        if hint is None:
            return None
        run = hint[1].free_run()
        if run is None or run[0].remaining is not None or run[0].stateful:
            return None
        return FreeRun(hint[0], None, stateful=True) if (hint[0] - run[0].klass).is_empty() else None

    def skip(self, n: int) -> UniqFrame:
        """A look-ahead after `n` run characters, text unknown (so its characters are a superset)."""
        assert self.sub is not None  # internal: skip follows free_run
        run = self.sub.free_run()
        sub = self.sub if run is None or run[0].remaining is None else self.sub.skip(n)
        return UniqFrame(self.schema, Slot.ITEM, self.depth, self.seen, sub, None)


@lru_cache(maxsize=1 << 12)
def _names_unique(item: Schema | None) -> bool:
    """Whether an object item of `item` can never repeat a name: every object alternative lists its
    names and takes no others (an object frame refuses a listed name twice); combinations: not known."""
    if item is None:
        return False
    alternatives = item.alternatives()
    return all(
        alt.combo is None
        and ("object" not in alt.types or (alt.additional is None and not alt.pattern_props))
        for alt in alternatives
    )


@lru_cache(maxsize=1 << 12)
def _counted(schema: Schema, n: int) -> frozenset[str]:
    """What a twin keeps of `n` seen items while its own item is forgotten (FRESH): only how many, as
    placeholders, since nothing it judges compares with their values (a later item finished within
    the same token is re-judged from the exact state). Without maxItems, counts past the prefix items
    and minItems all behave alike, so items at different positions of one array share their states
    and masks."""
    if schema.max_items is None:
        n = min(n, max(len(schema.prefix), schema.min_items))
    return frozenset(f"\0unknown {i}" for i in range(n))


@lru_cache(maxsize=1 << 14)
def _may_become_seen(text: str, seen: frozenset[str], unique_names: bool) -> bool:
    """Whether the item `text` may still turn out equal to a seen item. Memoised: every frame of one
    item position asks it again (its twin, free run, delegation, the exact re-judging), and each
    answer parses the text against every seen item."""
    return any(may_become(text, value, unique_names) for value in _seen_values(seen))


@lru_cache(maxsize=1 << 12)
def _seen_values(seen: frozenset[str]) -> tuple[Any, ...]:
    """The seen items decoded (look-ahead placeholders for unknown items left out)."""
    return tuple(json.loads(key) for key in seen if not key.startswith("\0"))


def twin_state(st: ParserState) -> ParserState:
    """`st` with every uniqueItems frame on top of a stack replaced by its twin (see `UniqFrame.twin`).

    The twin allows the same tokens as `st` except, possibly, one that finishes the current item and
    then a whole later item equal to it: unique_mask.py judges those few tokens from `st` itself."""
    memo = st.memo
    if memo is None:
        memo = st.memo = {}
    hit = memo.get(_TWIN_KEY)
    if hit is not None:
        return hit  # type: ignore[return-value]
    stacks: list[tuple[Frame, ...]] = []
    changed = False
    for stack in st.stacks:
        top = stack[-1] if stack else None
        if isinstance(top, UniqFrame):
            twin = top.twin()
            flat = twin.flattened()
            if flat is not None:
                changed = True
                stacks.extend((*stack[:-1], *item) for item in flat)
                continue
            if twin is not top:
                changed, stack = True, (*stack[:-1], twin)
        stacks.append(stack)
    hit = st.grammar.state(tuple(dict.fromkeys(stacks))) if changed else st
    memo[_TWIN_KEY] = hit
    return hit


_TWIN_KEY = "json_unique.twin"  # where `twin_state` keeps its answer in a state's memo
_FORGETS_KEY = "json_unique.forgets"
# an item's first char -> the one byte that completes it: string, object and array items
_CLOSER = {'"': b'"', "{": b"}", "[": b"]"}
CLOSE_BYTES = b"".join(_CLOSER.values())


def twin_forgets_repeatable(st: ParserState) -> bool:
    """Whether `twin_state(st)` forgot an unfinished item that may still repeat a seen one: its mask
    then also allows the tokens that would complete that duplicate, all of which hold a CLOSE_BYTES byte."""
    memo = st.memo
    if memo is None:
        memo = st.memo = {}
    hit = memo.get(_FORGETS_KEY)
    if hit is None:
        hit = memo[_FORGETS_KEY] = any(
            isinstance(stack[-1], UniqFrame) and stack[-1].forgets_repeatable()
            for stack in st.stacks
            if stack
        )
    return bool(hit)


def _forgotten_items(st: ParserState) -> list[UniqFrame] | None:
    """The frames whose item `twin_state(st)` forgot while it may repeat a seen one, looking into the
    items of arrays that keep their own item (a duplicate there can only complete the nested one);
    None when a forgotten item holds another nested in it (only the general rules apply then)."""
    tops: list[UniqFrame] = []
    for stack in st.stacks:
        top = stack[-1] if stack else None
        if not isinstance(top, UniqFrame) or not top.forgets_repeatable():
            continue
        if top.sub is not None and twin_forgets_repeatable(top.sub):
            inner = None if top.forgets_own() else _forgotten_items(top.sub)
            if inner is None:
                return None
            tops.extend(inner)
        else:
            tops.append(top)
    return tops


def completing_bytes(st: ParserState) -> tuple[bytes, bool]:
    """What a token must hold to complete an item `twin_state(st)` forgot while it may repeat a seen
    one: one of the returned bytes (an object item completes only at its closing brace, an array at its
    bracket, a string at its quote) and, when the flag is set, a quote before it (the object or array
    item is inside a string now: it must leave that string first). Nested forgotten items: any of
    CLOSE_BYTES, no flag."""
    tops = _forgotten_items(st)
    if tops is None:
        return CLOSE_BYTES, False
    need: set[bytes] = set()
    in_string = True
    for top in tops:
        text = top.text or ""
        closer = _CLOSER.get(text[:1])
        if closer is None:
            return CLOSE_BYTES, False
        need.add(closer)
        # an unfinished object or array item's text never returns to depth 0: its state is at the end
        in_string = in_string and closer != b'"' and scan_brackets(text, 0, (0, False, False))[0][1]
    if not need:
        return CLOSE_BYTES, False
    return b"".join(sorted(need)), in_string


def completion_rules(st: ParserState) -> list[BracketState | frozenset[bytes]] | None:
    """For each item, at any depth, that `twin_state(st)` forgot while it may repeat a seen one, how a
    token may complete it as a duplicate: by closing an object or array item's outermost brace or
    bracket (where its text leaves the brackets: depth, inside a string, after a backslash), or, for a
    plain string item being read, by ending with one of the texts that end a seen string before its
    closing quote. None when some item is neither (a number, a string inside an escape)."""
    out: list[BracketState | frozenset[bytes]] = []
    for top in _all_forgotten(st):
        closer = _CLOSER.get((top.text or "")[:1])
        if closer is None:
            return None
        if closer != b'"':
            out.append(scan_brackets(top.text or "", 0, (0, False, False))[0])  # unfinished: never at 0
            continue
        ends = _string_ends(top)
        if ends is None:
            return None
        out.append(ends)
    return out


def _all_forgotten(st: ParserState) -> list[UniqFrame]:
    """The frames whose own item `twin_state(st)` forgot while it may repeat, nested ones included."""
    out: list[UniqFrame] = []
    for stack in st.stacks:
        top = stack[-1] if stack else None
        if not isinstance(top, UniqFrame) or not top.forgets_repeatable():
            continue
        if top.forgets_own():
            out.append(top)
        if top.sub is not None and twin_forgets_repeatable(top.sub):
            out.extend(_all_forgotten(top.sub))
    return out


def _string_ends(top: UniqFrame) -> frozenset[bytes] | None:
    """For one frame reading a plain string item: the texts that, followed by the closing quote,
    finish a duplicate of a seen item (None: not a string, or inside an escape)."""
    text = top.text
    if text is None or not text.startswith('"'):
        return None
    try:
        prefix = json.loads(text + '"')
    except ValueError:
        return None  # inside an escape
    return frozenset(
        value[len(prefix) :].encode("utf-8")
        for value in _seen_values(top.seen)
        if isinstance(value, str) and value.startswith(prefix)
    )
