"""Arguments of one call as JSON: schema typing of written values, relaxed objects (Gemma 4), Python calls
(LFM2). Pure functions over a finished piece of text; tagged bodies are read in `tagged.py`, and the streaming
side lives in `stream_args.py`.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_PYTHON_LITERALS = {"True": True, "False": False, "None": None}


class ArgumentsError(ValueError):
    """The arguments text does not follow the template's format."""


def schema_types(schema: dict[str, Any] | None, key: str) -> set[str]:
    """The JSON types the tool's parameters schema allows for `key` (empty: unknown)."""
    if not isinstance(schema, dict):
        return set()
    prop = (schema.get("properties") or {}).get(key)
    if not isinstance(prop, dict):
        return set()
    found: set[str] = set()
    kind = prop.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(k for k in kind if isinstance(k, str))
    for combo in ("anyOf", "oneOf"):
        for option in prop.get(combo) or ():
            if isinstance(option, dict) and isinstance(option.get("type"), str):
                found.add(option["type"])
    if "enum" in prop and not found:
        found.update("string" if isinstance(v, str) else "number" for v in prop["enum"])
    return found


def _python_literal(text: str) -> Any:
    """Templates that print objects with Python's str() teach models `{'a': True}`; read it safely."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return None


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


def convert_value(raw: str, types: set[str]) -> Any:
    """A tagged value as the JSON value the schema asks for ("5" -> 5 for an integer)."""
    if types == {"string"}:
        return raw
    text = raw.strip()
    if text in _PYTHON_LITERALS and (not types or types & {"boolean", "null"}):
        return _PYTHON_LITERALS[text]
    try:
        value = json.loads(text)
    except ValueError:
        value = _python_literal(text) if text[:1] in "[{(" else None
        if value is None:
            return raw
    if not types:
        return value
    kind = _json_type(value)
    if kind in types or (kind == "integer" and "number" in types):
        return value
    return raw if "string" in types else value


def dump_arguments(args: Any) -> str:
    """Arguments as the JSON text tool calls carry."""
    return json.dumps(args, ensure_ascii=False)


def relaxed_end(text: str, pos: int, quote: str) -> int:
    """Index after the relaxed object starting at `pos` ("{"), or -1 while it is still open."""
    depth, i = 0, pos
    while i < len(text):
        if quote and text.startswith(quote, i):
            close = text.find(quote, i + len(quote))
            if close < 0:
                return -1
            i = close + len(quote)
            continue
        ch = text[i]
        if ch == '"':
            close = _json_string_end(text, i)
            if close < 0:
                return -1
            i = close
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _json_string_end(text: str, pos: int) -> int:
    i = pos + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return -1


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def relaxed_to_json(text: str, quote: str) -> Any:
    """Read `{key:<|"|>text<|"|>,n:7,o:{a:[1]}}` (bare keys, custom quotes) as JSON, or raise."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if quote and text.startswith(quote, i):
            close = text.find(quote, i + len(quote))
            if close < 0:
                raise ArgumentsError("unterminated string")
            out.append(json.dumps(text[i + len(quote) : close], ensure_ascii=False))
            i = close + len(quote)
        elif text[i] == '"':
            close = _json_string_end(text, i)
            if close < 0:
                raise ArgumentsError("unterminated string")
            out.append(text[i:close])
            i = close
        elif (number := _NUMBER.match(text, i)) is not None:
            out.append(number.group())  # "1.5e10": its exponent is no bare word
            i = number.end()
        elif text[i].isalpha() or text[i] == "_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in "_-."):
                j += 1
            word = text[i:j]
            rest = text[j:].lstrip()
            is_key = rest.startswith(":")
            out.append(json.dumps(word) if is_key or word not in ("true", "false", "null") else word)
            i = j
        else:
            out.append(text[i])
            i += 1
    try:
        return json.loads("".join(out))
    except ValueError as exc:
        raise ArgumentsError(f"arguments are not a valid object: {exc}") from exc


def pythonic_end(text: str, pos: int) -> int:
    """Index after the parenthesised arguments starting at `pos` ("("), or -1 while they are open."""
    depth, quote, i = 0, "", pos
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _escape_newlines_in_strings(text: str) -> str:
    """Templates print multi-line strings raw inside quotes ('a\nb' with a real newline); make them legal."""
    out, quote, i = [], "", 0
    while i < len(text):
        ch = text[i]
        if quote and ch == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if quote and ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        else:
            if ch in "'\"" and (not quote or ch == quote):
                quote = "" if quote else ch
            out.append(ch)
        i += 1
    return "".join(out)


class _JsonNames(ast.NodeTransformer):
    """JSON's true/false/null inside Python call syntax (LFM2 models mix them) read as their values."""

    _VALUES: dict[str, Any] = {"true": True, "false": False, "null": None}  # noqa: RUF012

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self._VALUES:
            return ast.copy_location(ast.Constant(self._VALUES[node.id]), node)
        return node


def pythonic_arguments(text: str) -> dict[str, Any]:
    """Read `(key='text', n=7, o={"a": [1], "b": True})` safely (literals only) as JSON-able arguments."""
    try:
        call = ast.parse("f" + _escape_newlines_in_strings(text), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise ArgumentsError(f"arguments are not a Python call: {exc}") from exc
    if not isinstance(call, ast.Call) or call.args or any(k.arg is None for k in call.keywords):
        raise ArgumentsError("arguments must be key=value pairs")
    result: dict[str, Any] = {}
    for keyword in call.keywords:
        try:
            value = ast.literal_eval(_JsonNames().visit(keyword.value))
            result[str(keyword.arg)] = json.loads(json.dumps(value))
        except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
            raise ArgumentsError(f"argument {keyword.arg!r} is not a literal: {exc}") from exc
    return result
