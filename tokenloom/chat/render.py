"""Public entry points of chat/: render a conversation through a chat template into prompt text.

`render` is the faithful render (what transformers would produce; other parts use it to probe
templates); `render_chat` first adapts OpenAI-shaped messages to what the template can express.
"""

from __future__ import annotations

from typing import Any

from tokenloom.chat.adapt import adapt_messages
from tokenloom.chat.bounds import RenderLimits
from tokenloom.chat.caps import TemplateCaps, detect_caps, flatten_tools
from tokenloom.chat.template import RESERVED_VARIABLES, check_template_kwargs, render
from tokenloom.errors import TemplateError

__all__ = ["RESERVED_VARIABLES", "RenderLimits", "render", "render_chat"]

_THINKING_ALIASES = ("enable_thinking", "thinking")


def render_chat(
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
    """Render OpenAI-shaped messages after adapting them to the template's capabilities.

    System prompts, tool calls, tool results and content parts the template cannot express are
    rewritten into forms it can (see adapt.py), as llama-server and vLLM users expect.
    """
    kwargs = check_template_kwargs(template_kwargs)
    caps = detect_caps(template)
    adapted = adapt_messages(messages, caps, tools)
    variable = caps.thinking_variable
    if variable and variable not in kwargs:
        # Clients send `enable_thinking` (or `thinking`); pass it on under the name this template reads.
        switch = next((kwargs[alias] for alias in _THINKING_ALIASES if alias in kwargs), None)
        if switch is not None:
            kwargs[variable] = switch
    try:
        return render(
            template,
            adapted,
            tools=_template_tools(tools, caps),
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token,
            eos_token=eos_token,
            template_kwargs=kwargs,
            documents=documents,
            limits=limits,
        )
    except TemplateError as exc:
        if exc.status != 500 or not caps.supports_user_turn:
            raise
        # The template renders ordinary conversations, so this request's shape or size broke it.
        raise TemplateError(f"{exc.message} (for this conversation)", param="messages", status=400) from exc


def _template_tools(tools: list[dict[str, Any]] | None, caps: TemplateCaps) -> list[dict[str, Any]] | None:
    """The tools in the shape the template reads (None when it cannot list them: see adapt.py)."""
    if not tools or not caps.supports_tools:
        return None
    return flatten_tools(tools) if caps.requires_flat_tools else tools
