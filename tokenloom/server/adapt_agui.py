"""AG-UI's RunAgentInput -> the pipeline's `ChatRequest`, and chat-completions field paths -> AG-UI's.

Errors name AG-UI fields (`messages[2].toolCalls[0].function.name`, `forwardedProps.temperature`),
because that is what the client sent.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ag_ui.core import (
    ActivityMessage,
    AssistantMessage,
    ReasoningMessage,
    RunAgentInput,
    TextPart,
    ToolMessage,
)

from tokenloom.errors import InvalidRequest
from tokenloom.pipeline.request import ChatRequest, Message, ToolCallRecord, ToolSpec
from tokenloom.server.adapt_openai import checked_tools, request_of
from tokenloom.server.errors import validate_body
from tokenloom.server.params import Rename, fields_named
from tokenloom.server.wire import ChatOptions

# Chat options a client may set through forwardedProps (snake_case or camelCase); the conversation, the
# tools and streaming come from the run itself.
_FORWARDED = frozenset(ChatOptions.model_fields) - {"stream", "stream_options", "n"}
_ROLE_TAG = re.compile(r"^(messages\[\d+\])\.(?:developer|system|assistant|user|tool|activity|reasoning)\b")
_PART_TAG = re.compile(r"(content\[\d+\])\.(?:text|image|audio|video|document)\b")
_CHAT_TO_AGUI = (("tool_calls", "toolCalls"), ("tool_call_id", "toolCallId"))


def parse_run_input(data: Any) -> RunAgentInput:
    """Validates with ag_ui's own model; the role and part tags pydantic puts in a location are dropped."""
    try:
        return validate_body(RunAgentInput, data)
    except InvalidRequest as exc:
        if exc.param is None:
            raise
        param = _PART_TAG.sub(r"\1", _ROLE_TAG.sub(r"\1", exc.param))
        message = param + exc.message[len(exc.param) :] if exc.message.startswith(exc.param) else exc.message
        raise InvalidRequest(message, param=param) from exc


class AguiChat(NamedTuple):
    """A run as the pipeline's request, the model it names, and the renaming of chat paths to its fields."""

    request: ChatRequest
    model: str
    rename: Rename


def chat_request(run: RunAgentInput, n_vocab: int) -> AguiChat:
    """The run as the pipeline's request (forwarded options validated as chat options)."""
    messages, sources = _messages(run)
    if not messages:
        raise InvalidRequest("messages: a run needs at least one conversation message", param="messages")
    forwarded: dict[str, Any] = {}
    forwarded_names: dict[str, str] = {}
    if isinstance(run.forwarded_props, dict):
        for key, value in run.forwarded_props.items():
            name = _snake(key)
            if name in _FORWARDED:
                forwarded[name] = value
                forwarded_names[name] = key

    def rename(param: str) -> str:
        return _agui_param(param, sources, forwarded_names)

    with fields_named(rename):
        options = validate_body(ChatOptions, forwarded)
        tools = checked_tools(
            [ToolSpec(t.name, _parameters(t.parameters), t.description) for t in run.tools or []],
            lambda i: f"tools[{i}].function.name",
        )
        return AguiChat(request_of(options, tuple(messages), tools, n_vocab), options.model, rename)


def _parameters(parameters: Any) -> dict[str, Any]:
    if parameters is None:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise InvalidRequest("tools[].parameters must be a JSON Schema object", param="tools")
    return parameters


def _messages(run: RunAgentInput) -> tuple[list[Message], list[str]]:
    """AG-UI messages -> conversation messages, plus for each one the AG-UI field it came from.

    Context entries join the leading system message (or become one); a reasoning message becomes the
    `reasoning_content` of the assistant message after it; activity messages are UI-only and skipped.
    """
    messages: list[Message] = []
    sources: list[str] = []
    reasoning: str | None = None
    for index, message in enumerate(run.messages):
        where = f"messages[{index}]"
        if isinstance(message, ActivityMessage):
            continue
        if isinstance(message, ReasoningMessage):
            reasoning = message.content
            continue
        content = _text(message.content, where)
        if isinstance(message, ToolMessage):
            if message.error:
                content = f"{content}\nError: {message.error}".lstrip("\n")
            messages.append(Message("tool", content, tool_call_id=message.tool_call_id))
        elif isinstance(message, AssistantMessage):
            calls = tuple(
                ToolCallRecord(call.function.name, call.function.arguments, call.id)
                for call in message.tool_calls or []
            )
            if content is None and not calls:
                content = ""
            messages.append(Message("assistant", content, message.name, calls, reasoning_content=reasoning))
        else:
            if content is None:
                raise InvalidRequest(
                    f"{where}.content: a {message.role} message needs content", param=f"{where}.content"
                )
            messages.append(Message(message.role, content, message.name))
        reasoning = None
        sources.append(where)
    if run.context:
        lines = "\n".join(f"- {entry.description}: {entry.value}" for entry in run.context)
        if messages and messages[0].role in ("system", "developer"):
            first = messages[0]
            messages[0] = Message(first.role, f"{first.text()}\n\nContext:\n{lines}", first.name)
        else:
            messages.insert(0, Message("system", f"Context:\n{lines}"))
            sources.insert(0, "context")
    return messages, sources


def _text(content: str | list[Any] | None, where: str) -> str | None:
    """Message content as text; only text parts are understood by a text model."""
    if content is None or isinstance(content, str):
        return content
    parts: list[str] = []
    for index, part in enumerate(content):
        if not isinstance(part, TextPart):
            param = f"{where}.content[{index}]"
            raise InvalidRequest(f"{param}: only text parts are supported by this server", param=param)
        parts.append(part.text)
    return "".join(parts)


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _agui_param(param: str, sources: list[str], forwarded_names: dict[str, str]) -> str:
    """A chat-request field path -> the AG-UI field it came from."""
    if match := re.match(r"messages\[(\d+)\]", param):
        rest = param[match.end() :]
        for chat_name, agui_name in _CHAT_TO_AGUI:
            rest = rest.replace(chat_name, agui_name)
        position = int(match.group(1))
        return (sources[position] if position < len(sources) else match.group(0)) + rest
    if match := re.match(r"tools\[\d+\]\.function", param):
        return param[: match.end() - len(".function")] + param[match.end() :]
    if param in ("messages", "tools"):
        return param
    top, dot, rest = param.partition(".")
    top, _, index = top.partition("[")
    return f"forwardedProps.{forwarded_names.get(top, top)}" + (f"[{index}" if index else "") + dot + rest
