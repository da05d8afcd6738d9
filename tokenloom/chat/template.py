"""The faithful render: one template, the messages exactly as given, the variables HF passes.

Builds the template context (reserved names, legacy variables, None-vs-undefined inputs) and runs
the compiled template inside the render's bounds. Knows nothing of message adaptation or caps.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import jinja2

from tokenloom.chat.bounds import RenderLimits, bounded
from tokenloom.chat.jinja_env import CompiledTemplate, compile_template
from tokenloom.errors import InvalidRequest, TemplateError

# Variables a request may not set through chat_template_kwargs: the render's own inputs and helpers.
RESERVED_VARIABLES = frozenset(
    {
        "messages",
        "tools",
        "documents",
        "functions",
        "add_generation_prompt",
        "continue_final_message",
        "bos_token",
        "eos_token",
        "raise_exception",
        "strftime_now",
        "range",
        "namespace",
        "dict",
        "lipsum",
        "cycler",
        "joiner",
        "tokenize",  # Hugging Face's apply_chat_template arguments, never template variables
        "return_dict",
        "return_tensors",
        "chat_template",  # a request template goes through --allow-request-templates, not a variable
    }
)

_OPTIONAL_INPUTS = ("tools", "documents")
# What a template bug or a template/data mismatch raises inside Jinja. TemplateError (a bound, or
# raise_exception) is not among them, so it passes through unchanged and is never retried.
_RENDER_ERRORS = (
    jinja2.TemplateError,
    TypeError,
    ValueError,
    LookupError,
    AttributeError,
    ArithmeticError,
    RecursionError,
)


def check_template_kwargs(template_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of the request's chat_template_kwargs, refusing names the server itself sets."""
    kwargs = dict(template_kwargs or {})
    for name in kwargs:
        if name in RESERVED_VARIABLES:
            raise InvalidRequest(
                f"chat_template_kwargs may not set the reserved template variable '{name}'",
                param=f"chat_template_kwargs.{name}",
            )
    return kwargs


def _legacy_variables(compiled: CompiledTemplate, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Variables some templates read instead of `tools` (firefunction's `functions`, `datetime`)."""
    extra: dict[str, Any] = {}
    if "functions" in compiled.variables:
        extra["functions"] = json.dumps(tools, indent=2) if tools else ""
    if "datetime" in compiled.variables:
        extra["datetime"] = datetime.now().strftime("%b %d %Y %H:%M:%S GMT")
    return extra


def render(
    template: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
    template_kwargs: dict[str, Any] | None = None,
    documents: list[dict[str, Any]] | None = None,
    limits: RenderLimits | None = None,
) -> str:
    """Render `messages` exactly as given (tool-call arguments as objects), as transformers would.

    Without tools, `tools` is None as in transformers (`documents` likewise); a template that then
    fails (it iterates `tools` unguarded) is rendered again with them undefined, as llama.cpp does.
    Inputs are deep-copied: a template can never change the caller's data.
    """
    kwargs = check_template_kwargs(template_kwargs)
    compiled = compile_template(template)
    context: dict[str, Any] = {**_legacy_variables(compiled, tools), **kwargs}
    context.update(
        messages=copy.deepcopy(messages),
        tools=copy.deepcopy(tools) or None,
        documents=copy.deepcopy(documents) or None,
        add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
        eos_token=eos_token,
    )
    with bounded(limits or RenderLimits()):
        try:
            return _render_once(compiled, context)
        except _RENDER_ERRORS as exc:
            unset = [
                name for name in _OPTIONAL_INPUTS if context[name] is None and name in compiled.variables
            ]
            if not unset:
                raise _render_failed(exc) from exc
        for name in unset:
            del context[name]
        try:
            return _render_once(compiled, context)
        except _RENDER_ERRORS as exc:
            raise _render_failed(exc) from exc


def _render_once(compiled: CompiledTemplate, context: dict[str, Any]) -> str:
    return compiled.template.render(**context)


def _render_failed(exc: BaseException) -> TemplateError:
    return TemplateError(f"chat template failed to render: {type(exc).__name__}: {exc}")
