"""Anthropic Messages requests -> the pipeline's `ChatRequest`.

`system` becomes a leading system message. A user turn's `tool_result` blocks become tool messages (in
their order, before the turn's text), an assistant turn's `tool_use` blocks its tool calls and its
`thinking` blocks its reasoning, so the template sees the history the model wrote. `thinking` maps onto
the template's reasoning switch and the engine-enforced reasoning budget.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tokenloom import grammar as g
from tokenloom.errors import InvalidRequest
from tokenloom.pipeline.media import MediaError, image_from_base64, image_from_url
from tokenloom.pipeline.request import (
    ChatRequest,
    ContentPart,
    ImagePart,
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
from tokenloom.server.wire_anthropic import (
    AnthropicMessage,
    ImageBlock,
    ImageSource,
    MessagesRequest,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    _Conversation,
)


@dataclass(slots=True)
class Conversation:
    """The messages in chat order, and for each the Anthropic field it came from (for error paths)."""

    messages: list[Message] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)

    def add(self, message: Message, origin: str) -> None:
        self.messages.append(message)
        self.origins.append(origin)

    def rename(self, param: str) -> str:
        """Chat-completions paths -> the Anthropic fields the client wrote."""
        if param.startswith("messages["):
            index = int(param[len("messages[") : param.index("]")])
            return self.origins[index] if index < len(self.origins) else "messages"
        if param.startswith("tools[") and ".function." in param:
            head, _, rest = param.partition(".function.")
            return (
                f"{head}.input_schema{rest[len('parameters') :]}"
                if rest.startswith("parameters")
                else (f"{head}.{rest}")
            )
        if param == "tool_choice.function.name":
            return "tool_choice.name"
        if param == "stop":
            return "stop_sequences"
        if param.startswith("response_format"):
            return "output_config.format.schema"
        return param


def conversation(body: _Conversation) -> Conversation:
    """The request's system prompt and messages as chat messages."""
    out = Conversation()
    if body.system:
        system = body.system if isinstance(body.system, str) else "".join(b.text for b in body.system)
        out.add(Message("system", system), "system")
    for index, message in enumerate(body.messages):
        if message.role == "user":
            _user_turn(out, message, f"messages[{index}]")
        else:
            _assistant_turn(out, message, f"messages[{index}]")
    return out


def _user_turn(out: Conversation, message: AnthropicMessage, path: str) -> None:
    if isinstance(message.content, str):
        out.add(Message("user", message.content), f"{path}.content")
        return
    parts: list[ContentPart] = []
    for j, block in enumerate(message.content):
        where = f"{path}.content[{j}]"
        if isinstance(block, TextBlock):
            parts.append(TextPart(block.text))
        elif isinstance(block, ToolResultBlock):
            out.add(Message("tool", _result_text(block, where), tool_call_id=block.tool_use_id), where)
        elif isinstance(block, ImageBlock):
            parts.append(_image(block.source, where))
        else:
            raise InvalidRequest(f"{where}: a user turn cannot hold a {block.type} block", param=where)
    if any(isinstance(part, ImagePart) for part in parts):
        out.add(Message("user", tuple(parts)), f"{path}.content")
    elif parts:
        out.add(Message("user", "".join(p.text for p in parts if isinstance(p, TextPart))), f"{path}.content")


def _image(source: ImageSource, where: str) -> ImagePart:
    """An image block's source: base64 with its media type, or a URL (refused unless allowed)."""
    if source.type == "base64" and source.data is not None:
        return image_from_base64(source.data, where, media_type=source.media_type)
    if source.type == "url" and source.url is not None:
        return image_from_url(source.url, where)
    raise MediaError(f"{where}: an image source is base64 (with data) or url (with url)", param=where)


def _result_text(block: ToolResultBlock, where: str) -> str:
    if block.content is None:
        text = ""
    elif isinstance(block.content, str):
        text = block.content
    else:
        parts: list[str] = []
        for k, part in enumerate(block.content):
            if isinstance(part, ImageBlock):
                param = f"{where}.content[{k}]"
                raise MediaError(f"{param}: images inside a tool_result are not supported", param=param)
            parts.append(part.text)
        text = "".join(parts)
    return f"Error: {text}" if block.is_error else text


