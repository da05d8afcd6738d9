"""Adapt normalised messages to what one template can express, as llama-server/vLLM users expect.

Reads a `TemplateCaps`; rewrites what the template lacks (system role, tools, tool calls, tool
results, parallel calls, typed content, id formats, alternation) into forms it renders.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tokenloom.chat.caps import TemplateCaps
from tokenloom.chat.fallback import TOOLS_PREAMBLE
from tokenloom.chat.messages import Message, content_text, normalize_messages


def adapt_messages(
    messages: list[Message], caps: TemplateCaps, tools: list[dict[str, Any]] | None = None
) -> list[Message]:
    """Rewrite what the template cannot express into what it can, as llama-server/vLLM users expect."""
    msgs = normalize_messages(messages)
    if tools and not caps.supports_tools:
        msgs = _describe_tools(msgs, tools)
    if not caps.supports_tool_calls:
        msgs = [_calls_as_text(m) for m in msgs]
    elif not caps.supports_parallel_tool_calls:
        msgs = _split_parallel_calls(msgs)
    if not caps.supports_tool_responses:
        msgs = _responses_as_user(msgs)
    if not caps.supports_late_system:
        msgs = _fold_system(msgs, keep_leading=caps.supports_system_role)
    if caps.requires_fixed_call_ids:
        msgs = [_shorten_ids(m) for m in msgs]
    msgs = [_shape(m, caps) for m in msgs]
    if caps.requires_alternation:
        msgs = _merge_same_roles(msgs)
    return msgs


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


def _fold_system(msgs: list[Message], *, keep_leading: bool) -> list[Message]:
    """System text the template cannot place opens the next user turn (or becomes one).

    With `keep_leading`, the system messages before the first turn stay, merged into one.
    """
    out: list[Message] = []
    pending: list[str] = []
    for message in msgs:
        if message["role"] != "system":
            if message["role"] == "user" and pending:
                message = {**message, "content": "\n\n".join([*pending, content_text(message["content"])])}
                pending = []
            out.append(message)
        elif keep_leading and all(m["role"] == "system" for m in out):
            if out:
                merged = f"{content_text(out[0]['content'])}\n\n{content_text(message['content'])}"
                message = {"role": "system", "content": merged}
            out = [message]
        else:
            pending.append(content_text(message["content"]))
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
