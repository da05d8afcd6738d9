"""The bounded sandbox renders every real template byte for byte like a plain transformers-style one.

The reference is a bare `ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks)` with loop
controls and the helpers transformers adds; the bounds (deadline, size checks, rewritten loops and
`~`) must not change a single character of a normal render.
"""

from __future__ import annotations

import json
from typing import Any

import jinja2
import pytest
from chat_conversations import (
    MULTI_TURN,
    REASONING,
    SYSTEM,
    TEMPLATE_NAMES,
    TOOLS,
    TYPED,
    USER,
    load,
    tool_call,
)
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tokenloom.chat import jinja_env
from tokenloom.chat.render import render
from tokenloom.errors import TemplateError


class _Generation(Extension):
    tags = {"generation"}  # noqa: RUF012

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def _reference_environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", _Generation]
    )

    def tojson(
        x: Any,
        ensure_ascii: bool = False,
        indent: Any = None,
        separators: Any = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
        )

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: "2025-01-01"
    return env


REFERENCE = _reference_environment()
CONVERSATIONS = {
    "user": USER,
    "system": SYSTEM,
    "multi_turn": MULTI_TURN,
    "reasoning": REASONING,
    "typed": TYPED,
    "tool_call": tool_call(),
}


# transformers passes tools=None and documents=None; llama.cpp leaves them undefined; firefunction
# reads `functions` (the tools as indented JSON) and `datetime`.
VARIANTS: list[tuple[list[dict[str, Any]] | None, dict[str, Any]]] = [
    (TOOLS, {"tools": TOOLS, "documents": None, "functions": json.dumps(TOOLS, indent=2)}),
    (None, {"tools": None, "documents": None, "functions": ""}),
    (None, {"functions": ""}),
]
FIXED = {"add_generation_prompt": True, "bos_token": "<s>", "eos_token": "</s>"}
DATE = {"datetime": "Jan 01 2025"}


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_bounded_render_matches_the_plain_sandbox(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(jinja_env._ENV.globals, "strftime_now", lambda fmt: "2025-01-01")
    source = load(name)
    reference = REFERENCE.from_string(source)
    compared = 0
    for messages in CONVERSATIONS.values():
        for tools, context in VARIANTS:
            try:
                expected = reference.render(messages=messages, **context, **FIXED, **DATE)
            except Exception:  # the plain sandbox refuses it (e.g. list.append): nothing to compare
                continue
            try:
                actual = render(source, messages, tools=tools, template_kwargs=DATE, **FIXED)
            except TemplateError as exc:
                pytest.fail(f"bounded render failed where the plain sandbox rendered: {exc}")
            assert actual == expected
            compared += 1
            break
    assert compared > 0
