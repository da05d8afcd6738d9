"""Frames for the tool-call grammar description of `tokenloom.grammar` (Literal, Sequence, Choice,
Repeat, JsonValue, Text, Whitespace); JSON arguments reuse the JSON Schema frames.

Knows nothing of templates: it receives the description the auto-parser built.
"""

from __future__ import annotations

import functools

from tokenloom import grammar as g
from tokenloom.constrain.charset import ANY, EMPTY, WHITESPACE, CharSet
from tokenloom.constrain.json_frames import Replacements
from tokenloom.constrain.json_schema import SchemaCompiler
from tokenloom.constrain.json_values import start_value
from tokenloom.constrain.parser import Frame, FreeRun
from tokenloom.constrain.schema_ir import Schema
from tokenloom.errors import GrammarError

MAX_NODES = 10_000


class Section:
    """Compiled context of one grammar: the JSON schemas of its JsonValue nodes, compiled once."""

    def __init__(self, root: g.Node, param: str) -> None:
        self.schemas: dict[g.JsonValue, Schema] = {}
        self.unenforced: set[str] = set()
        self._count = 0
        self._prepare(root, param)

    def _prepare(self, node: g.Node, param: str) -> None:
        self._count += 1
        if self._count > MAX_NODES:
            raise GrammarError("tool-call grammar too large", param=param)
        if isinstance(node, g.Sequence):
            for i, item in enumerate(node.items):
                self._prepare(item, f"{param}.items[{i}]")
        elif isinstance(node, g.Choice):
            if not node.options:
                raise GrammarError("empty choice", param=param)
            for i, opt in enumerate(node.options):
                self._prepare(opt, f"{param}.options[{i}]")
        elif isinstance(node, g.Repeat):
            if node.min_count < 0 or (node.max_count is not None and node.max_count < node.min_count):
                raise GrammarError("bad repeat bounds", param=param)
            self._prepare(node.item, f"{param}.item")
            if node.separator is not None:
                self._prepare(node.separator, f"{param}.separator")
        elif isinstance(node, g.JsonValue) and node not in self.schemas:
            try:
                schema = node.schema
            except ValueError as e:
                raise GrammarError(f"invalid JSON schema text: {e}", param=param) from None
            comp = SchemaCompiler(schema, f"{param}.schema")
            self.schemas[node] = comp.compile()
            self.unenforced |= comp.unenforced
        elif isinstance(node, g.Text) and not node.stop and node.max_length is None:
            raise GrammarError("free text needs a stop string or a max_length", param=param)
        elif not isinstance(node, g.Literal | g.JsonValue | g.Text | g.Whitespace):
            raise GrammarError(f"unknown grammar node {type(node).__name__}", param=param)

    def start(self, node: g.Node, c: str) -> Replacements:
        """Frames for `node` after its first character `c`."""
        if isinstance(node, g.Literal):
            if not node.text or node.text[0] != c:
                return []
            return [(LitFrame(node.text, 1),)] if len(node.text) > 1 else [()]
        if isinstance(node, g.Sequence):
            return SeqFrame(self, node, 0).feed(c)
        if isinstance(node, g.Choice):
            return [r for opt in node.options for r in self.start(opt, c)]
        if isinstance(node, g.Repeat):
            return RepFrame(self, node, 0, False).feed(c)
        if isinstance(node, g.JsonValue):
            return start_value(self.schemas[node], c)
        if isinstance(node, g.Text):
            return TextFrame(node, "", 0).feed(c)
        return SpaceFrame(node.max_length, 0).feed(c)

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - a Section lives as long as its grammar
    def first(self, node: g.Node) -> CharSet:
        if isinstance(node, g.Literal):
            return CharSet.of(node.text[0]) if node.text else EMPTY
        if isinstance(node, g.Sequence):
            acc = EMPTY
            for item in node.items:
                acc = acc | self.first(item)
                if not self.nullable(item):
                    break
            return acc
        if isinstance(node, g.Choice):
            acc = EMPTY
            for opt in node.options:
                acc = acc | self.first(opt)
            return acc
        if isinstance(node, g.Repeat):
            return self.first(node.item) if node.max_count != 0 else EMPTY
        if isinstance(node, g.JsonValue):
            return self.schemas[node].first_chars()
        if isinstance(node, g.Text):
            return TextFrame(node, "", 0).chars()
        return WHITESPACE if node.max_length > 0 else EMPTY

    @functools.lru_cache(maxsize=4096)  # noqa: B019
    def nullable(self, node: g.Node) -> bool:
        if isinstance(node, g.Literal):
            return not node.text
        if isinstance(node, g.Sequence):
            return all(self.nullable(i) for i in node.items)
        if isinstance(node, g.Choice):
            return any(self.nullable(o) for o in node.options)
        if isinstance(node, g.Repeat):
            return node.min_count == 0 or self.nullable(node.item)
        return isinstance(node, g.Text | g.Whitespace)


class LitFrame(Frame):
    __slots__ = ("pos", "text")

    text: str
    pos: int

    def __init__(self, text: str, pos: int) -> None:
        self._hash = 0
        self.text = text
        self.pos = pos

    def identity(self) -> tuple[object, ...]:
        return (self.text, self.pos)

    def chars(self) -> CharSet:
        return CharSet.of(self.text[self.pos])

    def feed(self, c: str) -> Replacements:
        if self.text[self.pos] != c:
            return []
        return [(LitFrame(self.text, self.pos + 1),)] if self.pos + 1 < len(self.text) else [()]

    def can_end(self) -> bool:
        return False


