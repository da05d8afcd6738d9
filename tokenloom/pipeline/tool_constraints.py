"""Constraint specs of a Jinja-format request: forced or lazy tool-call grammars and response formats.

Tool arguments are closed objects (only the declared keys), so a weak model cannot invent keys until
max_tokens; the grammar itself comes from the template's analysis (`parsing/analysis/tool_grammar.py`).
"""

from __future__ import annotations

from typing import Any

from tokenloom import grammar as g
from tokenloom.constrain import check_spec
from tokenloom.errors import InvalidRequest
from tokenloom.parsing.analysis.tool_grammar import tool_call_grammar
from tokenloom.parsing.stream.output_parser import is_forced_open
from tokenloom.parsing.structures import ContentStructure, ReasoningMode, TemplateAnalysis
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


def jinja_constraint(
    request: ChatRequest, analysis: TemplateAnalysis, generation_prompt: str, prefill: str = ""
) -> g.Constrained | None:
    """What a Jinja-format request's output must follow: a forced call, the response format, or a lazy
    tool grammar that switches on at the template's call trigger; None for free generation.

    A forced call or a JSON response format starts after the template's reasoning: free reasoning up to
    the end marker when the generation prompt left a block open, an optional reasoning block when the
    model may open one, and the structure at once when reasoning is off (regex formats are not wrapped).
    """
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
        root = after_reasoning(grammar.root, analysis.content, request, generation_prompt, prefill)
        return g.Constrained(g.ToolCallSpec(g.ToolCallGrammar(grammar.triggers, root), lazy=False), "tools")
    if request.response_format is not None:
        return _response_format(request, analysis, generation_prompt, prefill)
    if request.offered_tools:
        grammar = tool_grammar(analysis, request.tool_dicts(), request.parallel_tool_calls, forced=False)
        if grammar is not None:
            return g.Constrained(g.ToolCallSpec(grammar, lazy=True), "tools")
    return None


def _response_format(
    request: ChatRequest, analysis: TemplateAnalysis, generation_prompt: str, prefill: str
) -> g.Constrained:
    """The response format, behind the template's reasoning when it has any."""
    assert request.response_format is not None
    constrained = request.response_format.constraint
    spec = constrained.spec
    if isinstance(spec, g.JsonSchemaSpec):
        body: g.Node = g.JsonValue(spec.schema_json)
    elif isinstance(spec, g.JsonObjectSpec):
        body = g.JsonValue.of({"type": "object"})
    else:
        return constrained
    root = after_reasoning(body, analysis.content, request, generation_prompt, prefill)
    if root is body:
        return constrained
    check_spec(constrained)  # errors and `strict` refusals named at the schema's own paths
    grammar = g.ToolCallGrammar((), g.Sequence((root, g.Whitespace())))
    return g.Constrained(g.ToolCallSpec(grammar, lazy=False), constrained.source)


def after_reasoning(
    body: g.Node, content: ContentStructure, request: ChatRequest, generation_prompt: str, prefill: str = ""
) -> g.Node:
    """`body` preceded by the reasoning the template lets the model write first, if any.

    e.g. Qwen3.5 (prompt ends with "<think>\n"): free text, "</think>", whitespace, body;
    Qwen3 (the model may open "<think>"): that block or nothing, then body. A prefill (a continued
    assistant message) that closed its reasoning leaves only the body; one that opened it, the rest of it.
    """
    start, end = content.reasoning_start, content.reasoning_end
    if not end or (request.reasoning.enabled is False and not content.forced_when_disabled):
        return body
    reasoning = g.Sequence((g.Text((end,)), g.Literal(end), g.Whitespace()))
    is_open = is_forced_open(content, request.reasoning.enabled, generation_prompt)
    if prefill:
        start_at = prefill.rfind(start) if start else -1
        end_at = prefill.rfind(end)
        if end_at >= 0 and end_at > start_at:
            return body
        return g.Sequence((reasoning, body)) if start_at >= 0 or is_open else body
    if is_open:
        return g.Sequence((reasoning, body))
    if content.reasoning_mode is ReasoningMode.OPTIONAL and start:
        return g.Choice((g.Sequence((g.Literal(start), reasoning, body)), body))
    return body
