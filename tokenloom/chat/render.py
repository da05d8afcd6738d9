"""Render a conversation through a chat template into the prompt text."""

from __future__ import annotations

from typing import Any

import jinja2

from tokenloom.chat.jinja_env import compile_template
from tokenloom.errors import TemplateError


def render(
    template: str,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
    template_kwargs: dict[str, Any] | None = None,
) -> str:
    """Render `messages` (OpenAI shape, tool-call arguments as objects) as HF transformers would."""
    context: dict[str, Any] = dict(template_kwargs or {})
    context.update(
        messages=messages,
        tools=tools or None,
        add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
        eos_token=eos_token,
    )
    try:
        return compile_template(template).render(**context)
    except TemplateError:
        raise
    except (jinja2.TemplateError, TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        raise TemplateError(f"chat template failed to render: {type(exc).__name__}: {exc}") from exc