class SeqFrame(Frame):
    """Before item `index` of a Sequence."""

    __slots__ = ("ctx", "index", "node")

    ctx: Section
    node: g.Sequence
    index: int

    def __init__(self, ctx: Section, node: g.Sequence, index: int) -> None:
        self._hash = 0
        self.ctx = ctx
        self.node = node
        self.index = index

    def identity(self) -> tuple[object, ...]:
        return (self.node, self.index)

    def chars(self) -> CharSet:
        acc = EMPTY
        for item in self.node.items[self.index :]:
            acc = acc | self.ctx.first(item)
            if not self.ctx.nullable(item):
                break
        return acc

    def feed(self, c: str) -> Replacements:
        items = self.node.items
        out: Replacements = []
        for i in range(self.index, len(items)):
            below: tuple[Frame, ...] = (SeqFrame(self.ctx, self.node, i + 1),) if i + 1 < len(items) else ()
            out.extend(below + rep for rep in self.ctx.start(items[i], c))
            if not self.ctx.nullable(items[i]):
                break
        return out

    def can_end(self) -> bool:
        return all(self.ctx.nullable(i) for i in self.node.items[self.index :])


class RepFrame(Frame):
    """`count` items of a Repeat read; `after_item` means a separator (or the end) comes next."""

    __slots__ = ("after_item", "count", "ctx", "node")

    ctx: Section
    node: g.Repeat
    count: int
    after_item: bool

    def __init__(self, ctx: Section, node: g.Repeat, count: int, after_item: bool) -> None:
        self._hash = 0
        self.ctx = ctx
        self.node = node
        self.count = count
        self.after_item = after_item

    def identity(self) -> tuple[object, ...]:
        return (self.node, self.count, self.after_item)

    def _more(self) -> bool:
        return self.node.max_count is None or self.count < self.node.max_count

    def chars(self) -> CharSet:
        sep = self.node.separator
        if not self._more():
            return EMPTY
        if self.after_item and sep is not None:
            if self.ctx.nullable(sep):  # e.g. Whitespace() between calls: the next item may follow at once
                return self.ctx.first(sep) | self.ctx.first(self.node.item)
            return self.ctx.first(sep)
        return self.ctx.first(self.node.item)

    def feed(self, c: str) -> Replacements:
        if not self._more():
            return []
        sep = self.node.separator
        if self.after_item and sep is not None:
            nxt = RepFrame(self.ctx, self.node, self.count, False)
            out = [(nxt, *rep) for rep in self.ctx.start(sep, c)]
            return out + nxt.feed(c) if self.ctx.nullable(sep) else out
        cap = max(self.node.min_count, self.node.max_count or 0) + 1
        nxt = RepFrame(self.ctx, self.node, min(self.count + 1, cap), True)
        return [(nxt, *rep) for rep in self.ctx.start(self.node.item, c)]

    def can_end(self) -> bool:
        return self.count >= self.node.min_count and (self.after_item or self.count == 0)


class TextFrame(Frame):
    """Free text without any of `node.stop`; `suffix` is the end that could still grow into a stop."""

    __slots__ = ("count", "node", "suffix")

    node: g.Text
    suffix: str
    count: int

    def __init__(self, node: g.Text, suffix: str, count: int) -> None:
        self._hash = 0
        self.node = node
        self.suffix = suffix
        self.count = count

    def identity(self) -> tuple[object, ...]:
        return (self.node, self.suffix, self.count)

    def _ok(self, c: str) -> str | None:
        s = self.suffix + c
        if any(s.endswith(stop) for stop in self.node.stop if stop):
            return None
        for k in range(len(s), 0, -1):
            if any(stop.startswith(s[-k:]) for stop in self.node.stop):
                return s[-k:]
        return ""

    def chars(self) -> CharSet:
        mx = self.node.max_length
        if mx is not None and self.count >= mx:
            return EMPTY
        banned = "".join(
            {
                stop[len(self.suffix)]
                for stop in self.node.stop
                if stop.startswith(self.suffix) and len(stop) == len(self.suffix) + 1
            }
        )
        return ANY - CharSet.of(banned) if banned else ANY

    def feed(self, c: str) -> Replacements:
        mx = self.node.max_length
        if mx is not None and self.count >= mx:
            return []
        suffix = self._ok(c)
        if suffix is None:
            return []
        count = self.count + 1 if mx is not None else 0
        return [(TextFrame(self.node, suffix, count),)]

    def can_end(self) -> bool:
        return True

    def free_run(self) -> FreeRun | None:
        if self.suffix:
            return None
        klass = ANY - CharSet.of("".join({s[0] for s in self.node.stop if s}))
        mx = self.node.max_length
        if mx is None:
            return FreeRun(klass, None)
        return FreeRun(klass, mx - self.count) if mx > self.count else None

    def skip(self, n: int) -> Frame:
        return TextFrame(self.node, "", self.count + n if self.node.max_length is not None else 0)


class SpaceFrame(Frame):
    """Up to `max_length` whitespace characters."""

    __slots__ = ("count", "max_length")

    max_length: int
    count: int

    def __init__(self, max_length: int, count: int) -> None:
        self._hash = 0
        self.max_length = max_length
        self.count = count

    def identity(self) -> tuple[object, ...]:
        return (self.max_length, self.count)

    def chars(self) -> CharSet:
        return WHITESPACE if self.count < self.max_length else EMPTY

    def feed(self, c: str) -> Replacements:
        ok = c in " \t\n\r" and self.count < self.max_length
        return [(SpaceFrame(self.max_length, self.count + 1),)] if ok else []

    def can_end(self) -> bool:
        return True
