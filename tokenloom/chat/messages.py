"""Normalise OpenAI-shaped chat messages, then adapt them to what one template can express.

Knows nothing of HTTP or Jinja: it reads a `TemplateCaps` and rewrites plain dicts. Errors in the
caller's messages are `InvalidRequest` naming the field, e.g. "messages[2].tool_calls[0].function".
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tokenloom.chat.caps import TemplateCaps
from tokenloom.chat.fallback import TOOLS_PREAMBLE
from tokenloom.errors import InvalidRequest

Message = dict[str, Any]
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def normalize_messages(messages: list[Message]) -> list[Message]:
    """Validated copies: developer -> system, text parts checked, tool-call arguments as objects."""
    if not isinstance(messages, list):
        raise InvalidRequest("messages must be a list", param="messages")
    return [_normalize(message, f"messages[{i}]") for i, message in enumerate(messages)]


def _normalize(message: Any, where: str) -> Message:
    if not isinstance(message, dict):
        raise InvalidRequest(f"{where} must be an object", param=where)
    role = message.get("role")
    if role not in _ROLES:
        raise InvalidRequest(
            f"{where}.role must be one of {sorted(_ROLES)}, not {role!r}", param=f"{where}.role"
        )
    out = {key: value for key, value in message.items() if value is not None or key == "content"}
    out["role"] = "system" if role == "developer" else role
    out["content"] = _normalize_content(message.get("content"), f"{where}.content")
    if "reasoning_content" not in out and isinstance(message.get("reasoning"), str):
        out["reasoning_content"] = out.pop("reasoning")
    if message.get("tool_calls"):
        if role != "assistant":
            raise InvalidRequest(f"{where}.tool_calls is only allowed on assistant messages", param=where)
        out["tool_calls"] = [
            _normalize_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(message["tool_calls"])
        ]
    else:
        out.pop("tool_calls", None)
    return out


def _normalize_content(content: Any, where: str) -> str | list[dict[str, str]] | None:
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidRequest(f"{where} must be a string, null or a list of text parts", param=where)
    parts = []
    for k, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise InvalidRequest(f"{where}[{k}] must be a text part", param=f"{where}[{k}]")
        parts.append({"type": "text", "text": part["text"]})
    return parts


def _normalize_call(call: Any, where: str) -> Message:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise InvalidRequest(f"{where}.function.name is required", param=f"{where}.function")
    arguments = function.get("arguments")
    if arguments is None or arguments == "":
        arguments = {}
    elif isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            param = f"{where}.function.arguments"
            raise InvalidRequest(f"{param} is not valid JSON: {exc}", param=param) from exc
    out = {"type": "function", "function": {"name": function["name"], "arguments": arguments}}
    if call.get("id") is not None:
        out["id"] = str(call["id"])
    return out


def adapt_messages(
    messages: list[Message], caps: TemplateCaps, tools: list[dict[str, Any]] | None = None
) -> list[Message]:
    """Rewrite what the template cannot express into what it can, as llama-server/vLLM users expect."""
    msgs = _link_tool_results(normalize_messages(messages))
    if tools and not caps.supports_tools:
        msgs = _describe_tools(msgs, tools)
    if not caps.supports_tool_calls:
        msgs = [_calls_as_text(m) for m in msgs]
    elif not caps.supports_parallel_tool_calls:
        msgs = _split_parallel_calls(msgs)
    if not caps.supports_tool_responses:
        msgs = _responses_as_user(msgs)
    if not caps.supports_system_role:
        msgs = _fold_system(msgs)
    if caps.requires_fixed_call_ids:
        msgs = [_shorten_ids(m) for m in msgs]
    msgs = [_shape(m, caps) for m in msgs]
    if caps.requires_alternation:
        msgs = _merge_same_roles(msgs)
    return msgs


def content_text(content: Any) -> str:
    """Content as one string: text parts joined by newlines, null as empty."""
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content)
    return content or ""


def _link_tool_results(msgs: list[Message]) -> list[Message]:
    """Every call gets an id and every result its call's id and tool name (templates print them)."""
    out: list[Message] = []
    pending: list[tuple[str, str]] = []  # (id, name) of calls not yet answered, oldest first
    names: dict[str, str] = {}
    for i, message in enumerate(msgs):
        if message.get("tool_calls"):
            calls = [
                c if "id" in c else {**c, "id": f"call_{i}_{j}"} for j, c in enumerate(message["tool_calls"])
            ]
            message = {**message, "tool_calls": calls}
            pending = [(c["id"], c["function"]["name"]) for c in calls]
            names.update(pending)
        elif message["role"] == "tool":
            message = dict(message)
            if "tool_call_id" not in message and pending:
                message["tool_call_id"] = pending[0][0]
            call_id = message.get("tool_call_id")
            pending = [p for p in pending if p[0] != call_id]
            if "name" not in message and call_id in names:
                message["name"] = names[call_id]
        out.append(message)
    return out


