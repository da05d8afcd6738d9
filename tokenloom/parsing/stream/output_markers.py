"""What the output parser watches for, derived from a template's analysis: whether the output starts
inside reasoning, the forms of a turn end and of a repeated answer header, a call opener written without its
section opener. Plain functions over the analysis structures; knows nothing of the parser's state.
"""

from __future__ import annotations

import re
from typing import Any

from tokenloom.parsing.markers import TAG_RE
from tokenloom.parsing.structures import SLOTS, ContentStructure, ReasoningMode, ToolCallStructure


def is_forced_open(
    content: ContentStructure, enable_thinking: bool | None, generation_prompt: str | None
) -> bool:
    """Does the output start inside a reasoning block? The rendered generation prompt decides when given."""
    if not content.reasoning_end:
        return False
    if not content.reasoning_start:
        return True  # implicit start, e.g. Apriel's "[BEGIN FINAL RESPONSE]" ends unmarked reasoning
    if generation_prompt is not None:
        return generation_prompt.rstrip().endswith(content.reasoning_start)
    if enable_thinking is True:
        return content.forced_when_enabled
    if enable_thinking is False:
        return content.forced_when_disabled
    return content.reasoning_mode is ReasoningMode.FORCED_OPEN


def tool_schemas(tools: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    if not tools:
        return None
    schemas: dict[str, Any] = {}
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            schemas[function["name"]] = function.get("parameters") or {}
    return schemas


_TAG_OR_WORD = re.compile(r"<[^<>\s]*>|<[^<>\s]*|[^\s<]+")


def call_opener(structure: ToolCallStructure) -> tuple[str, str]:
    """(what the model may leave out, the tag that then starts a call): ("<tool_call>\n", "<function=")
    when a call is written "<tool_call>\n<function=...", ("<|tool_calls_section_begin|>",
    "<|tool_call_begin|>") for Kimi's sections; ("", "") when a call starts with one tag only."""
    pattern = structure.call_pattern
    if not pattern or pattern[0] in SLOTS:
        return "", ""
    section = structure.tool_section_start if structure.tool_section_start.strip() else ""
    literal = section + pattern[0]
    parts = list(_TAG_OR_WORD.finditer(literal))
    if len(parts) < 2 or not parts[0].group().endswith(">"):
        return "", ""
    opener = parts[1].group()
    if opener[0] != "<" or not any(ch.isalpha() for ch in opener):  # a tag, not "[" or "{"
        return "", ""
    return literal[: parts[1].start()], opener


def after_last_tag(text: str) -> str:
    tags = list(TAG_RE.finditer(text))
    return text[tags[-1].end() :] if tags else ""


def header_forms(header: str) -> tuple[str, ...]:
    """An answer header and its ends that start at a tag, longest first: "<|START_OF_TURN_TOKEN|>
    <|CHATBOT_TOKEN|>" and "<|CHATBOT_TOKEN|>"."""
    starts = [m.start() for m in TAG_RE.finditer(header)]
    return tuple(header[at:] for at in starts) if header else ()


def turn_end_forms(turn_end: str) -> tuple[str, ...]:
    """The turn end and its starts that end at a tag, longest first: the model stops at its end-of-turn
    token, so "<|close|>response<|sep|><|close|>message<|sep|>" ends text without "<|end_of_msg|>", and
    "<|eot_id|>" alone ends it where the template writes the next header after it (not "<|close|>", whose
    word follows)."""
    tags = list(TAG_RE.finditer(turn_end))
    ends = [m.end() for i, m in enumerate(tags[:-1]) if i > 0 or tags[1].start() == m.end()]
    forms = [turn_end[:end] for end in ends]  # a first tag counts alone when another tag follows at once
    return (turn_end, *reversed(forms)) if turn_end else ()
