"""OpenAI chat requests -> harmony prompt text (system, developer, history, `<|start|>assistant`).

Maps OpenAI-shaped dicts (as the server validated them) onto the message layer; knows nothing of HTTP.
History rule: an assistant's reasoning is kept only for tool-call messages of a turn that has no final
answer yet (as the gpt-oss template does); stored replies are re-rendered, so `<|return|>` becomes `<|end|>`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any, TypedDict, Unpack

from tokenloom.errors import InvalidRequest
from tokenloom.harmony.builtin import builtin_namespaces, is_builtin_recipient
from tokenloom.harmony.messages import (
    CONSTRAIN,
    DEFAULT_IDENTITY,
    DeveloperContent,
    HarmonyMessage,
    ReasoningEffort,
    ResponseFormat,
    SystemContent,
    ToolDescription,
    ToolNamespace,
)
from tokenloom.harmony.render import render_completion, render_conversation
from tokenloom.harmony.segments import Segment, completion_segments

_EFFORTS = ("low", "medium", "high")


class ChatOptions(TypedDict, total=False):
    """The keyword options of `chat_to_harmony` (see `render_chat_request`)."""

    tools: Sequence[Mapping[str, Any]] | None
    reasoning_effort: str | None
    response_format: Mapping[str, Any] | None
    builtin_tools: Sequence[str]
    model_identity: str | None
    knowledge_cutoff: str | None
    current_date: str | None


def render_chat_request(
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = True,
    **options: Unpack[ChatOptions],
) -> str:
    """The harmony prompt for an OpenAI chat request, ending with `<|start|>assistant`.

    `current_date` "today" writes today's date as the gpt-oss template does; None leaves the line out.
    """
    return render_harmony_messages(
        chat_to_harmony(messages, **options), add_generation_prompt=add_generation_prompt
    )


def render_chat_request_segments(
    messages: Sequence[Mapping[str, Any]], **options: Unpack[ChatOptions]
) -> list[Segment]:
    """`render_chat_request` as (text, is_special) segments: tokenize each with parse_special=is_special."""
    return completion_segments(chat_to_harmony(messages, **options), "assistant", auto_drop_analysis=False)


def render_harmony_messages(messages: Sequence[HarmonyMessage], *, add_generation_prompt: bool = True) -> str:
    """Render already-filtered history (the OpenAI layer applies its own per-turn analysis rule)."""
    if add_generation_prompt:
        return render_completion(messages, "assistant", auto_drop_analysis=False)
    return render_conversation(messages, auto_drop_analysis=False)


def chat_to_harmony(
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    reasoning_effort: str | None = None,
    response_format: Mapping[str, Any] | None = None,
    builtin_tools: Sequence[str] = (),
    model_identity: str | None = None,
    knowledge_cutoff: str | None = "2024-06",
    current_date: str | None = "today",
) -> list[HarmonyMessage]:
    """The harmony messages of a request: system, developer (if any), then the conversation.

    Harmony has one developer message, so the texts of all system/developer messages join (blank line
    between) as its instructions; the template takes only a leading one and drops the rest.
    """
    if reasoning_effort == "minimal":
        reasoning_effort = "low"  # OpenAI's lowest level; harmony's lowest is `low`
    if reasoning_effort is not None and reasoning_effort not in _EFFORTS:
        raise InvalidRequest("reasoning_effort must be low, medium or high", param="reasoning_effort")
    effort: ReasoningEffort = reasoning_effort or "medium"  # type: ignore[assignment]
    system = SystemContent(
        model_identity=model_identity or DEFAULT_IDENTITY,
        reasoning_effort=effort,
        knowledge_cutoff=knowledge_cutoff,
        conversation_start_date=date.today().isoformat() if current_date == "today" else current_date,
        tools=builtin_namespaces(builtin_tools),
    )
    instructions = [text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
    developer = DeveloperContent(
        instructions="\n\n".join(t for t in instructions if t) or None,
        tools=function_namespace(tools),
        response_formats=response_formats(response_format),
    )
    out = [HarmonyMessage("system", system)]
    if developer.instructions or developer.tools or developer.response_formats:
        out.append(HarmonyMessage("developer", developer))
    out.extend(history_to_harmony(messages, builtin_tools=builtin_tools))
    return out


def function_namespace(tools: Sequence[Mapping[str, Any]] | None) -> tuple[ToolNamespace, ...]:
    """OpenAI function tools as the `functions` namespace; a schema without properties means `() => any`."""
    described: list[ToolDescription] = []
    for i, tool in enumerate(tools or ()):
        fn = tool.get("function")
        if tool.get("type", "function") != "function" or not isinstance(fn, Mapping) or not fn.get("name"):
            raise InvalidRequest("each tool must be a function with a name", param=f"tools[{i}]")
        params = fn.get("parameters")
        schema = dict(params) if isinstance(params, Mapping) else None
        if schema is not None and schema.get("type") == "object" and not schema.get("properties"):
            schema = None  # no arguments: `() => any`, as the docs and the gpt-oss template write it
        described.append(ToolDescription(str(fn["name"]), str(fn.get("description") or ""), schema))
    return (ToolNamespace("functions", None, tuple(described)),) if described else ()


def response_formats(response_format: Mapping[str, Any] | None) -> tuple[ResponseFormat, ...]:
    """`json_schema` response formats become a `# Response Formats` entry; the others need no text."""
    if not response_format or response_format.get("type") != "json_schema":
        return ()
    spec = response_format.get("json_schema")
    schema = spec.get("schema", {}) if isinstance(spec, Mapping) else None
    if isinstance(schema, bool):
        schema = {}  # `true` accepts anything; there is nothing to describe
    if not isinstance(spec, Mapping) or not isinstance(schema, Mapping):
        raise InvalidRequest("json_schema needs a name and a schema object", param="response_format")
    description = spec.get("description")
    return (ResponseFormat(str(spec.get("name") or "response"), dict(schema), description),)


def history_to_harmony(
    messages: Sequence[Mapping[str, Any]], *, builtin_tools: Sequence[str] = ()
) -> list[HarmonyMessage]:
    """User, assistant and tool messages; system/developer messages went into the developer message."""
    out: list[HarmonyMessage] = []
    call_names: dict[str, str] = {}  # tool_call_id -> recipient
    last_call = ""
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "user":
            out.append(HarmonyMessage("user", text_of(message.get("content"))))
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            reasoning = (
                message.get("reasoning_content") or message.get("reasoning") or message.get("thinking")
            )
            if reasoning and calls and not _has_later_answer(messages, i):
                out.append(HarmonyMessage("assistant", str(reasoning), channel="analysis"))
            content = text_of(message.get("content"))
            if calls:
                if content:  # content next to tool calls is a preamble
                    out.append(HarmonyMessage("assistant", content, channel="commentary"))
                for call in calls:
                    recipient, arguments = _call_parts(call, builtin_tools, f"messages[{i}].tool_calls")
                    call_names[str(call.get("id", ""))] = last_call = recipient
                    out.append(_call_message(recipient, arguments))
            else:
                out.append(HarmonyMessage("assistant", content, channel="final"))
        elif role == "tool":
            name = call_names.get(str(message.get("tool_call_id", ""))) or last_call
            if not name and message.get("name"):
                name = f"functions.{message['name']}"
            if not name:
                raise InvalidRequest("a tool message needs an earlier tool call", param=f"messages[{i}]")
            content = text_of(message.get("content"))
            channel = "commentary" if name.startswith("functions.") else "analysis"
            out.append(HarmonyMessage("tool", content, name=name, recipient="assistant", channel=channel))
        elif role not in ("system", "developer"):
            raise InvalidRequest(f"unknown role {role!r}", param=f"messages[{i}].role")
    return out


def _call_message(recipient: str, arguments: str) -> HarmonyMessage:
    """Function calls go to `commentary` as `<|constrain|>json`; built-in calls (the docs) to `analysis`."""
    if recipient.startswith("functions."):
        return HarmonyMessage(
            "assistant", arguments, recipient=recipient, channel="commentary", content_type=CONSTRAIN + "json"
        )
    return HarmonyMessage("assistant", arguments, recipient=recipient, channel="analysis")


def _has_later_answer(messages: Sequence[Mapping[str, Any]], index: int) -> bool:
    """An assistant message without tool calls after `index`: that turn ended, its reasoning is dropped."""
    return any(m.get("role") == "assistant" and not m.get("tool_calls") for m in messages[index + 1 :])


def _call_parts(call: Mapping[str, Any], builtin_tools: Sequence[str], param: str) -> tuple[str, str]:
    """(recipient, arguments JSON text) of an OpenAI tool call; arguments may be a string or an object."""
    fn = call.get("function")
    if not isinstance(fn, Mapping) or not fn.get("name"):
        raise InvalidRequest("a tool call needs a function name", param=param)
    name = str(fn["name"])
    arguments = fn.get("arguments", "{}")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return (name if is_builtin_recipient(name, builtin_tools) else f"functions.{name}"), text


def text_of(content: Any) -> str:
    """OpenAI content (None, a string, or a list of text parts) as one string."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    raise InvalidRequest("content must be a string, null or a list of text parts", param="content")
