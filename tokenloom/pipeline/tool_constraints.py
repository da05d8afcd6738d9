"""Constraint specs of a Jinja-format request: forced or lazy tool-call grammars and response formats.

Tool arguments are closed objects (only the declared keys), so a weak model cannot invent keys until
max_tokens; the grammar itself comes from the template's analysis (`parsing/tool_grammar.py`).
"""

from __future__ import annotations

from typing import Any

from tokenloom import grammar as g
from tokenloom.errors import InvalidRequest
from tokenloom.parsing.structures import TemplateAnalysis
from tokenloom.parsing.tool_grammar import tool_call_grammar
from tokenloom.pipeline.request import ChatRequest


def closed_schema(schema: Any) -> Any:
    """`schema` with `additionalProperties: false` on every object that declares properties but says
    nothing about others (JSON Schema's default would let a model invent keys)."""
    if isinstance(schema, list):
        return [closed_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: value if key in ("enum", "const") else closed_schema(value) for key, value in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _close_calls(node: g.Node) -> g.Node:
    """Close the JSON objects of the grammar's call bodies too (e.g. {"name": ..., "arguments": ...})."""
    if isinstance(node, g.JsonValue):
        return g.JsonValue.of(closed_schema(node.schema))
    if isinstance(node, g.Sequence):
        return g.Sequence(tuple(_close_calls(item) for item in node.items))
    if isinstance(node, g.Choice):
        return g.Choice(tuple(_close_calls(option) for option in node.options))
    if isinstance(node, g.Repeat):
        separator = None if node.separator is None else _close_calls(node.separator)
        return g.Repeat(_close_calls(node.item), node.min_count, node.max_count, separator)
    return node


def tool_grammar(
    analysis: TemplateAnalysis, tools: list[dict[str, Any]], parallel: bool | None, *, forced: bool
) -> g.ToolCallGrammar | None:
    """The template's tool-call section for these tools (OpenAI dicts), each call an object of exactly its
    declared keys."""
    closed = [
        {
            **tool,
            "function": {**tool["function"], "parameters": closed_schema(tool["function"]["parameters"])},
        }
        for tool in tools
    ]
    grammar = tool_call_grammar(analysis, closed, parallel=parallel, forced=forced)
    return None if grammar is None else g.ToolCallGrammar(grammar.triggers, _close_calls(grammar.root))


def jinja_constraint(request: ChatRequest, analysis: TemplateAnalysis) -> g.Constrained | None:
    """What a Jinja-format request's output must follow: a forced call, the response format, or a lazy
    tool grammar that switches on at the template's call trigger; None for free generation."""
    forced = request.forced_tools
    if forced is not None:
        if not request.tools:
            raise InvalidRequest(
                "tool_choice forces a tool call but the request has no tools", param="tool_choice"
            )
        if not forced:
            raise InvalidRequest(
                f"tool_choice names {request.tool_choice.name!r}, which is not among the tools",
                param="tool_choice.function.name",
            )
        names = {tool.name for tool in forced}
        dicts = [d for d in request.tool_dicts() if d["function"]["name"] in names]
        grammar = tool_grammar(analysis, dicts, request.parallel_tool_calls, forced=True)
        if grammar is None:
            raise InvalidRequest(
                "this model's chat template has no tool-call format that could be forced", param="tool_choice"
            )
        return g.Constrained(g.ToolCallSpec(grammar, lazy=False), "tools")
    if request.response_format is not None:
        return request.response_format.constraint
    if request.offered_tools:
        grammar = tool_grammar(analysis, request.tool_dicts(), request.parallel_tool_calls, forced=False)
        if grammar is not None:
            return g.Constrained(g.ToolCallSpec(grammar, lazy=True), "tools")
    return None
