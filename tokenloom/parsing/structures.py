"""What template analysis finds: the content/reasoning structure and the tool-call structure of a template.

Plain frozen data (JSON-able through `to_dict`); built by `analyze.py`, read by the output parser, the grammar
builder and the debugger. Knows nothing of rendering or parsing.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from enum import Enum, StrEnum
from functools import lru_cache
from typing import Any


class ReasoningMode(StrEnum):
    """How reasoning appears in the output."""

    NONE = "none"  # no reasoning markers detected
    OPTIONAL = "optional"  # <think>...</think> may open the output
    FORCED_OPEN = "forced_open"  # the generation prompt opens the block (or the start marker is implicit)


class ContentMode(StrEnum):
    """How the visible answer is wrapped."""

    PLAIN = "plain"
    ALWAYS_WRAPPED = "always_wrapped"  # e.g. <|START_RESPONSE|>...<|END_RESPONSE|> in every answer
    WRAPPED_WITH_REASONING = "wrapped_with_reasoning"  # wrapped only after a reasoning block


class FunctionFormat(StrEnum):
    """How one function call is written (seed 000's names)."""

    JSON_OBJECT = "json_object"  # {"name": "X", "arguments": {...}}
    TAG_WITH_NAME = "tag_with_name"  # <function=X>{...}</function>, <invoke name="X">...</invoke>
    TAG_NAME_ONLY = "tag_name_only"  # <tool_call>X<arg_key>..., the bare name after an opener
    PREFIXED_INDEXED = "prefixed_indexed"  # functions.X:0<|tool_call_argument_begin|>{...}
    NAME_AS_KEY = "name_as_key"  # [{"X": {...arguments...}}]
    BRACKET_TAG = "bracket_tag"  # [TOOL_CALLS]X[CALL_ID]id[ARGS]{...}
    RECIPIENT_BASED = "recipient_based"  # >>>X\n{...}
    MARKDOWN_CODE_BLOCK = "markdown_code_block"  # Action:\n```json\n[{"tool_name": "X", ...}]\n```


class ArgumentFormat(StrEnum):
    """How the arguments of one call are written."""

    JSON = "json"  # {"key": "value"}
    TAGGED = "tagged"  # <parameter=key>value</parameter>, <parameter name="key">value</parameter>
    KEY_VALUE_TAGS = "key_value_tags"  # <arg_key>key</arg_key><arg_value>value</arg_value>
    RELAXED_OBJECT = "relaxed_object"  # {key:<|"|>text<|"|>,n:7}: bare keys, a custom string quote (Gemma 4)
    PYTHONIC = "pythonic"  # NAME(key='text', n=7, o={"a": [1]}): Python call syntax (LFM2)


# Slots inside `ToolCallStructure.call_pattern`; every other item of the pattern is literal text.
SLOT_NAME = "{name}"
SLOT_ID = "{id}"
SLOT_INDEX = "{index}"
SLOT_ARGS = "{args}"
SLOT_CALL = "{call}"  # one whole JSON call object (JSON_OBJECT, NAME_AS_KEY, MARKDOWN_CODE_BLOCK)
SLOTS = (SLOT_NAME, SLOT_ID, SLOT_INDEX, SLOT_ARGS, SLOT_CALL)


_PART_RE = re.compile("<[^<>\\s]*>|<\uff5c[^<>]*\uff5c>|\\[[A-Z_/ ]+\\]|```|[^\\s<\\[`]+|\\S")


@lru_cache(maxsize=1024)
def literal_parts(literal: str) -> tuple[str, ...]:
    """A marker split into tag-like tokens; whitespace may vary between them in model output."""
    return tuple(_PART_RE.findall(literal))


def _trigger_of(marker: str) -> str:
    """The text that starts a section: its first tag when only punctuation follows ("<|START_ACTION|>" of
    "<|START_ACTION|>[", so "<|START_ACTION|>\n[" triggers too), else its first word ("<function=")."""
    parts = literal_parts(marker)
    first = parts[0]
    is_tag = len(first) > 2 and first[0] in "<[" and first[-1] in ">]"
    if is_tag and not any(ch.isalnum() for part in parts[1:] for ch in part):
        return first
    return marker.split()[0]


@dataclass(frozen=True, slots=True)
class ContentStructure:
    """Phase 1: reasoning and content markers."""

    reasoning_mode: ReasoningMode = ReasoningMode.NONE
    reasoning_start: str = ""  # e.g. "<think>", "<|START_THINKING|>", "[THINK]", "" when implicit
    reasoning_end: str = ""  # e.g. "</think>", "<|END_THINKING|>", "[BEGIN FINAL RESPONSE]"
    thinking_toggle: bool = False  # enable_thinking changes the generation prompt
    forced_when_enabled: bool = False  # forced open with enable_thinking=true
    forced_when_disabled: bool = False  # forced open even with enable_thinking=false
    content_mode: ContentMode = ContentMode.PLAIN
    content_start: str = ""  # e.g. "<response>", "<|START_RESPONSE|>"
    content_end: str = ""  # e.g. "</response>", "<|END_RESPONSE|>"
    detection: str = ""  # which method found the reasoning markers (debugging aid)
    # What the template writes after an answer's text, dropped if the model writes it, e.g. "<|im_end|>",
    # "<|eot|>", "<|END_OF_TURN_TOKEN|>", "<|close|>response<|sep|><|close|>message<|sep|>"
    turn_end: str = ""
    # What the generation prompt writes to open an answer (before any reasoning opener), dropped if the
    # output starts with it again, e.g. DeepSeek's Assistant tag after a tool result, "<|im_start|>assistant"
    assistant_header: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallStructure:
    """Phase 2: where tool calls go and how one call and its arguments are written."""

    supports_tools: bool = False
    parallel_calls: bool = False  # the template renders two calls in one turn
    function_format: FunctionFormat = FunctionFormat.JSON_OBJECT
    tool_section_start: str = ""  # e.g. "<|tool_calls_section_begin|>", "[TOOL_CALLS][", "<tool_calls>"
    tool_section_end: str = ""  # e.g. "<|tool_calls_section_end|>", "]", ""
    call_separator: str = ""  # between calls of one section, e.g. ", ", "\n"
    # One call as literal text and slots, e.g. ("<tool_call>\n", "{call}", "\n</tool_call>") or
    # ("<|tool_call_begin|>functions.", "{name}", ":", "{index}", "<|tool_call_argument_begin|>", "{args}",
    #  "<|tool_call_end|>")
    call_pattern: tuple[str, ...] = ()
    # JSON call objects: where the fields are, e.g. ("name",), ("tool_name",), ("function", "name")
    name_path: tuple[str, ...] = ()
    args_path: tuple[str, ...] = ()  # e.g. ("arguments",), ("parameters",)
    id_path: tuple[str, ...] = ()  # e.g. ("id",), ("tool_call_id",); empty when absent
    # JSON call objects: every leaf in the order the template writes it, as a slot or a constant's JSON,
    # e.g. ((("id",), "{id}"), (("type",), '"function"'), (("function", "name"), "{name}"), ...)
    call_fields: tuple[tuple[tuple[str, ...], str], ...] = ()
    argument_format: ArgumentFormat = ArgumentFormat.JSON
    arg_prefix: str = ""  # e.g. "<parameter=", "<arg_key>", '<parameter name="'
    arg_suffix: str = ""  # between key and value, e.g. ">\n", "</arg_key>\n<arg_value>", '" string="'
    arg_suffix_tail: str = ""  # when a typed attribute varies: the fixed end after it, e.g. '">'
    arg_close: str = ""  # e.g. "\n</parameter>", "</arg_value>", "</{key}>" (the closing tag names the key)
    arg_separator: str = ""  # e.g. "\n", ""
    string_quote: str = ""  # RELAXED_OBJECT: the string delimiter, e.g. '<|"|>'
    python_values: bool = False  # tagged values that are not strings print with Python's str(): {'a': True}
    recipient_delimiter: str = ""  # RECIPIENT_BASED: e.g. ">>>", ending the generation prompt too
    content_recipient: str = ""  # RECIPIENT_BASED: the recipient that means "plain content", e.g. "all"
    call_id_template: str = ""  # ids the model writes itself, e.g. "functions.{name}:{index}" (Kimi)
    # Whitespace the template writes between the generation prompt and a turn's first call, e.g. " "
    # (muse-glimmer: "<|start|>assistant" + " to=NAME<|message|>"), "\n" (Apriel 1.5)
    call_lead: str = ""
    # What ends a turn of calls when no section marker does, e.g. "<|eom_id|>", "<|tool_response>"
    stop_markers: tuple[str, ...] = ()
    # What a turn of calls ends with after the last call or section, dropped if the model writes it, e.g.
    # "<|im_end|>", "<|sep|><|close|>message<|sep|><|end_of_msg|>" (Kimi K3, whose section end stops short)
    calls_turn_end: str = ""
    requires_nonnull_content: bool = False  # the template prints None for null content
    string_arguments: bool = False  # the template wants arguments as a JSON string, not an object
    flat_tools: bool = False  # the template reads tools as {name, description, parameters}, no "function"

    @property
    def triggers(self) -> tuple[str, ...]:
        """Text that starts a tool-call section in the output."""
        if not self.supports_tools:
            return ()
        if self.tool_section_start.strip():
            return (_trigger_of(self.tool_section_start),)
        first = self.call_pattern[0] if self.call_pattern else ""
        if first not in SLOTS and first.strip():
            return (_trigger_of(first),)
        if self.name_path:
            return ('{"' + self.name_path[0] + '"',)
        return ()


@dataclass(frozen=True, slots=True)
class TemplateCaps:
    """What the template can express, as far as parsing cares."""

    supports_tools: bool = False
    supports_parallel_calls: bool = False
    supports_reasoning: bool = False
    is_harmony: bool = False  # gpt-oss channel format; tokenloom/harmony parses it


@dataclass(frozen=True, slots=True)
class TemplateAnalysis:
    """Everything the auto-parser knows about one template."""

    content: ContentStructure
    tools: ToolCallStructure
    caps: TemplateCaps
    notes: tuple[str, ...] = field(default=())  # why something was not detected (render errors, ...)

    def to_dict(self) -> dict[str, Any]:
        plain: dict[str, Any] = _plain(asdict(self))
        return plain


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
