"""From a chat request's `response_format` and `tool_choice` to the constraint spec a slot decodes under.

Specs compile off the scheduler thread (`constrain.compile`, bounded in time and size); a bad schema,
regex or tool choice becomes a 400 naming the field before anything is queued.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tokenloom import grammar as g
from tokenloom.constrain import compile as compile_constraint
from tokenloom.constrain.constraint import Constraint
from tokenloom.engine.vocab import Vocab
from tokenloom.errors import InvalidRequest
from tokenloom.harmony import final_channel_constraint
from tokenloom.parsing.analyze import analyze
from tokenloom.parsing.tool_grammar import tool_call_grammar
from tokenloom.server.prompting import ChatFormat
from tokenloom.server.wire import ChatCompletionRequest, NamedToolChoice


def _closed(schema: Any) -> Any:
    """Tool arguments take the declared parameters only: objects without `additionalProperties` are closed.

    JSON Schema allows unknown keys by default, which lets a weak model invent keys until max_tokens.
    """
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: _closed(value) if key != "enum" and key != "const" else value for key, value in schema.items()
    }
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _tool_grammar(
    chat_format: ChatFormat, tools: list[dict[str, Any]], parallel: bool | None, forced: bool
) -> g.ToolCallGrammar | None:
    """The template's tool-call section for these tools, each call an object of exactly its declared keys."""
    closed = []
    for tool in tools:
        function = tool["function"]
        closed.append(
            {**tool, "function": {**function, "parameters": _closed(function.get("parameters", {}))}}
        )
    grammar = tool_call_grammar(analyze(chat_format.template), closed, parallel=parallel, forced=forced)
    return None if grammar is None else g.ToolCallGrammar(grammar.triggers, _close_calls(grammar.root))


def _close_calls(node: g.Node) -> g.Node:
    """Close the JSON objects of the grammar's call bodies too (e.g. {"name": ..., "arguments": ...})."""
    if isinstance(node, g.JsonValue):
        return g.JsonValue.of(_closed(node.schema))
    if isinstance(node, g.Sequence):
        return g.Sequence(tuple(_close_calls(item) for item in node.items))
    if isinstance(node, g.Choice):
        return g.Choice(tuple(_close_calls(option) for option in node.options))
    if isinstance(node, g.Repeat):
        separator = None if node.separator is None else _close_calls(node.separator)
        return g.Repeat(_close_calls(node.item), node.min_count, node.max_count, separator)
    return node


def _forced_tools(request: ChatCompletionRequest) -> list[dict[str, Any]] | None:
    """The tools a call must be made to (`required` or a named function), or None when nothing is forced."""
    tools = [t.model_dump(exclude_none=True) for t in request.tools or []]
    choice = request.tool_choice
    if choice == "required" or isinstance(choice, NamedToolChoice):
        if not tools:
            raise InvalidRequest(
                "tool_choice forces a tool call but the request has no tools", param="tool_choice"
            )
        if isinstance(choice, NamedToolChoice):
            tools = [t for t in tools if t["function"]["name"] == choice.function.name]
            if not tools:
                raise InvalidRequest(
                    f"tool_choice names {choice.function.name!r}, which is not among the tools",
                    param="tool_choice.function.name",
                )
        return tools
    return None


def _response_format_spec(request: ChatCompletionRequest) -> dict[str, Any] | None:
    response_format = request.response_format
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_object":
        return {"json_object": True, "param": "response_format"}
    if response_format.type == "regex":
        return {"regex": response_format.regex, "param": "response_format.regex"}
    assert response_format.json_schema is not None  # the wire model requires it for this type
    return {
        "json_schema": response_format.json_schema.schema_,
        "strict": bool(response_format.json_schema.strict),
        "param": "response_format.json_schema.schema",
    }


def _harmony_spec(request: ChatCompletionRequest) -> dict[str, Any] | None:
    """gpt-oss writes its answer in the `final` channel: constrain only that, once it opens."""
    response_format = request.response_format
    if response_format is None:
        return None
    final = final_channel_constraint(response_format.model_dump(exclude_none=True, by_alias=True))
    if final is None:
        return None
    schema: dict[str, Any] = final.schema if final.schema is not None else {"type": "object"}
    root = g.Sequence((g.Literal(final.trigger), g.JsonValue.of(schema)))
    return {"tool_calls": g.ToolCallGrammar((final.trigger,), root), "lazy": True, "param": "response_format"}


def constraint_spec(request: ChatCompletionRequest, chat_format: ChatFormat) -> dict[str, Any] | None:
    """What this request's output must follow, or None for free generation."""
    if chat_format.kind == "harmony":
        return _harmony_spec(request)
    forced = _forced_tools(request)
    if forced is not None:
        grammar = _tool_grammar(chat_format, forced, request.parallel_tool_calls, forced=True)
        if grammar is None:
            raise InvalidRequest(
                "this model's chat template has no tool-call format that could be forced", param="tool_choice"
            )
        return {"tool_calls": grammar, "lazy": False, "param": "tools"}
    spec = _response_format_spec(request)
    if spec is not None:
        return spec
    if request.tools and request.tool_choice in (None, "auto"):
        tools = [t.model_dump(exclude_none=True) for t in request.tools]
        grammar = _tool_grammar(chat_format, tools, request.parallel_tool_calls, forced=False)
        if grammar is not None:
            return {"tool_calls": grammar, "lazy": True, "param": "tools"}
    return None


async def build_constraint(
    request: ChatCompletionRequest, chat_format: ChatFormat, vocab: Vocab
) -> Constraint | None:
    """The compiled constraint of a request (compiled in a worker thread: the event loop stays free)."""
    spec = await asyncio.to_thread(constraint_spec, request, chat_format)
    if spec is None:
        return None
    return await asyncio.to_thread(compile_constraint, spec, vocab)
