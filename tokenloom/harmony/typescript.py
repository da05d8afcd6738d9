"""JSON Schema -> the TypeScript-like tool definitions of harmony (HARMONY.md §5).

Matches the reference renderer byte for byte for every construct it supports, quirks included (nested
object descriptions printed twice, 4-space nesting, 3-space oneOf variants). Where the reference gives up
and writes `any` (anyOf, an enum without a type, `type: "null"`), we render something the model can use:
anyOf like oneOf, a bare enum as a union of literals, `null`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tokenloom.harmony.messages import ToolDescription, ToolNamespace

_NEST = "    "  # indent added for a nested object's properties
_VARIANT = "   "  # indent added for the body of a oneOf variant


def render_tools_section(namespaces: Iterable[ToolNamespace]) -> str:
    """`# Tools` plus one block per namespace, sorted by name as the reference's sorted map does."""
    blocks = [render_namespace(ns) for ns in sorted(namespaces, key=lambda ns: ns.name)]
    return "# Tools\n\n" + "\n\n".join(blocks)


def render_namespace(ns: ToolNamespace) -> str:
    """One namespace block; description lines are comments only when the namespace has tools."""
    lines = [f"## {ns.name}\n"]
    for line in split_lines(ns.description or ""):
        lines.append(f"// {line}" if ns.tools else line)
    if ns.tools:
        lines.append(f"namespace {ns.name} {{\n")
        for tool in ns.tools:
            lines.extend(f"// {line}" for line in split_lines(tool.description))
            lines.append(f"type {tool.name} = {render_signature(tool)};\n")
        lines.append(f"}} // namespace {ns.name}")
    return "\n".join(lines)


def render_signature(tool: ToolDescription) -> str:
    """`() => any` for a tool without parameters, else `(_: {TYPE}) => any`."""
    if tool.parameters is None:
        return "() => any"
    return f"(_: {render_type(inline_refs(tool.parameters), '')}) => any"


def inline_refs(schema: dict[str, Any], *, max_depth: int = 8) -> dict[str, Any]:
    """Replace local `$ref`s (`#/$defs/X`, `#/definitions/X`) and one-item `allOf`s by their schema.

    Pydantic writes nested models this way; the reference renders them as `any`. A ref deeper than
    `max_depth` (a recursive model) stays unresolved and renders as `any`.
    """
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}

    def resolve(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [resolve(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        node = {k: v for k, v in node.items() if k not in ("$defs", "definitions")}
        ref = node.get("$ref")
        all_of = node.get("allOf")
        if ref is None and isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            node = {**all_of[0], **{k: v for k, v in node.items() if k != "allOf"}}
            ref = node.get("$ref")
        if isinstance(ref, str) and depth < max_depth:
            target = (
                defs.get(ref.rsplit("/", 1)[-1]) if ref.startswith(("#/$defs/", "#/definitions/")) else None
            )
            if isinstance(target, dict):
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**target, **siblings}, depth + 1)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: resolve(prop, depth) for name, prop in value.items()}
            else:
                out[key] = resolve(value, depth) if key in _SUBSCHEMA_KEYS else value
        return out

    resolved: dict[str, Any] = resolve(schema, 0)
    return resolved


_SUBSCHEMA_KEYS = frozenset({"items", "oneOf", "anyOf", "allOf", "additionalProperties"})


def render_type(schema: dict[str, Any], indent: str) -> str:
    """The type text of `schema`; `indent` prefixes the lines of an object's body."""
    variants = _variants_of(schema)
    if variants is not None and "type" not in schema:
        return _render_variants(variants, indent, None, printed_desc=False)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join("number" if k == "integer" else str(k) for k in kind)
    if kind == "object":
        return _render_object(schema, indent)
    if kind == "string":
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return " | ".join(f'"{value}"' for value in enum)
        return "string"
    if kind in ("number", "integer"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "array":
        items = schema.get("items")
        return render_type(items, indent) + "[]" if isinstance(items, dict) else "Array<any>"
    enum = schema.get("enum")
    if kind is None and isinstance(enum, list) and enum:
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in enum)
    return "any"


def _render_object(schema: dict[str, Any], indent: str) -> str:
    out = f"{indent}// {schema['description']}\n" if schema.get("description") else ""
    out += "{\n"
    properties = schema.get("properties")
    required = schema.get("required") or ()
    if isinstance(properties, dict):
        for name, prop in properties.items():
            if isinstance(prop, dict):
                out += _render_property(name, prop, name in required, indent)
    return out + f"{indent}}}"


def _render_property(name: str, prop: dict[str, Any], is_required: bool, indent: str) -> str:
    mark = "" if is_required else "?"
    desc = prop.get("description")
    variants = _variants_of(prop)
    if variants is not None:
        first_desc = variants[0].get("description") if variants else None
        printed = bool(desc) and desc != first_desc
        out = f"{indent}// {desc}\n" if printed else ""
        if "default" in prop:
            out += f"{indent}// default: {format_default(prop)}\n"
        body = _render_variants(variants, indent, desc if printed else None, printed_desc=printed)
        return out + f"{indent}{name}{mark}:{body}\n{indent},\n"
    out = ""
    if prop.get("title"):
        out += f"{indent}// {prop['title']}\n{indent}//\n"
    if desc:
        out += f"{indent}// {desc}\n"
    examples = prop.get("examples")
    if isinstance(examples, list) and examples:
        out += f"{indent}// Examples:\n"
        out += "".join(f'{indent}// - "{ex}"\n' for ex in examples if isinstance(ex, str))
    out += f"{indent}{name}{mark}: {_with_null(render_type(prop, indent + _NEST), prop)},"
    if "default" in prop:
        out += f" // default: {format_default(prop)}"
    return out + "\n"


def _render_variants(
    variants: list[dict[str, Any]], indent: str, prop_desc: str | None, *, printed_desc: bool
) -> str:
    out = ""
    for i, variant in enumerate(variants):
        notes: list[str] = []
        desc = variant.get("description")
        if desc and not (i == 0 and printed_desc) and desc != prop_desc:
            notes.append(str(desc))
        if "default" in variant:
            notes.append(f"default: {format_default(variant)}")
        comment = f" // {' '.join(notes)}" if notes else ""
        out += f"\n{indent} | {_with_null(render_type(variant, indent + _VARIANT), variant)}{comment}"
    return out


def _variants_of(schema: dict[str, Any]) -> list[dict[str, Any]] | None:
    for key in ("oneOf", "anyOf"):
        variants = schema.get(key)
        if isinstance(variants, list) and variants:
            return [v for v in variants if isinstance(v, dict)]
    return None


def _with_null(text: str, schema: dict[str, Any]) -> str:
    return text + " | null" if schema.get("nullable") and "null" not in text else text


def format_default(schema: dict[str, Any]) -> str:
    """A string default is quoted unless the property is an enum; anything else is compact JSON."""
    value = schema["default"]
    if isinstance(value, str):
        return value if schema.get("enum") else f'"{value}"'
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def split_lines(text: str) -> list[str]:
    """Lines as Rust's `str::lines` gives them: no empty last line for a trailing newline, `\\r` dropped."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]