def _describe_tools(msgs: list[Message], tools: list[dict[str, Any]]) -> list[Message]:
    text = TOOLS_PREAMBLE + json.dumps(tools, indent=2, ensure_ascii=False)
    if msgs and msgs[0]["role"] == "system":
        first = {**msgs[0], "content": content_text(msgs[0]["content"]) + "\n\n" + text}
        return [first, *msgs[1:]]
    return [{"role": "system", "content": text}, *msgs]


def _calls_as_text(message: Message) -> Message:
    if not message.get("tool_calls"):
        return message
    calls = [
        {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
        for c in message["tool_calls"]
    ]
    text = json.dumps({"tool_calls": calls}, ensure_ascii=False)
    content = content_text(message["content"])
    out = {k: v for k, v in message.items() if k != "tool_calls"}
    out["content"] = f"{content}\n\n{text}" if content else text
    return out


def _split_parallel_calls(msgs: list[Message]) -> list[Message]:
    """One call per assistant turn, each followed by its result, for templates with one call per turn."""
    out: list[Message] = []
    i = 0
    while i < len(msgs):
        message = msgs[i]
        calls = message.get("tool_calls") or []
        i += 1
        if len(calls) < 2:
            out.append(message)
            continue
        results: list[Message] = []
        while i < len(msgs) and msgs[i]["role"] == "tool":
            results.append(msgs[i])
            i += 1
        for k, call in enumerate(calls):
            out.append({**message, "content": message["content"] if k == 0 else "", "tool_calls": [call]})
            matched = [r for r in results if call.get("id") and r.get("tool_call_id") == call.get("id")]
            if not matched and not any(r.get("tool_call_id") for r in results) and k < len(results):
                matched = [results[k]]
            out.extend(matched)
            results = [r for r in results if r not in matched]
        out.extend(results)
    return out


def _responses_as_user(msgs: list[Message]) -> list[Message]:
    names = {c["id"]: c["function"]["name"] for m in msgs for c in m.get("tool_calls", []) if "id" in c}
    out: list[Message] = []
    for message in msgs:
        if message["role"] != "tool":
            out.append(message)
            continue
        response: dict[str, Any] = {"content": content_text(message["content"])}
        name = message.get("name") or names.get(message.get("tool_call_id", ""))
        if name:
            response = {"tool": name, **response}
        if message.get("tool_call_id"):
            response["tool_call_id"] = message["tool_call_id"]
        out.append({"role": "user", "content": json.dumps({"tool_response": response}, ensure_ascii=False)})
    return out


def _fold_system(msgs: list[Message]) -> list[Message]:
    """System text opens the next user turn (or becomes a user turn when none follows)."""
    out: list[Message] = []
    pending: list[str] = []
    for message in msgs:
        if message["role"] == "system":
            pending.append(content_text(message["content"]))
        elif message["role"] == "user" and pending:
            text = "\n\n".join([*pending, content_text(message["content"])])
            out.append({**message, "content": text})
            pending = []
        else:
            out.append(message)
    if pending:
        out.append({"role": "user", "content": "\n\n".join(pending)})
    return out


def _short_id(call_id: str) -> str:
    if len(call_id) == 9 and call_id.isalnum():
        return call_id
    return hashlib.sha256(call_id.encode()).hexdigest()[:9]


def _shorten_ids(message: Message) -> Message:
    out = dict(message)
    if "tool_call_id" in out:
        out["tool_call_id"] = _short_id(str(out["tool_call_id"]))
    if "tool_calls" in out:
        out["tool_calls"] = [{**c, "id": _short_id(c["id"])} if "id" in c else c for c in out["tool_calls"]]
    return out


def _shape(message: Message, caps: TemplateCaps) -> Message:
    """Content, arguments and reasoning in the form the template renders."""
    out = dict(message)
    content = out["content"]
    if isinstance(content, list) and not (caps.supports_typed_content and out["role"] in ("user", "system")):
        out["content"] = content_text(content)
    elif content is None and not (out.get("tool_calls") and caps.supports_null_content):
        out["content"] = ""
    if "tool_calls" in out and not caps.supports_object_arguments and caps.supports_string_arguments:
        out["tool_calls"] = [_string_arguments(c) for c in out["tool_calls"]]
    field = caps.reasoning_field
    if field and field != "reasoning_content" and "reasoning_content" in out:
        out[field] = out["reasoning_content"]
    return out


def _string_arguments(call: Message) -> Message:
    arguments = json.dumps(call["function"]["arguments"], ensure_ascii=False)
    return {**call, "function": {**call["function"], "arguments": arguments}}


def _merge_same_roles(msgs: list[Message]) -> list[Message]:
    """Consecutive user (or assistant) turns become one, for templates that insist on alternation."""
    out: list[Message] = []
    for message in msgs:
        previous = out[-1] if out else None
        mergeable = message["role"] in ("user", "assistant") and not message.get("tool_calls")
        if previous and mergeable and previous["role"] == message["role"] and not previous.get("tool_calls"):
            text = "\n\n".join(
                t for t in (content_text(previous["content"]), content_text(message["content"])) if t
            )
            out[-1] = {**previous, "content": text}
        else:
            out.append(message)
    return out
