"""Golden renderings, written by hand from HARMONY.md and seed 004 (regenerate: TOKENLOOM_UPDATE_GOLDEN=1).

Each file holds the prompt text plus one trailing newline.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import harmony_cases as cases
import pytest

from tokenloom.harmony import HarmonyMessage, SystemContent, render_chat_request, render_completion

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "harmony"
DATE = "2025-06-28"


def _plain_chat() -> str:
    # The reference's `simple_convo`: default system content, no date, no developer message.
    return render_completion(
        [HarmonyMessage("system", SystemContent()), HarmonyMessage("user", "What is 2 + 2?")]
    )


def _system_developer() -> str:
    return render_chat_request(
        [
            {"role": "system", "content": "Answer the user's questions like a robot."},
            {"role": "developer", "content": "Never use emoji."},
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "PARIS. BEEP.", "reasoning_content": "Easy: Paris."},
            {"role": "user", "content": "And of Italy?"},
        ],
        current_date=DATE,
    )


def _reasoning_effort() -> str:
    return render_chat_request(
        [{"role": "user", "content": "Prove that sqrt(2) is irrational."}],
        reasoning_effort="high",
        model_identity="You are a careful assistant.",
        current_date=DATE,
    )


def _function_tools() -> str:
    return render_chat_request(
        [
            {"role": "system", "content": "You are a travel agent."},
            {"role": "user", "content": "Find me a flight from Paris to Tokyo."},
        ],
        tools=[cases.LOCATION_TOOL, cases.WEATHER_TOOL, cases.FLIGHTS_TOOL],
        reasoning_effort="low",
        current_date=DATE,
    )


def _tool_round_ongoing() -> str:
    # The turn continues through a tool call: its analysis stays in the prompt.
    return render_chat_request(cases.TOOL_ROUND, tools=[cases.WEATHER_TOOL], current_date=DATE)


def _tool_round_finished() -> str:
    # The turn ended with a final answer: every analysis message of it is dropped.
    return render_chat_request(cases.TOOL_ROUND_FINISHED, tools=[cases.WEATHER_TOOL], current_date=DATE)


def _builtin_tools() -> str:
    return render_chat_request(
        [{"role": "user", "content": "Who won the 2024 Tour de France?"}],
        builtin_tools=("python", "browser"),
        current_date=DATE,
    )


def _response_format() -> str:
    return render_chat_request(
        [
            {"role": "system", "content": "You are a helpful shopping assistant"},
            {"role": "user", "content": "I need to make pancakes."},
        ],
        response_format=cases.SHOPPING_FORMAT,
        current_date=DATE,
    )


CASES: dict[str, Callable[[], str]] = {
    "plain_chat": _plain_chat,
    "system_developer": _system_developer,
    "reasoning_effort": _reasoning_effort,
    "function_tools": _function_tools,
    "tool_round_ongoing": _tool_round_ongoing,
    "tool_round_finished": _tool_round_finished,
    "builtin_tools": _builtin_tools,
    "response_format": _response_format,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    path = GOLDEN / f"{name}.txt"
    got = CASES[name]() + "\n"
    if os.environ.get("TOKENLOOM_UPDATE_GOLDEN") == "1":
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")
