"""Normalise OpenAI-shaped chat messages into one checked shape the rest of chat/ relies on.

Roles are system/user/assistant/tool, content a string, None or text parts, tool-call arguments
objects, every call has an id and every tool result its call's id and name. Knows nothing of
templates. Errors name the field, e.g. InvalidRequest(param="messages[2].tool_calls[0].function").
"""

from __future__ import annotations

import json
from typing import Any

from tokenloom.errors import InvalidRequest

Message = dict[str, Any]
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def normalize_messages(messages: list[Message]) -> list[Message]:
    """Validated copies: developer -> system, text parts checked, tool-call arguments as objects."""
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages must be a non-empty list", param="messages")
    return _link_tool_results([_normalize(message, f"messages[{i}]") for i, message in enumerate(messages)])


def _normalize(message: Any, where: str) -> Message:
    if not isinstance(message, dict):
        raise InvalidRequest(f"{where} must be an object", param=where)
    role = message.get("role")
    if role not in _ROLES:
        raise InvalidRequest(
            f"{where}.role must be one of {', '.join(sorted(_ROLES))}, not {role!r}", param=f"{where}.role"
        )
    out = {key: value for key, value in message.items() if value is not None or key == "content"}
    out["role"] = {"developer": "system", "function": "tool"}.get(role, role)  # legacy "function" results
    out["content"] = _normalize_content(message.get("content"), f"{where}.content")
    if "reasoning_content" not in out and isinstance(message.get("reasoning"), str):
        out["reasoning_content"] = out.pop("reasoning")
    if message.get("tool_calls"):
        if role != "assistant":
            raise InvalidRequest(f"{where}.tool_calls is only allowed on assistant messages", param=where)
        calls = message["tool_calls"]
        if not isinstance(calls, list):
            raise InvalidRequest(f"{where}.tool_calls must be a list", param=f"{where}.tool_calls")
        out["tool_calls"] = [
            _normalize_call(call, f"{where}.tool_calls[{j}]") for j, call in enumerate(calls)
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