def _assistant_turn(out: Conversation, message: AnthropicMessage, path: str) -> None:
    if isinstance(message.content, str):
        out.add(Message("assistant", message.content), f"{path}.content")
        return
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCallRecord] = []
    for j, block in enumerate(message.content):
        where = f"{path}.content[{j}]"
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ThinkingBlock):
            reasoning.append(block.thinking)
        elif isinstance(block, ToolUseBlock):
            calls.append(ToolCallRecord(block.name, json.dumps(block.input, ensure_ascii=False), block.id))
        elif isinstance(block, RedactedThinkingBlock):
            continue  # opaque to us: nothing a template could show
        else:
            raise InvalidRequest(f"{where}: an assistant turn cannot hold a {block.type} block", param=where)
    content = "".join(texts) if texts or not calls else None
    out.add(
        Message("assistant", content, tool_calls=tuple(calls), reasoning_content="".join(reasoning) or None),
        f"{path}.content",
    )


def tools_of(body: _Conversation) -> tuple[ToolSpec, ...]:
    specs = [ToolSpec(t.name, t.input_schema, t.description) for t in body.tools or []]
    return checked_tools(specs, lambda i: f"tools[{i}].name")


def tool_choice_of(body: _Conversation) -> tuple[ToolChoice, bool | None]:
    """The tool choice, and whether parallel calls are allowed (None: the template's default)."""
    choice = body.tool_choice
    if choice is None:
        return ToolChoice("auto"), None
    parallel = False if choice.disable_parallel_tool_use else None
    if choice.type == "tool":
        if not choice.name:
            raise InvalidRequest("tool_choice.name: a `tool` choice names the tool", param="tool_choice.name")
        if choice.name not in {t.name for t in body.tools or []}:
            raise InvalidRequest(
                f"tool_choice.name: no tool named {choice.name!r} in tools", param="tool_choice.name"
            )
        return ToolChoice("required", choice.name), parallel
    mode = {"auto": "auto", "any": "required", "none": "none"}[choice.type]
    return ToolChoice(mode), parallel  # type: ignore[arg-type]


def reasoning_of(body: _Conversation) -> Reasoning:
    """`thinking` as the template's switch and the engine's budget; `output_config.effort` as the
    effort level templates read (`reasoning_effort`; Anthropic's `xhigh`/`max` become `high`)."""
    effort = body.output_config.effort if body.output_config else None
    if effort in ("xhigh", "max"):
        effort = "high"
    thinking = body.thinking
    if thinking is None:
        return Reasoning(effort=effort)
    if thinking.type == "disabled":
        return Reasoning(enabled=False, effort=effort)
    budget = thinking.budget_tokens if thinking.type == "enabled" else None
    return Reasoning(enabled=True, effort=effort, budget_tokens=budget)


def output_format_of(body: _Conversation) -> OutputFormat | None:
    """`output_config.format` (a JSON Schema the answer must follow), enforced by the constraint engine."""
    wanted = body.output_config.format if body.output_config else None
    if wanted is None:
        return None
    spec = g.JsonSchemaSpec.of(wanted.schema_, strict=True)
    return OutputFormat(g.Constrained(spec, "output_config.format.schema"))


def chat_request(body: MessagesRequest, chat: Conversation, n_vocab: int) -> ChatRequest:
    fields = SamplingFields(
        max_tokens=body.max_tokens,
        temperature=body.temperature,
        top_p=body.top_p,
        top_k=body.top_k,
        stop=body.stop_sequences,
    )
    choice, parallel = tool_choice_of(body)
    return ChatRequest(
        messages=tuple(chat.messages),
        sampling=sampling_params(fields, n_vocab, body.max_tokens),
        tools=tools_of(body),
        tool_choice=choice,
        parallel_tool_calls=parallel,
        response_format=output_format_of(body),
        reasoning=reasoning_of(body),
    )


def count_request(body: _Conversation, chat: Conversation, n_vocab: int) -> ChatRequest:
    """The same conversation as a request to count (never generated)."""
    choice, parallel = tool_choice_of(body)
    return ChatRequest(
        messages=tuple(chat.messages),
        sampling=sampling_params(SamplingFields(), n_vocab, 1),
        tools=tools_of(body),
        tool_choice=choice,
        parallel_tool_calls=parallel,
        reasoning=reasoning_of(body),
    )
