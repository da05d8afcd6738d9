"""The AG-UI endpoint: a RunAgentInput becomes a chat request on the same path as /v1/chat/completions, and
its Events stream back as AG-UI events over SSE.

Errors name AG-UI fields (`messages[2].toolCalls[0].function.name`, `forwardedProps.temperature`), because
that is what the client sent.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import (
    ActivityMessage,
    AssistantMessage,
    ReasoningMessage,
    RunAgentInput,
    TextPart,
    ToolMessage,
)
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from tokenloom.engine.jobs import JobHandle
from tokenloom.errors import InvalidRequest, TokenloomError
from tokenloom.events import Event
from tokenloom.server.encode_agui import AguiEncoder
from tokenloom.server.errors import parse_json_body, validate_body
from tokenloom.server.generation import events_of
from tokenloom.server.openai_routes import submit_chat
from tokenloom.server.state import ServerState
from tokenloom.server.wire import ChatCompletionRequest

logger = logging.getLogger(__name__)
router = APIRouter()

# Chat request fields a client may set through forwardedProps (snake_case or camelCase); the conversation,
# the tools and the streaming options come from the run itself.
_FORWARDED = frozenset(ChatCompletionRequest.model_fields) - {
    "messages",
    "tools",
    "stream",
    "stream_options",
    "n",
}
_ROLE_TAG = re.compile(r"^(messages\[\d+\])\.(?:developer|system|assistant|user|tool|activity|reasoning)\b")
_PART_TAG = re.compile(r"(content\[\d+\])\.(?:text|image|audio|video|document)\b")
_CHAT_TO_AGUI = (("tool_calls", "toolCalls"), ("tool_call_id", "toolCallId"))


@router.post("/agui")
@router.post("/v1/agui")
async def run_agent(request: Request) -> Response:
    state: ServerState = request.app.state.tokenloom
    run = parse_run_input(parse_json_body(await request.body()))
    body = chat_request(run)
    state.check_model(body.model)
    started = time.monotonic()
    submitted = await submit_chat(state, body)
    handle = submitted.handle
    _, chat_format = state.ready()
    events = events_of(handle, chat_format.output_parser(body, submitted.prompt_text), state.metrics, started)
    encoder = AguiEncoder(run.thread_id, run.run_id, state.model_id)
    sse = EventEncoder()
    return StreamingResponse(
        _stream_run(encoder, sse, events, handle),
        media_type=sse.get_content_type(),
        headers=submitted.headers(),
    )


async def _stream_run(
    encoder: AguiEncoder, sse: EventEncoder, events: AsyncIterator[Event], handle: JobHandle
) -> AsyncIterator[bytes]:
    try:
        for out in encoder.opening():
            yield sse.encode(out).encode()
        async for event in events:
            for out in encoder.encode(event):
                yield sse.encode(out).encode()
        if not encoder.is_done:
            raise TokenloomError("generation ended without a finish")
    except TokenloomError as exc:
        for out in encoder.error(exc.message, exc.code or exc.type):
            yield sse.encode(out).encode()
    except Exception:  # a bug: log it, and still end the run the way AG-UI clients wait for
        logger.exception("AG-UI run %s failed", encoder.run_id)
        for out in encoder.error("internal server error", "server_error"):
            yield sse.encode(out).encode()
    finally:
        handle.cancel()  # no-op when finished; frees the slot when the client went away mid-stream


def parse_run_input(data: Any) -> RunAgentInput:
    """Validates with ag_ui's own model; the role and part tags pydantic puts in a location are dropped."""
    try:
        return validate_body(RunAgentInput, data)
    except InvalidRequest as exc:
        if exc.param is None:
            raise
        param = _PART_TAG.sub(r"\1", _ROLE_TAG.sub(r"\1", exc.param))
        raise InvalidRequest(_renamed(exc.message, exc.param, param), param=param) from exc


def chat_request(run: RunAgentInput) -> ChatCompletionRequest:
    """RunAgentInput -> the ChatCompletionRequest the OpenAI route would build for the same conversation."""
    messages, sources = _chat_messages(run)
    data: dict[str, Any] = {"messages": messages}
    if run.tools:
        data["tools"] = [_chat_tool(tool.name, tool.description, tool.parameters) for tool in run.tools]
    forwarded_names: dict[str, str] = {}
    if isinstance(run.forwarded_props, dict):
        for key, value in run.forwarded_props.items():
            name = _snake(key)
            if name in _FORWARDED:
                data[name] = value
                forwarded_names[name] = key
    try:
        return validate_body(ChatCompletionRequest, data)
    except InvalidRequest as exc:
        if exc.param is None:
            raise
        param = _agui_param(exc.param, sources, forwarded_names)
        raise InvalidRequest(_renamed(exc.message, exc.param, param), param=param) from exc


def _chat_messages(run: RunAgentInput) -> tuple[list[dict[str, Any]], list[str]]:
    """AG-UI messages -> OpenAI messages, plus for each one the AG-UI field it came from.

    Context entries join the leading system message (or become one); a reasoning message becomes the
    `reasoning_content` of the assistant message after it; activity messages are UI-only and skipped.
    """
    messages: list[dict[str, Any]] = []
    sources: list[str] = []
    reasoning: str | None = None
    for index, message in enumerate(run.messages):
        where = f"messages[{index}]"
        if isinstance(message, ActivityMessage):
            continue
        if isinstance(message, ReasoningMessage):
            reasoning = message.content
            continue
        out: dict[str, Any] = {"role": message.role}
        if isinstance(message, ToolMessage):
            out["content"] = _text(message.content, where)
            if message.error:
                out["content"] = f"{out['content']}\nError: {message.error}".lstrip("\n")
            out["tool_call_id"] = message.tool_call_id
        else:
            out["content"] = _text(message.content, where)
            if message.name:
                out["name"] = message.name
        if isinstance(message, AssistantMessage):
            if message.tool_calls:
                out["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.function.name, "arguments": call.function.arguments},
                    }
                    for call in message.tool_calls
                ]
            if reasoning is not None:
                out["reasoning_content"] = reasoning
        reasoning = None
        messages.append(out)
        sources.append(where)
    if run.context:
        lines = "\n".join(f"- {entry.description}: {entry.value}" for entry in run.context)
        if messages and messages[0]["role"] in ("system", "developer"):
            messages[0]["content"] = f"{messages[0]['content']}\n\nContext:\n{lines}"
        else:
            messages.insert(0, {"role": "system", "content": f"Context:\n{lines}"})
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


def _chat_tool(name: str, description: str, parameters: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": description}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _agui_param(param: str, sources: list[str], forwarded_names: dict[str, str]) -> str:
    """A chat-request field name -> the AG-UI field it came from."""
    if match := re.match(r"messages\[(\d+)\]", param):
        rest = param[match.end() :]
        for chat_name, agui_name in _CHAT_TO_AGUI:
            rest = rest.replace(chat_name, agui_name)
        return sources[int(match.group(1))] + rest
    if match := re.match(r"tools\[\d+\]\.function", param):
        return param[: match.end() - len(".function")] + param[match.end() :]
    if param in ("messages", "tools"):
        return param
    top, dot, rest = param.partition(".")
    top, _, index = top.partition("[")
    return f"forwardedProps.{forwarded_names.get(top, top)}" + (f"[{index}" if index else "") + dot + rest


def _renamed(message: str, old: str, new: str) -> str:
    """validate_body's messages start with the field name; keep them naming the AG-UI field."""
    return new + message[len(old) :] if message.startswith(old) else message
