"""The harmony message model: authors, channels, recipients, and the system/developer content of §3-4.

Pure data; rendering lives in `render.py`, parsing in `parser.py`. Knows nothing of OpenAI requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# Special tokens of the o200k_harmony vocabulary, written as text.
START = "<|start|>"
END = "<|end|>"
MESSAGE = "<|message|>"
CHANNEL = "<|channel|>"
CONSTRAIN = "<|constrain|>"
RETURN = "<|return|>"  # sampled only: the assistant finished its answer
CALL = "<|call|>"  # sampled only: the assistant's message is a tool call
STOP_MARKERS = (END, RETURN, CALL)

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool")
ReasoningEffort = Literal["low", "medium", "high"]

DEFAULT_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
DEFAULT_CHANNELS = ("analysis", "commentary", "final")


@dataclass(frozen=True, slots=True)
class ToolDescription:
    """One callable tool; `parameters` is a JSON Schema (None: the tool takes no arguments)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolNamespace:
    """A group of tools addressed as `{name}.{tool}` (`functions`, `browser`) or by `{name}` (`python`)."""

    name: str
    description: str | None = None
    tools: tuple[ToolDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """A `# Response Formats` entry of the developer message (docs convention, absent from the reference)."""

    name: str
    schema: dict[str, Any]
    description: str | None = None


@dataclass(frozen=True, slots=True)
class SystemContent:
    """System message fields (HARMONY.md §3); defaults are those of the reference's `SystemContent.new()`."""

    model_identity: str | None = DEFAULT_IDENTITY
    reasoning_effort: ReasoningEffort | None = "medium"
    knowledge_cutoff: str | None = "2024-06"
    conversation_start_date: str | None = None  # e.g. "2025-06-28"
    tools: tuple[ToolNamespace, ...] = ()  # built-in tools: browser, python
    valid_channels: tuple[str, ...] = DEFAULT_CHANNELS
    channel_required: bool = True


@dataclass(frozen=True, slots=True)
class DeveloperContent:
    """Developer message fields (HARMONY.md §4): instructions, function tools, response formats."""

    instructions: str | None = None
    tools: tuple[ToolNamespace, ...] = ()
    response_formats: tuple[ResponseFormat, ...] = ()

    def has_function_tools(self) -> bool:
        return any(ns.name == "functions" and ns.tools for ns in self.tools)


Content = str | SystemContent | DeveloperContent


@dataclass(frozen=True, slots=True)
class HarmonyMessage:
    """One message: author (`role`, optional `name`), header fields, and content.

    A tool result has role "tool" and the tool's name as `name` (e.g. "functions.get_weather").
    """

    role: Role
    content: Content = ""
    name: str | None = None
    recipient: str | None = None  # e.g. "functions.get_weather", "browser.search", "python", "assistant"
    channel: str | None = None  # e.g. "analysis", "commentary", "final"
    content_type: str | None = None  # e.g. "<|constrain|>json", "json", "code"

    @property
    def text(self) -> str:
        """The content as text (system/developer content has none)."""
        return self.content if isinstance(self.content, str) else ""


def assistant(
    content: str,
    *,
    channel: str | None = None,
    recipient: str | None = None,
    content_type: str | None = None,
) -> HarmonyMessage:
    """Shorthand for an assistant message; tests and the OpenAI layer build many."""
    return HarmonyMessage(
        "assistant", content, channel=channel, recipient=recipient, content_type=content_type
    )


def tool_result(name: str, content: str, *, channel: str | None = "commentary") -> HarmonyMessage:
    """A tool's answer in the form the docs recommend (`to=assistant` on `commentary`)."""
    recipient = "assistant" if channel is not None else None
    return HarmonyMessage("tool", content, name=name, recipient=recipient, channel=channel)
