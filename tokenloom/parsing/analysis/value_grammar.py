"""Grammar nodes for one argument value in a template's own non-JSON syntax: Gemma 4's relaxed objects
(`{flags:[<|"|>-v<|"|>],n:5}`), Python's str() of containers (`{'flags': ['-v'], 'on': True}`) and
MiniMax-M3's nested tags (`<options><timeout>5</timeout></options>`).

The parameter schema gives the shape. The grammar has no recursion, so a value whose shape the schema leaves
open nests at most `MAX_DEPTH` levels. Knows nothing of templates or of the constraint compiler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tokenloom.grammar import Choice, JsonValue, Literal, Node, Repeat, Sequence, Text

MAX_DEPTH = 2  # containers in containers below an argument whose schema does not say what they hold
_ALL_TYPES = ("string", "number", "boolean", "null", "array", "object")
_SCALARS: dict[str, Any] = {"type": ["string", "number", "boolean", "null"]}
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


def _types(schema: dict[str, Any]) -> tuple[str, ...]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return (kind,)
    if isinstance(kind, list) and kind:
        return tuple(k for k in kind if isinstance(k, str))
    if "properties" in schema:
        return ("object",)
    return ("array",) if "items" in schema else _ALL_TYPES


def _number(schema: dict[str, Any], kind: str) -> Node:
    return JsonValue.of({"type": kind, **{k: schema[k] for k in _NUMBER_KEYWORDS if k in schema}})


def _below(schema: dict[str, Any], key: str, depth: int) -> Any:
    """The schema of what a container holds; open ones hold only scalars once `depth` runs out."""
    return schema.get(key, {} if depth > 0 else _SCALARS)


def _count(schema: dict[str, Any], key: str) -> int | None:
    value = schema.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True, slots=True)
class _Brackets:
    """A dialect written with brackets: relaxed objects or Python literals."""

    is_python: bool
    quote: str = ""  # relaxed: the string delimiter, e.g. '<|"|>'

    def value(self, schema: Any, depth: int) -> Node:
        schema = schema if isinstance(schema, dict) else {}
        choices = schema.get("enum", [schema["const"]] if "const" in schema else None)
        if isinstance(choices, list) and choices:
            return Choice(tuple(Literal(self.literal(c)) for c in choices))
        alternatives = [o for key in ("anyOf", "oneOf") for o in schema.get(key) or () if isinstance(o, dict)]
        if alternatives:
            return Choice(tuple(self.value(o, depth) for o in alternatives))
        options: list[Node] = []
        for kind in _types(schema):
            if kind == "string":
                options.append(self.string())
            elif kind in ("integer", "number"):
                options.append(_number(schema, kind))
            elif kind == "boolean":
                options.append(Choice((Literal(self.literal(True)), Literal(self.literal(False)))))
            elif kind == "null":
                options.append(Literal(self.literal(None)))
            elif kind == "array":
                item = self.value(_below(schema, "items", depth), depth - 1)
                low, high = _count(schema, "minItems") or 0, _count(schema, "maxItems")
                body = Repeat(item, low, high, Literal(", " if self.is_python else ","))
                options.append(Sequence((Literal("["), body, Literal("]"))))
            elif kind == "object":
                options.append(self.object(schema, depth))
        if not options:  # a type JSON Schema does not know
            return self.value(_SCALARS, 0)
        return options[0] if len(options) == 1 else Choice(tuple(options))

    def object(self, schema: dict[str, Any], depth: int) -> Node:
        colon, comma = (": ", ", ") if self.is_python else (":", ",")
        props = schema.get("properties")
        if isinstance(props, dict) and props:
            entries: Node = Choice(
                tuple(
                    Sequence((Literal(self.key(k) + colon), self.value(p, depth - 1)))
                    for k, p in props.items()
                )
            )
            body = Repeat(entries, 0, len(props), Literal(comma))
        else:
            key = self.string() if self.is_python else Text(stop=(colon,), max_length=64)
            entry = Sequence(
                (key, Literal(colon), self.value(_below(schema, "additionalProperties", depth), depth - 1))
            )
            body = Repeat(entry, 0, None, Literal(comma))
        return Sequence((Literal("{"), body, Literal("}")))

    def key(self, key: str) -> str:
        return repr(key) if self.is_python else key

    def literal(self, value: Any) -> str:
        """A constant as the template prints it."""
        if self.is_python:
            return repr(value)
        if isinstance(value, str):
            return self.quote + value + self.quote
        if isinstance(value, list):
            return "[" + ",".join(self.literal(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ",".join(f"{k}:{self.literal(v)}" for k, v in sorted(value.items())) + "}"
        return json.dumps(value)

    def string(self) -> Node:
        if not self.is_python:
            return Sequence((Literal(self.quote), Text(stop=(self.quote,)), Literal(self.quote)))
        return Choice((_python_string("'"), _python_string('"')))


def _python_string(quote: str) -> Node:
    """A Python string literal as repr() writes it: escaped quotes, backslashes and controls, no raw newline.

    The hex digits of `\\x41` or `\\u00e9` are read as ordinary characters after the escape letter, which
    keeps the node small (it repeats in every open value); a bad escape makes the value a plain string.
    """
    run = Text(stop=(quote, "\\", "\n", "\r"))
    escape = Sequence((Literal("\\"), Choice(tuple(Literal(c) for c in "\\'\"abfnrtv0xuU"))))
    return Sequence((Literal(quote), run, Repeat(Sequence((escape, run))), Literal(quote)))


def relaxed_value(schema: Any, quote: str) -> Node:
    """A value of Gemma 4's relaxed syntax: bare keys, strings between `quote`, JSON numbers and booleans."""
    return _Brackets(is_python=False, quote=quote).value(schema, MAX_DEPTH)


