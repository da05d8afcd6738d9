"""The Anthropic Messages API's request bodies (`POST /v1/messages`, `/v1/messages/count_tokens`).

Unknown fields are ignored, as new SDK versions add some; every number is bounded before it reaches C.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tokenloom.server.wire import INT32_MAX


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TextBlock(_Wire):
    type: Literal["text"]
    text: str


class ImageSource(_Wire):
    type: str
    media_type: str | None = None
    data: str | None = None
    url: str | None = None


class ImageBlock(_Wire):
    type: Literal["image"]
    source: ImageSource


class ToolUseBlock(_Wire):
    type: Literal["tool_use"]
    id: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1)]
    input: dict[str, Any]


class ToolResultBlock(_Wire):
    type: Literal["tool_result"]
    tool_use_id: Annotated[str, Field(min_length=1)]
    content: str | list[Annotated[TextBlock | ImageBlock, Field(discriminator="type")]] | None = None
    is_error: bool | None = None


class ThinkingBlock(_Wire):
    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(_Wire):
    type: Literal["redacted_thinking"]
    data: str


ContentBlock = Annotated[
    TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock,
    Field(discriminator="type"),
]


class AnthropicMessage(_Wire):
    role: Literal["user", "assistant"]
    content: str | list[ContentBlock]


class AnthropicTool(_Wire):
    name: str
    description: str | None = None
    input_schema: dict[str, Any]


class AnthropicToolChoice(_Wire):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class ThinkingConfig(_Wire):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None


class OutputFormatConfig(_Wire):
    type: Literal["json_schema"]
    schema_: dict[str, Any] | bool = Field(alias="schema")


class OutputConfig(_Wire):
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    format: OutputFormatConfig | None = None


class _Conversation(_Wire):
    """What both endpoints read: the conversation, its tools and its reasoning switch."""

    model: str = ""
    messages: Annotated[list[AnthropicMessage], Field(min_length=1)]
    system: str | list[TextBlock] | None = None
    tools: list[AnthropicTool] | None = None
    tool_choice: AnthropicToolChoice | None = None
    thinking: ThinkingConfig | None = None
    output_config: OutputConfig | None = None


class MessagesRequest(_Conversation):
    max_tokens: Annotated[int, Field(ge=1, le=INT32_MAX)]
    stop_sequences: Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=16)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    top_k: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    metadata: dict[str, Any] | None = None
    stream: bool = False


class CountTokensRequest(_Conversation):
    pass
