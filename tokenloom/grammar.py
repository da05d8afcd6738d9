"""A small grammar description: how `parsing/` tells `constrain/` what a tool-call section looks like.

The auto-parser builds one of these from a template's analysis and the request's tools; the constraint
compiler turns it into a character-level parser. Neither side knows the other; this module imports
nothing of ours. Example (a Hermes/Qwen-style section with one tool):

    Sequence((Literal("<tool_call>\\n"),
              JsonValue(schema_json='{"type":"object","properties":{"name":{"const":"get_weather"},...}}'),
              Literal("\\n</tool_call>")))
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Literal:
    """Exactly this text."""

    text: str


@dataclass(frozen=True, slots=True)
class Sequence:
    """Each item in order."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Choice:
    """Exactly one of the options."""

    options: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Repeat:
    """`item` between `min_count` and `max_count` times (None: unbounded), `separator` between items."""

    item: Node
    min_count: int = 0
    max_count: int | None = None
    separator: Node | None = None


@dataclass(frozen=True, slots=True)
class JsonValue:
    """One JSON value valid against a JSON Schema, kept as JSON text so the node stays hashable."""

    schema_json: str = "{}"

    @staticmethod
    def of(schema: dict[str, Any] | bool) -> JsonValue:
        return JsonValue(json.dumps(schema, sort_keys=False, separators=(",", ":")))

    @property
    def schema(self) -> Any:
        return json.loads(self.schema_json)


@dataclass(frozen=True, slots=True)
class Text:
    """Free text that contains none of `stop`; the node ends where the next node (usually a stop) begins.

    Used for tagged string arguments, e.g. the value in `<parameter=city>\\nParis\\n</parameter>` with
    stop=("\\n</parameter>",).
    """

    stop: tuple[str, ...]
    max_length: int | None = None


@dataclass(frozen=True, slots=True)
class Whitespace:
    """Zero to `max_length` whitespace characters (space, tab, newline, carriage return)."""

    max_length: int = 12


Node = Literal | Sequence | Choice | Repeat | JsonValue | Text | Whitespace


@dataclass(frozen=True, slots=True)
class ToolCallGrammar:
    """What constrained decoding needs to force or guide tool calls of one template and tool set.

    `root` matches the whole tool-call section starting at the first character of a trigger (so the
    trigger text is the beginning of `root`). With tool_choice "auto" generation is free until one of
    `triggers` appears (lazy); with "required" or a named function `root` applies from the first token.
    """

    triggers: tuple[str, ...]  # e.g. ("<tool_call>",), ("[TOOL_CALLS]",), ("<|tool_call_begin|>",)
    root: Node


@dataclass(frozen=True, slots=True)
class JsonSchemaSpec:
    """Output is one JSON value valid against a JSON Schema (kept as text so the spec stays hashable).

    `strict` refuses keywords the compiler cannot enforce instead of reporting them as unenforced.
    """

    schema_json: str
    strict: bool = False

    @staticmethod
    def of(schema: dict[str, Any] | bool, *, strict: bool = False) -> JsonSchemaSpec:
        return JsonSchemaSpec(json.dumps(schema, sort_keys=False, separators=(",", ":")), strict)

    @property
    def schema(self) -> Any:
        return json.loads(self.schema_json)


@dataclass(frozen=True, slots=True)
class JsonObjectSpec:
    """Output is any JSON object (OpenAI's `json_object` mode)."""


@dataclass(frozen=True, slots=True)
class RegexSpec:
    """Output matches a regular expression whole."""

    pattern: str


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """Output follows a tool-call grammar: from the first token, or (`lazy`) once a trigger appears."""

    grammar: ToolCallGrammar
    lazy: bool = False


ConstraintSpec = JsonSchemaSpec | JsonObjectSpec | RegexSpec | ToolCallSpec


@dataclass(frozen=True, slots=True)
class Constrained:
    """A spec with the request part it came from, a path such as "response_format.json_schema.schema" or
    "tools": compile errors are named from it (the caller's adapter renames it for its own API)."""

    spec: ConstraintSpec
    source: str
