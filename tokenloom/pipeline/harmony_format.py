"""`HarmonyFormat`: gpt-oss's harmony prompt and output parser (`tokenloom.harmony`).

Prompt segments keep the format's special tokens apart from message text, so request text can never
become a control token; a response format constrains only the `final` channel, once it opens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokenloom import grammar as g
from tokenloom.engine.vocab import Tokenizer
from tokenloom.errors import InvalidRequest
from tokenloom.events import OutputParser
from tokenloom.harmony import STOP_STRINGS, HarmonyOutputParser, render_chat_request_segments
from tokenloom.harmony.structured import FINAL_TRIGGER
from tokenloom.pipeline.budget import ReasoningMarkers
from tokenloom.pipeline.chat_format import PrefixPolicy, Prompt, tokenize_prompt_text
from tokenloom.pipeline.request import ChatRequest

BUILTIN_TOOLS = ("browser", "python")
ANALYSIS_OPEN = "<|channel|>analysis<|message|>"


@dataclass(slots=True)
class HarmonyFormat:
    """The harmony format; `template` is the GGUF's template text, kept for reporting only."""

    template: str
    template_source: str
    tokenizer: Tokenizer
    accepts_images: bool = False  # gpt-oss reads text only

    def prompt(self, request: ChatRequest, policy: PrefixPolicy) -> Prompt:
        tokens: list[int] = []
        parts: list[str] = []
        for text, is_special in render_chat_request_segments(
            [message.template_dict() for message in request.messages],
            tools=request.tool_dicts() or None,
            reasoning_effort=request.reasoning.effort,
            response_format=_response_format_dict(request),
            builtin_tools=builtin_tools(request),
        ):
            parts.append(text)
            tokens.extend(self.tokenizer.tokenize(text, parse_special=is_special))
        text = "".join(parts)
        return Prompt(text, tokens, text)

    def stops(self) -> tuple[str, ...]:
        return STOP_STRINGS

    def output_parser(self, request: ChatRequest, prompt: Prompt) -> OutputParser:
        return HarmonyOutputParser(tools=request.tool_dicts(), builtin_tools=builtin_tools(request))

    def constraint(self, request: ChatRequest, prompt: Prompt) -> g.Constrained | None:
        """gpt-oss writes its answer in the `final` channel: constrain only that, once it opens."""
        output = request.response_format
        if output is None:
            return None
        spec = output.constraint.spec
        if isinstance(spec, g.JsonSchemaSpec):
            body: g.Node = g.JsonValue(spec.schema_json)
        elif isinstance(spec, g.JsonObjectSpec):
            body = g.JsonValue.of({"type": "object"})
        else:
            raise InvalidRequest(
                "the harmony format constrains its final channel to JSON only (json_schema or json_object)",
                param="response_format",
            )
        root = g.Sequence((g.Literal(FINAL_TRIGGER), body))
        grammar = g.ToolCallGrammar((FINAL_TRIGGER,), root)
        return g.Constrained(g.ToolCallSpec(grammar, lazy=True), output.constraint.source)

    def reasoning_markers(self, request: ChatRequest, prompt: Prompt) -> ReasoningMarkers | None:
        """gpt-oss reasons in the analysis channel; a spent budget closes it and opens the final one."""
        return ReasoningMarkers(ANALYSIS_OPEN, "<|end|><|start|>assistant" + FINAL_TRIGGER, is_open=False)

    def tokenize_text(self, text: str) -> list[int]:
        return tokenize_prompt_text(self.tokenizer, text)

    def capabilities(self) -> frozenset[str]:
        return frozenset({"completion", "tools", "thinking"})  # gpt-oss has both, always


def builtin_tools(request: ChatRequest) -> tuple[str, ...]:
    """gpt-oss's built-in tools a request enables (as llama.cpp: chat_template_kwargs.builtin_tools)."""
    wanted = request.template_kwargs.get("builtin_tools") or ()
    if not isinstance(wanted, list | tuple) or any(name not in BUILTIN_TOOLS for name in wanted):
        raise InvalidRequest(
            f"builtin_tools must be a list drawn from {list(BUILTIN_TOOLS)}",
            param="chat_template_kwargs.builtin_tools",
        )
    return tuple(wanted)


def _response_format_dict(request: ChatRequest) -> dict[str, Any] | None:
    """The response format as the harmony renderer reads it (OpenAI's shape)."""
    output = request.response_format
    if output is None:
        return None
    spec = output.constraint.spec
    if isinstance(spec, g.JsonSchemaSpec):
        inner: dict[str, Any] = {"name": output.name, "schema": spec.schema}
        if output.description is not None:
            inner["description"] = output.description
        return {"type": "json_schema", "json_schema": inner}
    if isinstance(spec, g.JsonObjectSpec):
        return {"type": "json_object"}
    return None
