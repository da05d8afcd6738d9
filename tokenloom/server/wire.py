"""OpenAI wire models: tolerant where clients differ (arguments as string or object, null content), exact
and range-checked everywhere a value reaches C. Internal names never appear here."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class TextPart(_Model):
    type: Literal["text"]
    text: str


class ImageUrl(_Model):
    url: str  # a data: URI (data:image/png;base64,...) or an http(s) URL (refused unless allowed)
    detail: str | None = None  # accepted and ignored: the projector decides the resolution


class ImageUrlPart(_Model):
    type: Literal["image_url"]
    image_url: ImageUrl


ContentPart = Annotated[TextPart | ImageUrlPart, Field(discriminator="type")]


class FunctionCall(_Model):
    name: str
    arguments: str = "{}"

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments_as_text(cls, value: Any) -> Any:
        """Clients send arguments as a JSON string (OpenAI) or, non-compliantly, as an object."""
        if value is None:
            return "{}"
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        return value


class ToolCallIn(_Model):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Model):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    reasoning_content: str | None = None

    @model_validator(mode="after")
    def _content_required(self) -> ChatMessage:
        if self.content is None and self.role in ("user", "system", "developer"):
            raise ValueError(f"a {self.role} message needs content")
        return self

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content if isinstance(part, TextPart))


class FunctionDef(_Model):
    name: Annotated[str, Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_.\-]+$")]
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None


class Tool(_Model):
    type: Literal["function"]
    function: FunctionDef


class NamedFunction(_Model):
    name: str


class NamedToolChoice(_Model):
    type: Literal["function"]
    function: NamedFunction


class JsonSchemaFormat(_Model):
    name: str = "response"
    schema_: dict[str, Any] | bool = Field(default_factory=dict, alias="schema")
    strict: bool | None = None
    description: str | None = None


class ResponseFormat(_Model):
    type: Literal["text", "json_object", "json_schema", "regex"]
    json_schema: JsonSchemaFormat | None = None
    regex: str | None = None

    @model_validator(mode="after")
    def _needs_body(self) -> ResponseFormat:
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError("type json_schema needs a json_schema object")
        if self.type == "regex" and not self.regex:
            raise ValueError("type regex needs a regex string")
        return self


class StreamOptions(_Model):
    include_usage: bool = False


Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class SamplingFields(_Model):
    """The sampling fields chat and completions share; every number is bounded before it reaches C."""

    model: str = ""
    max_tokens: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=5.0)] | None = None
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    top_k: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    min_p: Probability | None = None
    presence_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    frequency_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    repeat_penalty: Annotated[float, Field(ge=0.0, le=10.0)] | None = None
    seed: Annotated[int, Field(ge=-1, le=UINT32_MAX)] | None = None
    stop: str | Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=16)] | None = None
    logit_bias: dict[str, Annotated[float, Field(ge=-100.0, le=100.0)]] | None = None
    n: Annotated[int, Field(ge=1, le=1)] = 1
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    ignore_eos: bool = False  # llama-server's extension: generate max_tokens whatever the model says

    @field_validator("stop")
    @classmethod
    def _stop_not_empty(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, str) and not value:
            raise ValueError("a stop string may not be empty")
        return value

    @field_validator("logit_bias")
    @classmethod
    def _bias_keys_are_token_ids(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        for key in value or {}:
            if not key.isdigit() or int(key) > INT32_MAX:
                raise ValueError(f"logit_bias keys are token ids; got {key[:20]!r}")
        return value


class ChatOptions(SamplingFields):
    """Every chat-completions field but the conversation and its tools (AG-UI forwards these)."""

    max_completion_tokens: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    chat_template: str | None = None  # refused unless the operator allows request templates
    logprobs: bool | None = None
    top_logprobs: int | None = None
    # extensions (llama-server, vLLM): reasoning controls and continuing a final assistant message
    reasoning_format: Literal["auto", "none", "deepseek"] | None = None
    reasoning_budget: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    continue_final_message: bool | None = None
    add_generation_prompt: bool | None = None

    @model_validator(mode="after")
    def _no_logprobs(self) -> ChatOptions:
        if self.logprobs:
            raise ValueError("logprobs are not supported by this server")
        if self.continue_final_message and self.add_generation_prompt:
            raise ValueError("continue_final_message and add_generation_prompt cannot both be true")
        return self

    def continues(self) -> bool | None:
        """Whether to continue the last assistant message: explicit, implied by add_generation_prompt
        false, or None (continue when the conversation ends with the assistant's text)."""
        if self.continue_final_message is not None:
            return self.continue_final_message
        if self.add_generation_prompt is not None:
            return not self.add_generation_prompt
        return None


class ChatCompletionRequest(ChatOptions):
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=10_000)]
    tools: Annotated[list[Tool], Field(max_length=512)] | None = None


class CompletionRequest(SamplingFields):
    prompt: str | Annotated[list[Annotated[int, Field(ge=0, le=INT32_MAX)]], Field(min_length=1)] | list[str]
    echo: bool = False
    suffix: str | None = None
    logprobs: int | None = None

    @field_validator("prompt")
    @classmethod
    def _one_prompt(cls, value: Any) -> Any:
        if isinstance(value, list) and value and isinstance(value[0], str):
            if len(value) != 1:
                raise ValueError("only one prompt per request is supported")
            return value[0]
        return value

    @model_validator(mode="after")
    def _unsupported(self) -> CompletionRequest:
        if self.logprobs:
            raise ValueError("logprobs are not supported by this server")
        if self.echo or self.suffix:
            raise ValueError("echo and suffix are not supported by this server")
        return self
