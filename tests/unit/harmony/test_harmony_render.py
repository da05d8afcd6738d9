"""Message-layer rendering rules of HARMONY.md §2-4 and §6 that the golden files do not cover."""

from __future__ import annotations

import pytest

from tokenloom.errors import InvalidRequest
from tokenloom.harmony import (
    DeveloperContent,
    HarmonyMessage,
    SystemContent,
    ToolDescription,
    ToolNamespace,
    render_completion,
    render_conversation,
    render_message,
    render_training,
)
from tokenloom.harmony.messages import assistant, tool_result

USER = HarmonyMessage("user", "What is 2 + 2?")
THINK = assistant("User asks a sum.", channel="analysis")
FINAL = assistant("4", channel="final")


def test_header_forms() -> None:
    call = assistant(
        '{"a": 1}', channel="commentary", recipient="functions.f", content_type="<|constrain|>json"
    )
    assert render_message(call) == (
        '<|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{"a": 1}<|call|>'
    )
    assert (
        render_message(HarmonyMessage("user", "hi", name="alice"))
        == "<|start|>user:alice<|message|>hi<|end|>"
    )
    # `to=all` is not written, but a recipient is set, so the message still ends with <|call|>.
    assert render_message(assistant("x", recipient="all")) == "<|start|>assistant<|message|>x<|call|>"
    assert (
        render_message(tool_result("functions.f", "{}", channel=None))
        == "<|start|>functions.f<|message|>{}<|end|>"
    )
    assert render_message(tool_result("browser.search", "r")) == (
        "<|start|>browser.search to=assistant<|channel|>commentary<|message|>r<|end|>"
    )


def test_invalid_messages_raise() -> None:
    with pytest.raises(InvalidRequest):
        render_message(HarmonyMessage("tool", "x"))
    with pytest.raises(InvalidRequest):
        render_message(HarmonyMessage("user", SystemContent()))
    with pytest.raises(InvalidRequest):
        render_message(HarmonyMessage("system", DeveloperContent()))


def test_system_content_variants() -> None:
    empty = SystemContent(
        model_identity=None, reasoning_effort=None, knowledge_cutoff=None, valid_channels=()
    )
    assert render_message(HarmonyMessage("system", empty)) == "<|start|>system<|message|><|end|>"
    loose = SystemContent(valid_channels=("analysis", "final"), channel_required=False)
    assert render_message(HarmonyMessage("system", loose)).endswith(
        "\n\n# Valid channels: analysis, final.<|end|>"
    )


def test_functions_rule_is_decided_for_the_whole_conversation() -> None:
    functions = ToolNamespace("functions", None, (ToolDescription("f", "F"),))
    messages = [
        HarmonyMessage("system", SystemContent()),
        HarmonyMessage("developer", DeveloperContent(tools=(functions,))),
    ]
    text = render_conversation(messages)
    assert (
        "for every message.\nCalls to these tools must go to the commentary channel: 'functions'.<|end|>"
        in text
    )
    assert (
        "<|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n"
        "// F\ntype f = () => any;\n\n}" in text
    )
    empty_ns = ToolNamespace("functions")
    no_tools = [messages[0], HarmonyMessage("developer", DeveloperContent(tools=(empty_ns,)))]
    assert render_conversation(no_tools).endswith(
        "<|start|>developer<|message|># Tools\n\n## functions\n<|end|>"
    )


def test_drop_analysis_only_when_turn_ended_with_final() -> None:
    assert render_conversation([USER, THINK, FINAL]) == render_conversation([USER, FINAL])
    assert render_conversation([USER, THINK, FINAL], auto_drop_analysis=False) != render_conversation(
        [USER, FINAL]
    )
    call = assistant("{}", channel="commentary", recipient="functions.f")
    ongoing = [USER, THINK, call, tool_result("functions.f", "ok")]
    assert "User asks a sum." in render_completion(ongoing)
    # Analysis after the first final message is kept (reference: keep_analysis_between_finals).
    later_think = assistant("thinking 3+5", channel="analysis")
    text = render_conversation([USER, THINK, FINAL, USER, later_think, FINAL])
    assert "User asks a sum." not in text
    assert "thinking 3+5" in text


def test_completion_and_training_endings() -> None:
    assert render_completion([USER]).endswith("<|end|><|start|>assistant")
    assert render_completion([USER], "user").endswith("<|start|>user")
    assert (
        render_training([USER, THINK, FINAL])
        == render_conversation([USER, FINAL]).removesuffix("<|end|>") + "<|return|>"
    )
    assert render_training([USER]) == render_conversation([USER])
