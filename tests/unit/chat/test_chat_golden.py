"""Golden renderings of a few representative templates; regenerate with TOKENLOOM_UPDATE_GOLDEN=1."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chat_conversations import (
    GOLDEN_DIR,
    REASONING,
    SYSTEM,
    TEMPLATE_NAMES,
    TOOLS,
    load,
    parallel_calls,
    tool_call,
)

from tokenloom.chat.caps import detect_caps
from tokenloom.chat.fallback import GEMMA_TURNS
from tokenloom.chat.render import render, render_chat

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}
SYSTEM_AND_TOOLS = [SYSTEM[0], *tool_call(call_id="call_1", content=None)]
FIXED_DATE = {"datetime": "Jan 01 2025 00:00:00 GMT"}

CASES: dict[str, Callable[[], str]] = {
    "qwen2.5_tool_call": lambda: render(
        load("Qwen-Qwen2.5-7B-Instruct.jinja"), tool_call(), tools=TOOLS, **SPECIAL
    ),
    "qwen2.5_parallel_adapted": lambda: render_chat(
        load("Qwen-Qwen2.5-7B-Instruct.jinja"), parallel_calls(as_string=True), tools=TOOLS, **SPECIAL
    ),
    "qwen3_reasoning_no_thinking": lambda: render(
        load("Qwen-Qwen3-0.6B.jinja"),
        [*REASONING, {"role": "user", "content": "And 3+3?"}],
        template_kwargs={"enable_thinking": False},
        **SPECIAL,
    ),
    "llama3.1_tool_call": lambda: render(
        load("meta-llama-Llama-3.1-8B-Instruct.jinja"), tool_call(), tools=TOOLS, **SPECIAL
    ),
    "mistral_v0.2_adapted_tools": lambda: render_chat(
        load("mistralai-Mistral-7B-Instruct-v0.2.jinja"), SYSTEM_AND_TOOLS, tools=TOOLS, **SPECIAL
    ),
    "gemma2_adapted_system": lambda: render_chat(load("google-gemma-2-2b-it.jinja"), SYSTEM, **SPECIAL),
    "kimi_k2_parallel": lambda: render(
        load("Kimi-K2-Instruct.jinja"), parallel_calls(content=""), tools=TOOLS, **SPECIAL
    ),
    "firefunction_functions": lambda: render(
        load("fireworks-ai-llama-3-firefunction-v2.jinja"),
        SYSTEM,
        tools=TOOLS,
        template_kwargs=FIXED_DATE,
        **SPECIAL,
    ),
    "gemma_fallback_tools": lambda: render_chat(GEMMA_TURNS, SYSTEM_AND_TOOLS, tools=TOOLS, **SPECIAL),
}


def _check_golden(path: Path, actual: str) -> None:
    if os.environ.get("TOKENLOOM_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with TOKENLOOM_UPDATE_GOLDEN=1 and review it"
    expected: Any = path.read_text(encoding="utf-8")
    assert actual == expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_rendering(case: str) -> None:
    _check_golden(GOLDEN_DIR / f"{case}.txt", CASES[case]())


def test_golden_caps_of_every_template() -> None:
    """Capability detection over all templates, so a change in any probe shows up as a reviewable diff."""
    sources = {name: load(name) for name in TEMPLATE_NAMES} | {"<GEMMA_TURNS fallback>": GEMMA_TURNS}
    lines = [f"{name}: {_caps_line(source)}" for name, source in sources.items()]
    _check_golden(GOLDEN_DIR / "caps.txt", "\n".join(lines) + "\n")


def _caps_line(template: str) -> str:
    """One line per template: the flags that are true, then the named fields that are set."""
    fields = dataclasses.asdict(detect_caps(template))
    flags = [name for name, value in fields.items() if value is True]
    named = [f"{name}={value}" for name, value in fields.items() if isinstance(value, str)]
    return " ".join(flags + named)
