"""Tagged arguments (`<parameter=k>v</parameter>`, `<arg_key>k</arg_key><arg_value>v</arg_value>`, MiniMax-M3
`<k>v</k>`) read one argument at a time, so a finished body and a growing one go through the same code.

Values become JSON through the tool's schema (`arguments.convert_value`); knows nothing of sections or events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tokenloom.parsing.arguments import ArgumentsError, convert_value, schema_types
from tokenloom.parsing.markers import fault_excerpt
from tokenloom.parsing.structures import ToolCallStructure, literal_parts

CDATA_OPEN, CDATA_CLOSE = "<![CDATA[", "]]>"


@dataclass(frozen=True, slots=True)
class TagSyntax:
    """The literals of one template's tagged arguments, whitespace stripped where the output may vary it."""

    prefix: str  # e.g. "<parameter=", "<arg_key>"
    suffix: str  # e.g. ">", "</arg_key>\n<arg_value>"
    tail: str  # the fixed end after a varying attribute, e.g. '">'; often ""
    close: str  # e.g. "</parameter>", "</{key}>"
    separator: str  # between arguments, e.g. "" or ","
    lead_ws: str  # whitespace the template puts before a value (trimmed once), e.g. "\n"
    trail_ws: str  # whitespace the template puts after a value (trimmed once), e.g. "\n"

    def key_close(self, key: str) -> str:
        return self.close.replace("{key}", key)


@lru_cache(maxsize=256)
def tag_syntax(structure: ToolCallStructure) -> TagSyntax:
    suffix, tail = structure.arg_suffix.strip(), structure.arg_suffix_tail.strip()
    if not suffix and tail:
        suffix, tail = tail, ""
    lead, close = structure.arg_suffix_tail or structure.arg_suffix, structure.arg_close
    return TagSyntax(
        prefix=structure.arg_prefix.strip(),
        suffix=suffix,
        tail=tail,
        close=close.strip(),
        separator=structure.arg_separator.strip(),
        lead_ws=lead[len(lead.rstrip()) :],
        trail_ws=close[: len(close) - len(close.lstrip())],
    )


@lru_cache(maxsize=256)
def _spaced(literal: str) -> re.Pattern[str]:
    """`literal` with any whitespace between its tags ("</arg_key>\n<arg_value>" or without the newline)."""
    return re.compile(r"\s*".join(re.escape(part) for part in literal_parts(literal)))


def cdata_end(text: str, value_at: int, end: int) -> int:
    """Where a value's closing tag may start: after its CDATA section when it opens with one (a closing tag
    inside it is text), `end` while that section is still open; else `value_at`."""
    start = skip_ws(text, value_at, end)
    if not text.startswith(CDATA_OPEN, start, end):
        return value_at
    close = text.find(CDATA_CLOSE, start + len(CDATA_OPEN), end)
    return end if close < 0 else close + len(CDATA_CLOSE)


def skip_ws(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def read_key(text: str, pos: int, end: int, syntax: TagSyntax, complete: bool) -> tuple[str, int] | None:
    """The argument opening at `pos`: its key and where its value starts. None while `text[:end]` is too
    short to tell (only when not `complete`); ArgumentsError when it can never be one."""
    prefix, suffix = syntax.prefix, syntax.suffix
    if not text.startswith(prefix, pos, end):
        if not complete and prefix.startswith(text[pos:end]):
            return None
        raise ArgumentsError(f"expected {prefix!r} at {fault_excerpt(text[:end], pos, prefix)}")
    pos += len(prefix)
    found = _spaced(suffix).search(text, pos, end) if suffix else None
    if suffix and found is None:
        if not complete:
            return None
        raise ArgumentsError(f"argument name not closed by {suffix!r}")
    key_end, after_suffix = (found.start(), found.end()) if found is not None else (pos, pos)
    key = text[pos:key_end].strip()
    if not key or any(ch in key for ch in "<>\n"):
        raise ArgumentsError(f"bad argument name {key!r}")
    pos = after_suffix
    if syntax.tail:
        tail_at = text.find(syntax.tail, pos, end)
        if tail_at < 0:
            if not complete:
                return None
            raise ArgumentsError(f"argument attributes not closed by {syntax.tail!r}")
        pos = tail_at + len(syntax.tail)
    return key, pos


def after_value(text: str, pos: int, end: int, syntax: TagSyntax) -> int:
    """Skip the whitespace and separator after a value's closing tag."""
    pos = skip_ws(text, pos, end)
    if syntax.separator and text.startswith(syntax.separator, pos, end):
        pos = skip_ws(text, pos + len(syntax.separator), end)
    return pos


def trimmed(raw: str, syntax: TagSyntax) -> str:
    """Remove exactly the whitespace the template puts around a value, and a CDATA wrapper."""
    if syntax.lead_ws and raw.startswith(syntax.lead_ws):
        raw = raw[len(syntax.lead_ws) :]
    if syntax.trail_ws and raw.endswith(syntax.trail_ws):
        raw = raw[: len(raw) - len(syntax.trail_ws)]
    if raw.startswith(CDATA_OPEN) and raw.endswith(CDATA_CLOSE):
        raw = raw[len(CDATA_OPEN) : -len(CDATA_CLOSE)]
    return raw


def value_of(raw: str, key: str, structure: ToolCallStructure, schema: dict[str, Any] | None) -> Any:
    """The JSON value of a trimmed raw value: nested tags (MiniMax-M3) or a schema-typed scalar."""
    types = schema_types(schema, key)
    prop = ((schema or {}).get("properties") or {}).get(key)
    nested = _nested(raw, structure, prop, types)
    return convert_value(raw, types) if nested is None else nested


def parse_tagged(text: str, structure: ToolCallStructure, schema: dict[str, Any] | None) -> dict[str, Any]:
    """Parse a whole tagged arguments body into a dict, or raise ArgumentsError."""
    return dict(_tagged_pairs(text, structure, schema))


def _nested(raw: str, structure: ToolCallStructure, prop: Any, types: set[str]) -> Any:
    """A value written as more tags (MiniMax-M3: <options><timeout>5</timeout></options>), else None."""
    if "{key}" not in structure.arg_close or not raw.strip().startswith(structure.arg_prefix.strip()):
        return None
    if (types and not types & {"object", "array"}) or "string" in types:
        return None  # a value that may be a string stays the text the model wrote
    prop = prop if isinstance(prop, dict) else {}
    pairs = _tagged_pairs(raw, structure, prop if "array" not in types else {"properties": {}})
    if "array" in types or (not types and pairs and all(key == "item" for key, _ in pairs)):
        item_types = schema_types({"properties": {"item": prop.get("items") or {}}}, "item")
        return [convert_value(v, item_types) if isinstance(v, str) else v for _, v in pairs]
    return dict(pairs)


def _tagged_pairs(
    text: str, structure: ToolCallStructure, schema: dict[str, Any] | None
) -> list[tuple[str, Any]]:
    syntax = tag_syntax(structure)
    result: list[tuple[str, Any]] = []
    end = len(text)
    pos = skip_ws(text, 0, end)
    while pos < end:
        found = read_key(text, pos, end, syntax, complete=True)
        assert found is not None  # complete: a missing part raises instead
        key, pos = found
        key_close = syntax.key_close(key)
        value_end = text.find(key_close, cdata_end(text, pos, end))
        if value_end < 0:
            raise ArgumentsError(f"argument {key!r} not closed by {key_close!r}")
        result.append((key, value_of(trimmed(text[pos:value_end], syntax), key, structure, schema)))
        pos = after_value(text, value_end + len(key_close), end, syntax)
    return result