def python_value(schema: Any) -> Node:
    """A value as Python's str() prints it: `{'a': [1, 'x']}`, True, False, None."""
    return _Brackets(is_python=True).value(schema, MAX_DEPTH)


def tag_value(schema: Any, ns: str, depth: int = MAX_DEPTH) -> Node:
    """MiniMax-M3's nested tags: an object as `{ns}<k>v{ns}</k>` pairs, a list as `{ns}<item>v{ns}</item>`,
    a scalar as its text (booleans as JSON). `ns` is the text before every tag (e.g. "]<]minimax[>[")."""
    schema = schema if isinstance(schema, dict) else {}
    options: list[Node] = []
    for kind in _types(schema):
        if kind == "array":
            item = Sequence(
                (Literal(ns + "<item>"), tag_value(_below(schema, "items", depth), ns, depth - 1))
            )
            low, high = _count(schema, "minItems") or 0, _count(schema, "maxItems")
            options.append(Repeat(Sequence((item, Literal(ns + "</item>"))), low, high))
        elif kind == "object":
            props = schema.get("properties")
            if isinstance(props, dict) and props:
                pairs = tuple(
                    Sequence((Literal(f"{ns}<{k}>"), tag_value(p, ns, depth - 1), Literal(f"{ns}</{k}>")))
                    for k, p in props.items()
                )
                options.append(Repeat(Choice(pairs), 0, len(pairs)))
            else:  # any key; the grammar cannot make the closing tag repeat it
                name = Text(stop=(">",), max_length=64)
                pair = (
                    Literal(ns + "<"),
                    name,
                    Literal(">"),
                    tag_value(_below(schema, "additionalProperties", depth), ns, depth - 1),
                )
                options.append(Repeat(Sequence((*pair, Literal(ns + "</"), name, Literal(">")))))
        elif kind in ("integer", "number"):
            options.append(_number(schema, kind))
        elif kind == "boolean":
            options.append(Choice((Literal("true"), Literal("false"))))
        elif kind == "string":
            options.append(Text(stop=(ns,)))
    if not options:  # only null, which the template leaves out
        return Literal("")
    return options[0] if len(options) == 1 else Choice(tuple(options))
