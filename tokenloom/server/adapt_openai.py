"""OpenAI chat/completions wire requests -> the pipeline's `ChatRequest` and the engine's sampling.

Checks what pydantic cannot see alone (a tool result without its call id, malformed arguments in the
client's own history, duplicate tool names, logit_bias ids outside the vocabulary) and names the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tokenloom import grammar as g
from tokenloom.engine.sampling import SamplingParams
from tokenloom.errors import InvalidRequest
from tokenloom.pipeline.media import image_from_url
from tokenloom.pipeline.request import (
    ChatRequest,
    ContentPart,
    Message,
    OutputFormat,
    Reasoning,
    TextPart,
    ToolCallRecord,
    ToolChoice,
    ToolSpec,
)
from tokenloom.server.wire import (
    ChatCompletionRequest,
    ChatMessage,
    ChatOptions,
    ImageUrlPart,
    NamedToolChoice,
    SamplingFields,
    Tool,
)

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def sampling_params(request: SamplingFields, n_vocab: int, max_tokens: int | None) -> SamplingParams:
    """Request fields -> engine sampling; unset fields get llama-server's defaults."""
    bias: list[tuple[int, float]] = []
    for key, value in (request.logit_bias or {}).items():
        token_id = int(key)
        if token_id >= n_vocab:
            raise InvalidRequest(
                f"logit_bias names token {token_id} but the vocabulary has {n_vocab} tokens",
                param=f"logit_bias.{key}",
            )
        bias.append((token_id, value))
    stop = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    seed = request.seed if request.seed is not None and request.seed >= 0 else None
    return SamplingParams(
        temperature=0.8 if request.temperature is None else request.temperature,
        top_k=40 if request.top_k is None else min(request.top_k, n_vocab),
        top_p=0.95 if request.top_p is None else request.top_p,
        min_p=0.05 if request.min_p is None else request.min_p,
        repeat_penalty=1.0 if request.repeat_penalty is None else request.repeat_penalty,
        presence_penalty=request.presence_penalty or 0.0,
        frequency_penalty=request.frequency_penalty or 0.0,
        seed=seed,
        logit_bias=tuple(bias),
        max_tokens=max_tokens,
        stop=stop,
        ignore_eos=request.ignore_eos,
    )


def chat_request(body: ChatCompletionRequest, n_vocab: int) -> ChatRequest:
    """A validated chat-completions body as the pipeline's request."""
    messages = tuple(message_of(m, f"messages[{i}]") for i, m in enumerate(body.messages))
    return request_of(body, messages, tool_specs(body.tools or [], "tools"), n_vocab)


def request_of(
    body: ChatOptions, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...], n_vocab: int
) -> ChatRequest:
    """Chat options (sampling, tool choice, response format, reasoning) around a conversation."""
    return ChatRequest(
        messages=messages,
        sampling=sampling_params(body, n_vocab, body.max_completion_tokens or body.max_tokens),
        tools=tools,
        tool_choice=tool_choice(body.tool_choice),
        parallel_tool_calls=body.parallel_tool_calls,
        response_format=output_format(body),
        reasoning=Reasoning(
            enabled=_thinking_switch(body.chat_template_kwargs),
            effort=body.reasoning_effort,
            budget_tokens=body.reasoning_budget,
            keep_in_content=body.reasoning_format == "none",
        ),
        template_kwargs={k: v for k, v in (body.chat_template_kwargs or {}).items() if k != "chat_template"},
        continue_final_message=body.continues(),
    )


def message_of(message: ChatMessage, where: str) -> Message:
    """One wire message; tool results need their call id, assistant turns need content or calls."""
    if message.role == "tool" and not message.tool_call_id:
        raise InvalidRequest(f"{where}: a tool message needs tool_call_id", param=f"{where}.tool_call_id")
    if message.role == "assistant" and message.content is None and not message.tool_calls:
        raise InvalidRequest(
            f"{where}: an assistant message needs content or tool_calls", param=f"{where}.content"
        )
    calls: list[ToolCallRecord] = []
    for j, call in enumerate(message.tool_calls or []):
        arguments = call.function.arguments
        try:
            json.loads(arguments)
        except ValueError as exc:
            param = f"{where}.tool_calls[{j}].function.arguments"
            raise InvalidRequest(f"{param}: not valid JSON ({exc})", param=param) from exc
        calls.append(ToolCallRecord(call.function.name, arguments, call.id))
    content: str | tuple[ContentPart, ...] | None
    if isinstance(message.content, list):
        content = tuple(
            image_from_url(part.image_url.url, f"{where}.content[{j}]")
            if isinstance(part, ImageUrlPart)
            else TextPart(part.text)
            for j, part in enumerate(message.content)
        )
    else:
        content = message.content
    return Message(
        role=message.role,
        content=content,
        name=message.name,
        tool_calls=tuple(calls),
        tool_call_id=message.tool_call_id,
        reasoning_content=message.reasoning_content,
    )


def tool_specs(tools: list[Tool], where: str) -> tuple[ToolSpec, ...]:
    """OpenAI function tools, each name valid and used once (the template never sees a bad set)."""
    specs = [
        ToolSpec(
            tool.function.name, tool.function.parameters, tool.function.description, tool.function.strict
        )
        for tool in tools
    ]
    return checked_tools(specs, lambda i: f"{where}[{i}].function.name")


def checked_tools(tools: list[ToolSpec], name_field: Callable[[int], str]) -> tuple[ToolSpec, ...]:
    """Tools whose names match OpenAI's rule and are used once; `name_field(i)` names a bad one."""
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        param = name_field(i)
        if not TOOL_NAME.match(tool.name):
            raise InvalidRequest(f"{param}: tool names match ^[a-zA-Z0-9_-]{{1,64}}$", param=param)
        if tool.name in seen:
            raise InvalidRequest(f"{param}: the tool name {tool.name!r} is used twice", param=param)
        seen.add(tool.name)
    return tuple(tools)


def tool_choice(choice: str | NamedToolChoice | None) -> ToolChoice:
    if isinstance(choice, NamedToolChoice):
        return ToolChoice("required", choice.function.name)
    if choice == "none":
        return ToolChoice("none")
    if choice == "required":
        return ToolChoice("required")
    return ToolChoice("auto")


def output_format(body: ChatOptions) -> OutputFormat | None:
    """`response_format` as a typed constraint spec (text: none)."""
    response_format = body.response_format
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_object":
        return OutputFormat(g.Constrained(g.JsonObjectSpec(), "response_format"))
    if response_format.type == "regex":
        assert response_format.regex is not None  # the wire model requires it for this type
        return OutputFormat(g.Constrained(g.RegexSpec(response_format.regex), "response_format.regex"))
    schema = response_format.json_schema
    assert schema is not None  # the wire model requires it for this type
    spec = g.JsonSchemaSpec.of(schema.schema_, strict=bool(schema.strict))
    return OutputFormat(
        g.Constrained(spec, "response_format.json_schema.schema"), schema.name, schema.description
    )


def _thinking_switch(kwargs: dict[str, Any] | None) -> bool | None:
    """`enable_thinking` (or `thinking`) in chat_template_kwargs, when it is a boolean."""
    value = (kwargs or {}).get("enable_thinking", (kwargs or {}).get("thinking"))
    return value if isinstance(value, bool) else None
