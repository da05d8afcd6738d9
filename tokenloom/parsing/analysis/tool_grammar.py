"""`tool_call_grammar`: the trigger strings and grammar description of a template's tool-call section.

Built from the analysis and the request's tools with the nodes of `tokenloom.grammar`; the constraint
compiler in `constrain/` turns it into token masks. Knows nothing of how that is done.
"""

from __future__ import annotations

import json
from typing import Any

from tokenloom.grammar import (
    Choice,
    JsonValue,
    Literal,
    Node,
    Repeat,
    Sequence,
    Text,
    ToolCallGrammar,
    Whitespace,
)
from tokenloom.parsing.analysis.value_grammar import python_value, relaxed_value, tag_value
from tokenloom.parsing.arguments import schema_types
from tokenloom.parsing.structures import (
    SLOT_ARGS,
    SLOT_CALL,
    SLOT_ID,
    SLOT_INDEX,
    SLOT_NAME,
    SLOTS,
    ArgumentFormat,
    TemplateAnalysis,
    ToolCallStructure,
)

_DIGITS = Choice(tuple(Literal(d) for d in "0123456789"))


def _functions(tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            params = function.get("parameters")
            found.append((function["name"], params if isinstance(params, dict) else {"type": "object"}))
    return found


def _merge(target: dict[str, Any], path: tuple[str, ...], schema: dict[str, Any]) -> None:
    """Put `schema` at `path` inside the object schema `target` (paths may share a parent)."""
    node = target
    for key in path[:-1]:
        props = node.setdefault("properties", {})
        node = props.setdefault(key, {"type": "object", "properties": {}, "required": []})
    node.setdefault("properties", {})[path[-1]] = schema
    node.setdefault("required", []).append(path[-1])


def call_schema(structure: ToolCallStructure, name: str, params: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema of one JSON call object, e.g. {"name": const, "arguments": params}."""
    if not structure.name_path:
        return {
            "type": "object",
            "properties": {name: params},
            "required": [name],
            "additionalProperties": False,
        }
    schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    # The constraint writes keys in schema order: follow the template's own order and constants (Phi-4-mini
    # writes {"id": ..., "type": "function", "function": {...}}).
    slots = {SLOT_NAME: {"const": name}, SLOT_ARGS: params, SLOT_ID: {"type": "string"}}
    fields = structure.call_fields or (
        (structure.name_path, SLOT_NAME),
        (structure.args_path, SLOT_ARGS),
        *(((structure.id_path, SLOT_ID),) if structure.id_path else ()),
    )
    for path, value in fields:
        _merge(schema, path, slots[value] if value in slots else {"const": json.loads(value)})
    for key in schema["properties"]:
        if key not in schema["required"]:
            schema["required"].append(key)
    return schema


def _next_literal(pattern: tuple[str, ...], index: int, fallback: str) -> str:
    for token in pattern[index + 1 :]:
        if token not in SLOTS and token:
            return token
    return fallback


def _tagged_value(structure: ToolCallStructure, prop: Any, close: str, is_string: bool) -> Node:
    """A tagged value: enums and consts as their literal text, strings as bounded text, the rest as the
    template prints it (JSON, Python's str(), or MiniMax-M3's nested tags)."""
    if isinstance(prop, dict):
        choices = prop.get("enum") if "enum" in prop else [prop["const"]] if "const" in prop else None
        if choices and all(isinstance(c, str) for c in choices):
            return Choice(tuple(Literal(c) for c in choices))
    if is_string:
        limit = prop.get("maxLength") if isinstance(prop, dict) else None
        return Text(stop=(close,), max_length=limit if isinstance(limit, int) else None)
    if structure.python_values:
        return python_value(prop)
    if "{key}" in structure.arg_close and _may_nest(prop):
        ns = structure.arg_close[: structure.arg_close.index("</{key}>")].strip()
        return Choice((tag_value(prop, ns), JsonValue.of(prop if isinstance(prop, dict) else {})))
    return JsonValue.of(prop if isinstance(prop, dict) else {})


def _may_nest(prop: Any) -> bool:
    """Can the value be an object or a list (MiniMax-M3 writes those as nested tags)?"""
    if not isinstance(prop, dict):
        return True
    kind = prop.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
    return not kinds or bool(kinds & {"object", "array"})


def _tagged_args(structure: ToolCallStructure, params: dict[str, Any]) -> Node:
    """Parameters in schema order: required ones always, optional ones or nothing (each key at most once)."""
    props = params.get("properties") or {}
    required = set(params.get("required") or ())
    items: list[Node] = []
    for key, prop in props.items():
        parts: list[Node] = [Literal(structure.arg_prefix + key + structure.arg_suffix)]
        if structure.arg_suffix_tail:
            parts += [
                Text(stop=(structure.arg_suffix_tail,), max_length=16),
                Literal(structure.arg_suffix_tail),
            ]
        close = structure.arg_close.replace("{key}", key)
        parts.append(_tagged_value(structure, prop, close, schema_types(params, key) == {"string"}))
        parts.append(Literal(close + structure.arg_separator))
        entry = Sequence(tuple(parts))
        items.append(entry if key in required else Choice((entry, Sequence(()))))
    return Sequence(tuple(items))


def _relaxed_args(quote: str, params: dict[str, Any]) -> Node:
    """Gemma 4's `{key:<|"|>text<|"|>,n:7,o:{flags:[<|"|>-v<|"|>]}}`, nested values in the same syntax."""
    options: list[Node] = []
    for key, prop in (params.get("properties") or {}).items():
        options.append(Sequence((Literal(f"{key}:"), relaxed_value(prop, quote))))
    body: Node = Repeat(Choice(tuple(options)), 0, len(options), Literal(",")) if options else Sequence(())
    return Sequence((Literal("{"), body, Literal("}")))


def _pythonic_args(params: dict[str, Any]) -> Node:
    """LFM2's `(key="text", n=7)`: JSON strings, numbers and containers are Python literals too."""
    options: list[Node] = []
    for key, prop in (params.get("properties") or {}).items():
        if schema_types(params, key) == {"boolean"}:
            value: Node = Choice((Literal("True"), Literal("False")))
        elif schema_types(params, key) == {"string"}:  # the template prints 'text'; "text" is Python too
            quoted = Sequence((Literal("'"), Text(stop=("'",)), Literal("'")))
            value = Choice((quoted, JsonValue.of(prop if isinstance(prop, dict) else {})))
        else:
            value = JsonValue.of(prop if isinstance(prop, dict) else {})
        options.append(Sequence((Literal(f"{key}="), value)))
    body: Node = Repeat(Choice(tuple(options)), 0, len(options), Literal(", ")) if options else Sequence(())
    return Sequence((Literal("("), body, Literal(")")))


def _call(structure: ToolCallStructure, name: str, params: dict[str, Any]) -> Node:
    items: list[Node] = []
    pattern = structure.call_pattern
    tail = structure.call_separator or structure.tool_section_end
    for i, token in enumerate(pattern):
        if token == SLOT_NAME:
            items.append(Literal(name))
        elif token == SLOT_ID:
            items.append(Text(stop=(_next_literal(pattern, i, tail),), max_length=64))
        elif token == SLOT_INDEX:
            items.append(Repeat(_DIGITS, 1, 4))
        elif token == SLOT_CALL:
            items.append(JsonValue.of(call_schema(structure, name, params)))
        elif token == SLOT_ARGS:
            if structure.argument_format is ArgumentFormat.JSON:
                items.append(JsonValue.of(params))
            elif structure.argument_format is ArgumentFormat.RELAXED_OBJECT:
                items.append(_relaxed_args(structure.string_quote, params))
            elif structure.argument_format is ArgumentFormat.PYTHONIC:
                items.append(_pythonic_args(params))
            else:
                items.append(_tagged_args(structure, params))
        else:
            items.append(Literal(token))
    return Sequence(tuple(items))


def tool_call_grammar(
    analysis: TemplateAnalysis,
    tools: list[dict[str, Any]] | None,
    *,
    parallel: bool | None = None,
    forced: bool = False,
) -> ToolCallGrammar | None:
    """Triggers and grammar of the tool-call section for these tools; None when calls can't be written.

    `parallel`: several calls in one section (the request's parallel_tool_calls); None: what the template
    can render. `forced`: the root starts right after the generation prompt (tool_choice "required" or a
    named function), so it begins with the whitespace the template writes there (muse-glimmer's " to=").
    """
    if parallel is None:
        parallel = analysis.caps.supports_parallel_calls
    structure = analysis.tools
    functions = _functions(tools or [])
    if analysis.caps.is_harmony or not structure.supports_tools or not functions or not structure.triggers:
        return None
    calls = tuple(_call(structure, name, params) for name, params in functions)
    call: Node = calls[0] if len(calls) == 1 else Choice(calls)
    separator: Node = Literal(structure.call_separator) if structure.call_separator.strip() else Whitespace()
    items: list[Node] = []
    if structure.tool_section_start:
        items.append(Literal(structure.tool_section_start.lstrip()))
    items.append(Repeat(call, 1, None if parallel else 1, separator))
    if structure.tool_section_end:
        items.append(Literal(structure.tool_section_end))
    root: Node = items[0] if len(items) == 1 else Sequence(tuple(items))
    if not structure.tool_section_start:
        first = structure.call_pattern[0] if structure.call_pattern else ""
        if first not in SLOTS and first != first.lstrip():
            root = _strip_leading(root)
    if forced and structure.call_lead:
        root = Sequence((Literal(structure.call_lead), root))
    return ToolCallGrammar(triggers=_precise_triggers(analysis, [n for n, _ in functions]), root=root)


def _precise_triggers(analysis: TemplateAnalysis, names: list[str]) -> tuple[str, ...]:
    """The section's triggers, made longer where one also occurs in a reasoning or content marker.

    muse-glimmer writes calls as `to=NAME<|message|>`, but `to=` also begins its `to=self<|message|>`
    reasoning header: a lazy constraint must wait for `to=get_weather`. When even that is a marker
    (a tool named "self"), the literal after the name is added too. Each trigger begins the grammar's root.
    """
    structure, content = analysis.tools, analysis.content
    markers = [
        m.strip()
        for m in (content.reasoning_start, content.reasoning_end, content.content_start, content.content_end)
        if m.strip()
    ]

    def is_marker(text: str) -> bool:
        return any(text in m for m in markers)

    triggers = structure.triggers
    pattern = structure.call_pattern
    if structure.tool_section_start.strip() or not any(is_marker(t) for t in triggers):
        return triggers
    if len(pattern) < 2 or pattern[0] in SLOTS or pattern[1] != SLOT_NAME:
        return triggers  # nothing that tells a call apart: keep the ambiguous trigger
    precise: list[str] = []
    for name in names:
        trigger = pattern[0].lstrip() + name
        if any(m.startswith(trigger) for m in markers) and len(pattern) > 2 and pattern[2] not in SLOTS:
            trigger += pattern[2]
        precise.append(trigger)
    return tuple(dict.fromkeys(precise))


def _strip_leading(node: Node) -> Node:
    """Drop whitespace before the trigger: the root starts at the trigger's first character."""
    if isinstance(node, Literal):
        return Literal(node.text.lstrip())
    if isinstance(node, Sequence) and node.items:
        return Sequence((_strip_leading(node.items[0]), *node.items[1:]))
    if isinstance(node, Repeat):
        return Repeat(_strip_leading(node.item), node.min_count, node.max_count, node.separator)
    if isinstance(node, Choice):
        return Choice(tuple(_strip_leading(o) for o in node.options))
    return node
