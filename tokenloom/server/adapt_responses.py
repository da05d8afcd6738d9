"""Responses API requests -> the pipeline's `ChatRequest`, and its finished output -> the conversation a
later `previous_response_id` continues.

Input items map onto messages: `function_call` items join the assistant message before them (or start
one), `function_call_output` items are tool results, a `reasoning` item is the reasoning of the assistant
message after it. `instructions` are a leading system message of this request only, as OpenAI does.
"""

from __future__ import annotations

import json
from typing import Any

from tokenloom import grammar as g
from tokenloom.errors import InvalidRequest
from tokenloom.events import ParsedMessage
from tokenloom.pipeline.media import MediaError, image_from_url
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
from tokenloom.server.adapt_openai import checked_tools, sampling_params
from tokenloom.server.wire import SamplingFields
from tokenloom.server.wire_responses import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputImage,
    InputText,
    MessageItem,
    NamedFunction,
    ResponsesRequest,
)


def chat_request(body: ResponsesRequest, history: tuple[Message, ...], n_vocab: int) -> ChatRequest:
    """The request as the pipeline's, after the stored conversation `history` (may be empty)."""
    messages = list(history) + input_messages(body)
    if body.instructions:
        messages.insert(0, Message("system", body.instructions))
    fields = SamplingFields(
        max_tokens=body.max_output_tokens,
        temperature=body.temperature,
        top_p=body.top_p,
        top_k=body.top_k,
        seed=body.seed,
    )
    tools = checked_tools(
        [
            ToolSpec(t.name, t.parameters or {"type": "object", "properties": {}}, t.description, t.strict)
            for t in body.tools or []
        ],
        lambda i: f"tools[{i}].name",
    )
    effort = body.reasoning.effort if body.reasoning else None
    return ChatRequest(
        messages=tuple(messages),
        sampling=sampling_params(fields, n_vocab, body.max_output_tokens),
        tools=tools,
        tool_choice=_tool_choice(body.tool_choice),
        parallel_tool_calls=body.parallel_tool_calls,
        response_format=_output_format(body),
        reasoning=Reasoning(effort=effort, budget_tokens=body.reasoning_budget),
        continue_final_message=False,
    )


def input_messages(body: ResponsesRequest) -> list[Message]:
    """The request's own input items as messages."""
    if isinstance(body.input, str):
        return [Message("user", body.input)]
    messages: list[Message] = []
    reasoning: str | None = None
    for index, item in enumerate(body.input):
        if isinstance(item, MessageItem):
            content = _content(item.content, f"input[{index}]")
            messages.append(Message(item.role, content, reasoning_content=_take(reasoning, item.role)))
            reasoning = None if item.role == "assistant" else reasoning
        elif isinstance(item, FunctionCallItem):
            _check_arguments(item.arguments, f"input[{index}].arguments")
            call = ToolCallRecord(item.name, item.arguments, item.call_id)
            last = messages[-1] if messages else None
            if (
                last is not None
                and last.role == "assistant"
                and (last.tool_calls or last.content in (None, ""))
            ):
                messages[-1] = Message(
                    "assistant",
                    last.content,
                    tool_calls=(*last.tool_calls, call),
                    reasoning_content=last.reasoning_content,
                )
            else:
                messages.append(Message("assistant", None, tool_calls=(call,), reasoning_content=reasoning))
                reasoning = None
        elif isinstance(item, FunctionCallOutputItem):
            output = item.output if isinstance(item.output, str) else _text(item.output)
            messages.append(Message("tool", output, tool_call_id=item.call_id))
        else:
            parts = item.content or item.summary
            reasoning = "".join(part.text for part in parts) or None
    return messages


def output_message(message: ParsedMessage) -> Message:
    """A finished response's output as the assistant message a follow-up request sees in its history."""
    calls = tuple(ToolCallRecord(call.name, call.arguments, call.id) for call in message.tool_calls)
    return Message(
        "assistant",
        message.content or ("" if not calls else None),
        tool_calls=calls,
        reasoning_content=message.reasoning_content,
    )


def rename(param: str) -> str:
    """Chat-completions paths -> Responses fields (`messages` is the `input`)."""
    if param == "messages" or param.startswith("messages["):
        return "input"
    if param.startswith("tools[") and ".function." in param:
        return param.replace(".function.", ".", 1)
    if param.startswith("response_format"):
        return "text.format"
    if param == "tool_choice.function.name":
        return "tool_choice.name"
    return param


def _take(reasoning: str | None, role: str) -> str | None:
    return reasoning if role == "assistant" else None


def _text(content: str | list[InputText]) -> str:
    return content if isinstance(content, str) else "".join(part.text for part in content)


def _content(content: str | list[InputText | InputImage], where: str) -> str | tuple[ContentPart, ...]:
    """A message's content: one string, or text and image parts when it holds an image."""
    if isinstance(content, str):
        return content
    if not any(isinstance(part, InputImage) for part in content):
        return "".join(part.text for part in content if isinstance(part, InputText))
    parts: list[ContentPart] = []
    for j, part in enumerate(content):
        field = f"{where}.content[{j}]"
        if isinstance(part, InputText):
            parts.append(TextPart(part.text))
        elif part.image_url is not None:
            parts.append(image_from_url(part.image_url, field))
        else:
            raise MediaError(f"{field}: an input_image needs image_url (there is no files API)", param=field)
    return tuple(parts)


def _check_arguments(arguments: str, param: str) -> None:
    try:
        json.loads(arguments)
    except ValueError as exc:
        raise InvalidRequest(f"{param}: not valid JSON ({exc})", param=param) from exc


def _tool_choice(choice: str | NamedFunction | None) -> ToolChoice:
    if isinstance(choice, NamedFunction):
        return ToolChoice("required", choice.name)
    if choice == "none":
        return ToolChoice("none")
    if choice == "required":
        return ToolChoice("required")
    return ToolChoice("auto")


def _output_format(body: ResponsesRequest) -> OutputFormat | None:
    text_format = body.text.format if body.text else None
    if text_format is None or text_format.type == "text":
        return None
    if text_format.type == "json_object":
        return OutputFormat(g.Constrained(g.JsonObjectSpec(), "response_format"))
    schema: Any = text_format.schema_
    if schema is None:
        raise InvalidRequest(
            "text.format.schema: a json_schema format needs a schema", param="text.format.schema"
        )
    spec = g.JsonSchemaSpec.of(schema, strict=bool(text_format.strict))
    return OutputFormat(g.Constrained(spec, "text.format.schema"), text_format.name, text_format.description)
