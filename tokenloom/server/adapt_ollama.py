"""Ollama requests -> the pipeline's `ChatRequest` (or a raw prompt for `/api/generate` with `raw`).

Ollama's messages carry no call ids: each assistant tool call gets one here, and each `tool` message
answers the oldest call not yet answered, so templates that pair calls with results see matching ids.
`think` maps onto the template's reasoning switch (a level onto its effort), `format` onto the
constraint engine, `options` onto sampling.
"""

from __future__ import annotations

import json
from collections import deque

from tokenloom import grammar as g
from tokenloom.engine.sampling import SamplingParams
from tokenloom.errors import InvalidRequest
from tokenloom.pipeline.media import image_from_base64
from tokenloom.pipeline.request import (
    ChatRequest,
    ContentPart,
    Message,
    OutputFormat,
    Reasoning,
    TextPart,
    ToolCallRecord,
    ToolSpec,
)
from tokenloom.server.adapt_openai import checked_tools, sampling_params
from tokenloom.server.wire import SamplingFields
from tokenloom.server.wire_ollama import ChatBody, GenerateBody, Options, Think, _Common

DEFAULT_NUM_PREDICT = 2048  # Ollama's -1 means "until the context ends"; a slot's context bounds it anyway


def sampling(body: _Common, n_vocab: int, n_ctx_slot: int) -> SamplingParams:
    options = body.options or Options()
    if options.num_ctx is not None and options.num_ctx > n_ctx_slot:
        raise InvalidRequest(
            f"options.num_ctx: this server gives a request at most {n_ctx_slot} tokens of context "
            f"(--ctx-size)",
            param="options.num_ctx",
        )
    limit = options.num_predict if options.num_predict is not None and options.num_predict > 0 else None
    fields = SamplingFields(
        max_tokens=limit or DEFAULT_NUM_PREDICT,
        temperature=options.temperature,
        top_p=options.top_p if options.top_p else None,
        top_k=options.top_k,
        min_p=options.min_p,
        seed=options.seed,
        stop=options.stop,
        repeat_penalty=options.repeat_penalty,
        presence_penalty=options.presence_penalty,
        frequency_penalty=options.frequency_penalty,
    )
    return sampling_params(fields, n_vocab, fields.max_tokens)


def reasoning(think: Think | None, budget: int | None = None) -> Reasoning:
    """`think` as the template's switch (a level as its effort); `reasoning_budget` (an extension, as on
    the OpenAI routes) ends the reasoning after that many tokens."""
    if think is None:
        return Reasoning(budget_tokens=budget)
    if isinstance(think, bool):
        return Reasoning(enabled=think, budget_tokens=budget)
    return Reasoning(enabled=True, effort=think, budget_tokens=budget)


def output_format(body: _Common) -> OutputFormat | None:
    if body.format is None:
        return None
    if body.format == "json":
        return OutputFormat(g.Constrained(g.JsonObjectSpec(), "format"))
    return OutputFormat(g.Constrained(g.JsonSchemaSpec.of(body.format), "format"))


def chat_messages(body: ChatBody) -> tuple[Message, ...]:
    messages: list[Message] = []
    unanswered: deque[str] = deque()
    for index, message in enumerate(body.messages):
        where = f"messages[{index}]"
        if message.images and message.role != "user":
            param = f"{where}.images"
            raise InvalidRequest(f"{param}: only a user message may carry images", param=param)
        if message.role == "assistant":
            calls = []
            for j, call in enumerate(message.tool_calls or []):
                call_id = f"call_{index}_{j}"
                unanswered.append(call_id)
                arguments = json.dumps(call.function.arguments, ensure_ascii=False)
                calls.append(ToolCallRecord(call.function.name, arguments, call_id))
            content = message.content if message.content or not calls else None
            messages.append(
                Message("assistant", content, tool_calls=tuple(calls), reasoning_content=message.thinking)
            )
        elif message.role == "tool":
            call_id = unanswered.popleft() if unanswered else f"call_{index}"
            messages.append(Message("tool", message.content, name=message.tool_name, tool_call_id=call_id))
        else:
            messages.append(Message(message.role, _with_images(message.content, message.images, where)))
    if not messages:
        raise InvalidRequest("messages: at least one message is needed", param="messages")
    return tuple(messages)


def tools_of(body: ChatBody) -> tuple[ToolSpec, ...]:
    specs = [
        ToolSpec(
            t.function.name,
            t.function.parameters or {"type": "object", "properties": {}},
            t.function.description,
        )
        for t in body.tools or []
    ]
    return checked_tools(specs, lambda i: f"tools[{i}].function.name")


def chat_request(body: ChatBody, n_vocab: int, n_ctx_slot: int) -> ChatRequest:
    return ChatRequest(
        messages=chat_messages(body),
        sampling=sampling(body, n_vocab, n_ctx_slot),
        tools=tools_of(body),
        response_format=output_format(body),
        reasoning=reasoning(body.think, body.reasoning_budget),
    )


def generate_request(body: GenerateBody, n_vocab: int, n_ctx_slot: int) -> ChatRequest:
    """`/api/generate` without `raw`: the prompt as one user turn (after `system`) through the template."""
    _refuse_unsupported(body)
    messages = [Message("system", body.system)] if body.system else []
    messages.append(Message("user", _with_images(body.prompt, body.images, "")))
    return ChatRequest(
        messages=tuple(messages),
        sampling=sampling(body, n_vocab, n_ctx_slot),
        response_format=output_format(body),
        reasoning=reasoning(body.think, body.reasoning_budget),
        continue_final_message=False,
    )


def _refuse_unsupported(body: GenerateBody) -> None:
    if body.suffix:
        raise InvalidRequest("suffix: fill-in-the-middle is not supported by this server", param="suffix")
    if body.template:
        raise InvalidRequest(
            "template: a request's own template is not accepted (the model's template is used)",
            param="template",
        )


def raw_prompt(body: GenerateBody) -> str:
    """`raw: true`: the prompt exactly as given, no template."""
    _refuse_unsupported(body)
    if body.images:
        raise InvalidRequest("images: a raw prompt takes no images (send them without raw)", param="images")
    if body.format is not None:
        raise InvalidRequest("format: a raw prompt cannot be constrained here", param="format")
    return body.prompt


def rename(param: str) -> str:
    """Chat-completions paths -> Ollama's fields."""
    if param.startswith("response_format"):
        return "format"
    if param in ("max_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "repeat_penalty"):
        return "options." + {"max_tokens": "num_predict"}.get(param, param)
    return param


def _with_images(text: str, images: list[str] | None, where: str) -> str | tuple[ContentPart, ...]:
    """A user turn's text, after its images (base64, no media type: the bytes say what they are)."""
    if not images:
        return text
    prefix = f"{where}." if where else ""
    parts: list[ContentPart] = [
        image_from_base64(data, f"{prefix}images[{k}]") for k, data in enumerate(images)
    ]
    parts.append(TextPart(text))
    return tuple(parts)
