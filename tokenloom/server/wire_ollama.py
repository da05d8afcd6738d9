"""Ollama's request bodies (`/api/chat`, `/api/generate`, `/api/show`). Unknown fields are ignored, as
Ollama does; every number that reaches C is bounded."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tokenloom.server.wire import INT32_MAX, UINT32_MAX


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class OllamaFunctionCall(_Wire):
    name: Annotated[str, Field(min_length=1)]
    arguments: dict[str, Any] = Field(default_factory=dict)


class OllamaToolCall(_Wire):
    function: OllamaFunctionCall


class OllamaMessage(_Wire):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    thinking: str | None = None
    images: list[str] | None = None
    tool_calls: list[OllamaToolCall] | None = None
    tool_name: str | None = None


class OllamaFunction(_Wire):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class OllamaTool(_Wire):
    type: Literal["function"] = "function"
    function: OllamaFunction


class Options(_Wire):
    """The runtime options a request may set (`num_ctx` only within the slot's context)."""

    num_predict: Annotated[int, Field(ge=-2, le=INT32_MAX)] | None = None
    temperature: Annotated[float, Field(ge=0.0, le=5.0)] | None = None
    top_k: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    top_p: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    min_p: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    seed: Annotated[int, Field(ge=-1, le=UINT32_MAX)] | None = None
    stop: Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=16)] | None = None
    repeat_penalty: Annotated[float, Field(ge=0.0, le=10.0)] | None = None
    presence_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    frequency_penalty: Annotated[float, Field(ge=-2.0, le=2.0)] | None = None
    num_ctx: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None


Think = bool | Literal["low", "medium", "high"]


class _Common(_Wire):
    model: str = ""
    format: Literal["json"] | dict[str, Any] | None = None
    options: Options | None = None
    stream: bool = True
    keep_alive: str | float | None = None
    think: Think | None = None
    reasoning_budget: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None  # extension, as on /v1


class ChatBody(_Common):
    messages: list[OllamaMessage] = Field(default_factory=list)
    tools: list[OllamaTool] | None = None


class GenerateBody(_Common):
    prompt: str = ""
    system: str | None = None
    suffix: str | None = None
    template: str | None = None
    raw: bool = False
    images: list[str] | None = None
    context: list[int] | None = None


class ShowBody(_Wire):
    model: str = ""
    name: str = ""  # older clients


class EmbedBody(_Wire):
    model: str = ""
    input: str | Annotated[list[str], Field(min_length=1)]
    truncate: bool = True  # Ollama cuts over-long inputs by default
    dimensions: Annotated[int, Field(ge=1)] | None = None
    keep_alive: str | float | None = None
    options: Options | None = None
