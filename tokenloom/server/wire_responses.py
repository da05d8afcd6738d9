"""OpenAI Responses API wire models (`POST /v1/responses`): tolerant input items, bounded numbers."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tokenloom.server.wire import INT32_MAX, Probability


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class InputText(_Model):
    type: Literal["input_text", "output_text", "text", "summary_text", "reasoning_text"]
    text: str


class InputImage(_Model):
    type: Literal["input_image"]
    image_url: str | None = None  # a data: URI, or an http(s) URL (refused unless allowed)
    file_id: str | None = None  # not served: there is no files API
    detail: str | None = None  # accepted and ignored


MessagePart = Annotated[InputText | InputImage, Field(discriminator="type")]


class MessageItem(_Model):
    """A conversation message; `content` is a string or text and image parts."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[MessagePart]


class FunctionCallItem(_Model):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    id: str | None = None


class FunctionCallOutputItem(_Model):
    type: Literal["function_call_output"]
    call_id: str
    output: str | list[InputText]


class ReasoningItem(_Model):
    type: Literal["reasoning"]
    id: str | None = None
    summary: list[InputText] = Field(default_factory=list)
    content: list[InputText] | None = None


InputItem = Annotated[
    MessageItem | FunctionCallItem | FunctionCallOutputItem | ReasoningItem, Field(union_mode="left_to_right")
]


class FunctionTool(_Model):
    type: Literal["function"]
    name: Annotated[str, Field(min_length=1, max_length=256)]
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class NamedFunction(_Model):
    type: Literal["function"]
    name: str


class TextFormat(_Model):
    type: Literal["text", "json_schema", "json_object"]
    name: str = "response"
    schema_: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class TextOptions(_Model):
    format: TextFormat | None = None


class ReasoningOptions(_Model):
    effort: Literal["minimal", "low", "medium", "high"] | None = None
    summary: str | None = None


class ResponsesRequest(_Model):
    model: str = ""
    input: str | Annotated[list[InputItem], Field(min_length=1, max_length=10_000)]
    instructions: str | None = None
    tools: Annotated[list[FunctionTool], Field(max_length=512)] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedFunction | None = None
    parallel_tool_calls: bool | None = None
    text: TextOptions | None = None
    reasoning: ReasoningOptions | None = None
    max_output_tokens: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=2.0)] | None = None
    top_p: Probability | None = None
    stream: bool = False
    store: bool = True
    previous_response_id: str | None = None
    metadata: dict[str, str] | None = None
    user: str | None = None
    # extensions, as on chat completions
    reasoning_budget: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    top_k: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    seed: Annotated[int, Field(ge=-1, le=2**32 - 1)] | None = None
