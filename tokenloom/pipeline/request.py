"""The one internal chat request every API's adapter produces, and the parts it is made of.

Field paths in errors raised from here on use chat-completions names (`messages[2].content`,
`tools[0].function.parameters`, `tool_choice`, `response_format...`); each API's adapter renames them
to the fields its client wrote. Nothing here knows a wire shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tokenloom.engine.sampling import SamplingParams
from tokenloom.grammar import Constrained

Role = Literal["system", "developer", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class TextPart:
    """A text part of a message's content (OpenAI's `{"type": "text", "text": ...}`)."""

    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image in a message's content: its bytes (a `data:` URI, base64) or a remote URL not fetched yet."""

    data: bytes = b""
    media_type: str | None = None  # as the client declared it ("image/png"); None when it declared none
    url: str = ""  # an http(s) URL (fetched only with --allow-remote-media)
    field: str = ""  # the client's own field path, e.g. "messages[0].content[1]": errors name it as is
    prepared: Any = None  # the engine's media.ImageTokens, once the pipeline has tokenized the image


ContentPart = TextPart | ImagePart
ImageText = Callable[[ImagePart], str]  # the text an image stands as in the rendered prompt


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """A tool call already in the conversation; `arguments` is JSON text."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message; `content` is a string, a list of parts, or None (an assistant's calls)."""

    role: Role
    content: str | tuple[ContentPart, ...] | None = None
    name: str | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_call_id: str | None = None
    reasoning_content: str | None = None

    def text(self) -> str:
        """The content as one string (parts joined)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content if isinstance(part, TextPart))

    def images(self) -> tuple[ImagePart, ...]:
        if not isinstance(self.content, tuple):
            return ()
        return tuple(part for part in self.content if isinstance(part, ImagePart))

    def template_dict(self, image_text: ImageText | None = None) -> dict[str, Any]:
        """The OpenAI-shaped dict chat templates read (unset fields left out, as HF's tooling does); an
        image is a text part holding `image_text(part)`, the marker the prompt's tokenizer replaces."""
        out: dict[str, Any] = {"role": self.role}
        if isinstance(self.content, tuple):
            out["content"] = [
                {
                    "type": "text",
                    "text": part.text if isinstance(part, TextPart) else _image_text(part, image_text),
                }
                for part in self.content
            ]
        elif self.content is not None:
            out["content"] = self.content
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [_call_dict(call) for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.reasoning_content is not None:
            out["reasoning_content"] = self.reasoning_content
        return out


def _call_dict(call: ToolCallRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "function": {"name": call.name, "arguments": call.arguments}}
    if call.id is not None:
        out = {"id": call.id, **out}
    return out


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function the model may call; `parameters` is its JSON Schema (an object schema)."""

    name: str
    parameters: dict[str, Any]
    description: str | None = None
    strict: bool | None = None

    def openai_dict(self) -> dict[str, Any]:
        """The `{"type": "function", "function": {...}}` form templates and grammars read."""
        function: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            function["description"] = self.description
        function["parameters"] = self.parameters
        if self.strict is not None:
            function["strict"] = self.strict
        return {"type": "function", "function": function}


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """What the request allows: `auto` (may call), `none` (tools hidden), `required` (must call; `name`
    set when one function is named)."""

    mode: Literal["auto", "none", "required"] = "auto"
    name: str | None = None


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Reasoning controls, mapped by each chat format onto what its template accepts."""

    enabled: bool | None = None  # None: the template's default
    effort: str | None = None  # e.g. "low", "medium", "high" (gpt-oss levels, `reasoning_effort`)
    budget_tokens: int | None = None  # at most this many reasoning tokens before the end marker is forced
    keep_in_content: bool = False  # reasoning_format "none": reasoning stays verbatim in the content


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """A response format: what the output must follow, and the name/description some formats show the
    model (harmony's `# Response Formats`)."""

    constraint: Constrained
    name: str = "response"
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat request, whatever API it came in through; tools converted and tool_choice resolved once."""

    messages: tuple[Message, ...]
    sampling: SamplingParams
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    parallel_tool_calls: bool | None = None
    response_format: OutputFormat | None = None  # json_schema / json_object / regex
    reasoning: Reasoning = field(default_factory=Reasoning)
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    continue_final_message: bool | None = None  # None: continue when the last message is the assistant's
    _offered_dicts: tuple[dict[str, Any], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # converted once: the template, the output parser and the tool grammar all read these dicts
        object.__setattr__(self, "_offered_dicts", tuple(tool.openai_dict() for tool in self.offered_tools))

    @property
    def offered_tools(self) -> tuple[ToolSpec, ...]:
        """The tools the template shows the model (none when tool_choice is "none")."""
        return () if self.tool_choice.mode == "none" else self.tools

    @property
    def forced_tools(self) -> tuple[ToolSpec, ...] | None:
        """The tools one of which must be called, or None when no call is forced."""
        if self.tool_choice.mode != "required":
            return None
        if self.tool_choice.name is None:
            return self.tools
        return tuple(tool for tool in self.tools if tool.name == self.tool_choice.name)

    def tool_dicts(self) -> list[dict[str, Any]]:
        """The offered tools in OpenAI's dict form (converted once, when the request was made)."""
        return list(self._offered_dicts)

    @property
    def continues_assistant(self) -> bool:
        """Whether the model continues the final (assistant) message instead of starting a new one."""
        last_is_assistant = bool(self.messages) and self.messages[-1].role == "assistant"
        if self.continue_final_message is None:
            return last_is_assistant and not self.messages[-1].tool_calls
        return self.continue_final_message and last_is_assistant


def _image_text(part: ImagePart, image_text: ImageText | None) -> str:
    if image_text is None:
        raise AssertionError(f"{part.field}: an image reached a prompt with no place for it")
    return image_text(part)
