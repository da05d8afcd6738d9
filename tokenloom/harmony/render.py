"""Render harmony messages and conversations to prompt text (HARMONY.md §2-4, §6).

Byte-for-byte the reference renderer's text form. Special tokens are written as their text; the engine's
tokenizer must map them to the special ids (a text-level renderer cannot tell them from user text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tokenloom.errors import InvalidRequest
from tokenloom.harmony.messages import (
    CALL,
    CHANNEL,
    END,
    MESSAGE,
    RETURN,
    START,
    DeveloperContent,
    HarmonyMessage,
    SystemContent,
)
from tokenloom.harmony.typescript import render_tools_section

FUNCTIONS_RULE = "Calls to these tools must go to the commentary channel: 'functions'."


def render_message(message: HarmonyMessage, *, conversation_has_function_tools: bool = False) -> str:
    """`<|start|>{header}<|message|>{content}{terminator}` for one message."""
    return (
        START
        + render_header(message)
        + MESSAGE
        + render_content(message, conversation_has_function_tools)
        + terminator_of(message)
    )


def terminator_of(message: HarmonyMessage) -> str:
    """`<|call|>` for an assistant message with a recipient, else `<|end|>`."""
    return CALL if message.role == "assistant" and message.recipient is not None else END


def render_header(message: HarmonyMessage) -> str:
    """Author, then ` to=` recipient (never `all`), `<|channel|>` channel, and ` ` content type."""
    header = render_author(message)
    if message.channel is not None:
        header += CHANNEL + message.channel
    if message.content_type is not None:
        header += " " + message.content_type
    return header


def render_author(message: HarmonyMessage) -> str:
    """The header's start: `role`, `role:name`, or a tool's name, then ` to={recipient}` if any."""
    if message.role == "tool":
        if not message.name:
            raise InvalidRequest("harmony: a tool message needs the tool's name", param="name")
        author = message.name
    else:
        author = f"{message.role}:{message.name}" if message.name else message.role
    if message.recipient is not None and message.recipient != "all":
        author += f" to={message.recipient}"
    return author


def function_tools_in(messages: Sequence[HarmonyMessage]) -> bool:
    """Whether some developer message declares function tools (decides the system message's rule)."""
    return any(isinstance(m.content, DeveloperContent) and m.content.has_function_tools() for m in messages)


def render_conversation(messages: Sequence[HarmonyMessage], *, auto_drop_analysis: bool = True) -> str:
    """The messages in order, leaving out chain of thought once the turn ended with `final`."""
    has_functions = function_tools_in(messages)
    kept = drop_finished_analysis(messages) if auto_drop_analysis else messages
    return "".join(render_message(m, conversation_has_function_tools=has_functions) for m in kept)


def render_completion(
    messages: Sequence[HarmonyMessage], next_role: str = "assistant", *, auto_drop_analysis: bool = True
) -> str:
    """The conversation followed by `<|start|>{next_role}`: the prompt to sample the next message."""
    return render_conversation(messages, auto_drop_analysis=auto_drop_analysis) + START + next_role


def render_training(messages: Sequence[HarmonyMessage], *, auto_drop_analysis: bool = True) -> str:
    """As a conversation, but a closing `final` assistant message ends with `<|return|>`."""
    text = render_conversation(messages, auto_drop_analysis=auto_drop_analysis)
    if messages and messages[-1].role == "assistant" and messages[-1].channel == "final":
        text = text.removesuffix(END) + RETURN
    return text


def drop_finished_analysis(messages: Sequence[HarmonyMessage]) -> Sequence[HarmonyMessage]:
    """Reference rule: if the last assistant message is `final`, drop `analysis` before the first `final`."""
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    if last is None or last.channel != "final":
        return messages
    first_final = next(i for i, m in enumerate(messages) if m.channel == "final")
    return [m for i, m in enumerate(messages) if i >= first_final or m.channel != "analysis"]


def render_content(message: HarmonyMessage, has_functions: bool) -> str:
    """The content as text: system and developer content rendered, anything else verbatim."""
    content = message.content
    if isinstance(content, SystemContent):
        if message.role != "system":
            raise InvalidRequest("harmony: system content in a non-system message", param="content")
        return render_system_content(content, conversation_has_function_tools=has_functions)
    if isinstance(content, DeveloperContent):
        if message.role != "developer":
            raise InvalidRequest("harmony: developer content in a non-developer message", param="content")
        return render_developer_content(content)
    return content


def render_system_content(content: SystemContent, *, conversation_has_function_tools: bool = False) -> str:
    """Identity and dates, reasoning, built-in tools, channels: each section left out when empty."""
    head = [
        line
        for line in (
            content.model_identity,
            f"Knowledge cutoff: {content.knowledge_cutoff}" if content.knowledge_cutoff else None,
            f"Current date: {content.conversation_start_date}" if content.conversation_start_date else None,
        )
        if line
    ]
    sections = ["\n".join(head)]
    if content.reasoning_effort:
        sections.append(f"Reasoning: {content.reasoning_effort}")
    if content.tools:
        sections.append(render_tools_section(content.tools))
    if content.valid_channels:
        channels = f"# Valid channels: {', '.join(content.valid_channels)}."
        if content.channel_required:
            channels += " Channel must be included for every message."
        if conversation_has_function_tools:
            channels += "\n" + FUNCTIONS_RULE
        sections.append(channels)
    return "\n\n".join(s for s in sections if s)


def render_developer_content(content: DeveloperContent) -> str:
    """`# Instructions`, then the tools, then `# Response Formats` (the docs' convention)."""
    sections: list[str] = []
    if content.instructions:
        sections.append(f"# Instructions\n\n{content.instructions}")
    if content.tools:
        sections.append(render_tools_section(content.tools))
    if content.response_formats:
        parts = ["# Response Formats"]
        for fmt in content.response_formats:
            comment = f"// {fmt.description}\n" if fmt.description else ""
            schema = json.dumps(fmt.schema, separators=(",", ":"), ensure_ascii=False)
            parts.append(f"## {fmt.name}\n\n{comment}{schema}")
        sections.append("\n\n".join(parts))
    return "\n\n".join(sections)
