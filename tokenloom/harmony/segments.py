"""Harmony prompts as segments of special-token text and ordinary text, for faithful tokenization.

A text-level prompt cannot tell the renderer's `<|start|>` from a user who typed `<|start|>` (HARMONY.md
§1). The server tokenizes each segment with `parse_special=is_special`, so user text stays ordinary text;
joined, the segments are exactly the rendered prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenloom.harmony.messages import CHANNEL, CONSTRAIN, MESSAGE, START, HarmonyMessage
from tokenloom.harmony.render import (
    drop_finished_analysis,
    function_tools_in,
    render_author,
    render_content,
    terminator_of,
)

Segment = tuple[str, bool]  # (text, is_special), e.g. ("<|start|>", True), ("user", False)


def message_segments(
    message: HarmonyMessage, *, conversation_has_function_tools: bool = False
) -> list[Segment]:
    """The segments of one message; their texts join to `render_message(message)`."""
    out: list[Segment] = [(START, True), (render_author(message), False)]
    if message.channel is not None:
        out += [(CHANNEL, True), (message.channel, False)]
    content_type = message.content_type
    if content_type is not None and content_type.startswith(CONSTRAIN):
        out += [(" ", False), (CONSTRAIN, True), (content_type[len(CONSTRAIN) :], False)]
    elif content_type is not None:
        out.append((" " + content_type, False))
    out += [
        (MESSAGE, True),
        (render_content(message, conversation_has_function_tools), False),
        (terminator_of(message), True),
    ]
    return out


def completion_segments(
    messages: Sequence[HarmonyMessage], next_role: str = "assistant", *, auto_drop_analysis: bool = True
) -> list[Segment]:
    """The segments of `render_completion(messages, next_role)`, adjacent texts of a kind merged."""
    has_functions = function_tools_in(messages)
    kept = drop_finished_analysis(messages) if auto_drop_analysis else messages
    out: list[Segment] = []
    for message in kept:
        out += message_segments(message, conversation_has_function_tools=has_functions)
    out += [(START, True), (next_role, False)]
    return merge_segments(out)


def merge_segments(segments: Sequence[Segment]) -> list[Segment]:
    """Drop empty texts and join neighbours of the same kind (fewer tokenizer calls)."""
    out: list[Segment] = []
    for text, is_special in segments:
        if not text:
            continue
        if out and out[-1][1] == is_special:
            out[-1] = (out[-1][0] + text, is_special)
        else:
            out.append((text, is_special))
    return out
