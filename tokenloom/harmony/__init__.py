"""The harmony format of gpt-oss: message model, renderer, streaming parser, and the OpenAI layer.

Server entry points: `render_chat_request` (request -> prompt text), `HarmonyOutputParser` (output text ->
Events, an `OutputParser`) and `is_harmony_template` (routing).
"""

from __future__ import annotations

from tokenloom.harmony.detect import is_harmony_architecture, is_harmony_template
from tokenloom.harmony.header import HarmonyParseError
from tokenloom.harmony.messages import (
    DeveloperContent,
    HarmonyMessage,
    ResponseFormat,
    SystemContent,
    ToolDescription,
    ToolNamespace,
)
from tokenloom.harmony.output import HarmonyOutputParser
from tokenloom.harmony.parser import HarmonyStreamParser, parse_messages
from tokenloom.harmony.render import (
    render_completion,
    render_conversation,
    render_message,
    render_training,
)
from tokenloom.harmony.request import chat_to_harmony, render_chat_request, render_chat_request_segments
from tokenloom.harmony.segments import Segment, completion_segments
from tokenloom.harmony.structured import FinalChannelConstraint, final_channel_constraint

STOP_STRINGS = ("<|return|>", "<|call|>")  # the engine stops sampling at these ("<|end|>" ends one message)

__all__ = [
    "STOP_STRINGS",
    "DeveloperContent",
    "FinalChannelConstraint",
    "HarmonyMessage",
    "HarmonyOutputParser",
    "HarmonyParseError",
    "HarmonyStreamParser",
    "ResponseFormat",
    "Segment",
    "SystemContent",
    "ToolDescription",
    "ToolNamespace",
    "chat_to_harmony",
    "completion_segments",
    "final_channel_constraint",
    "is_harmony_architecture",
    "is_harmony_template",
    "parse_messages",
    "render_chat_request",
    "render_chat_request_segments",
    "render_completion",
    "render_conversation",
    "render_message",
    "render_training",
]
