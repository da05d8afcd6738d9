"""Template analysis over every real template: no errors, known structures, golden results."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from parsing_helpers import read_template, template_names

from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.structures import (
    SLOT_ARGS,
    SLOT_CALL,
    SLOT_INDEX,
    SLOT_NAME,
    ArgumentFormat,
    FunctionFormat,
    ReasoningMode,
)

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "parsing" / "analysis.json"


@pytest.mark.parametrize("name", template_names())
def test_every_template_is_analysed(name: str) -> None:
    analysis = analyze(read_template(name))
    assert analysis.to_dict()["caps"]["is_harmony"] == analysis.caps.is_harmony


def test_golden_analysis() -> None:
    """Regenerate with TOKENLOOM_UPDATE_GOLDEN=1 and review the diff."""
    current = {name: analyze(read_template(name)).to_dict() for name in template_names()}
    if os.environ.get("TOKENLOOM_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(current, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert json.loads(GOLDEN.read_text(encoding="utf-8")) == current


def test_hermes_json_in_tags() -> None:
    tools = analyze(read_template("Qwen-Qwen2.5-7B-Instruct.jinja")).tools
    assert tools.function_format is FunctionFormat.JSON_OBJECT
    assert tools.triggers == ("<tool_call>",)
    assert SLOT_CALL in tools.call_pattern
    assert (tools.name_path, tools.args_path) == (("name",), ("arguments",))


def test_llama3_field_variant_and_bare_json() -> None:
    tools = analyze(read_template("meta-llama-Llama-3.1-8B-Instruct.jinja")).tools
    assert tools.args_path == ("parameters",)
    assert tools.triggers == ('{"name"',)


def test_cohere_tool_name_and_array() -> None:
    tools = analyze(read_template("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja")).tools
    assert (tools.name_path, tools.args_path) == (("tool_name",), ("parameters",))
    assert tools.tool_section_start.endswith("[") and tools.tool_section_end.strip().startswith("]")


def test_kimi_prefixed_indexed() -> None:
    tools = analyze(read_template("moonshotai-Kimi-K2.jinja")).tools
    assert tools.function_format is FunctionFormat.PREFIXED_INDEXED
    assert tools.call_pattern[:2] == ("<|tool_call_begin|>functions.", SLOT_NAME)
    assert SLOT_INDEX in tools.call_pattern and SLOT_ARGS in tools.call_pattern


def test_mistral_bracket_tag_with_id() -> None:
    tools = analyze(read_template("Mistral-Small-3.2-24B-Instruct-2506.jinja")).tools
    assert tools.function_format is FunctionFormat.BRACKET_TAG
    assert "[CALL_ID]" in tools.call_pattern and "[ARGS]" in tools.call_pattern


def test_nemo_json_array_with_id_field() -> None:
    tools = analyze(read_template("mistralai-Mistral-Nemo-Instruct-2407.jinja")).tools
    assert tools.id_path == ("id",)
    assert tools.tool_section_start == "[TOOL_CALLS]["


def test_apertus_name_as_key() -> None:
    tools = analyze(read_template("Apertus-8B-Instruct.jinja")).tools
    assert tools.function_format is FunctionFormat.NAME_AS_KEY


def test_qwen3_coder_tagged_arguments() -> None:
    tools = analyze(read_template("Qwen3-Coder.jinja")).tools
    assert tools.argument_format is ArgumentFormat.TAGGED
    assert tools.arg_prefix.strip() == "<parameter=" and tools.arg_close.strip() == "</parameter>"


def test_glm_key_value_tags() -> None:
    tools = analyze(read_template("GLM-4.6.jinja")).tools
    assert tools.argument_format is ArgumentFormat.KEY_VALUE_TAGS
    assert tools.function_format is FunctionFormat.TAG_NAME_ONLY


def test_minimax_invoke_tags() -> None:
    tools = analyze(read_template("MiniMax-M2.jinja")).tools
    assert tools.function_format is FunctionFormat.TAG_WITH_NAME
    assert tools.triggers == ("<minimax:tool_call>",)


def test_reasoning_modes() -> None:
    qwen3 = analyze(read_template("Qwen-Qwen3-0.6B.jinja")).content
    assert (qwen3.reasoning_start, qwen3.reasoning_end) == ("<think>", "</think>")
    assert qwen3.reasoning_mode is ReasoningMode.OPTIONAL and qwen3.thinking_toggle
    glm47 = analyze(read_template("GLM-4.7-Flash.jinja")).content
    assert glm47.reasoning_mode is ReasoningMode.FORCED_OPEN
    apriel = analyze(read_template("Apriel-1.6-15b-Thinker-fixed.jinja")).content
    assert apriel.reasoning_start == "" and apriel.reasoning_end == "[BEGIN FINAL RESPONSE]"
    assert apriel.reasoning_mode is ReasoningMode.FORCED_OPEN  # implicit start
    ministral = analyze(read_template("mistralai-Ministral-3-14B-Reasoning-2512.jinja")).content
    assert (ministral.reasoning_start, ministral.reasoning_end) == ("[THINK]", "[/THINK]")
    r7b = analyze(read_template("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja")).content
    assert r7b.reasoning_end == "<|END_THINKING|>" and r7b.content_start == "<|START_RESPONSE|>"
    seed = analyze(read_template("ByteDance-Seed-OSS.jinja")).content
    assert seed.reasoning_start == "<seed:think>"


def test_gpt_oss_is_harmony() -> None:
    analysis = analyze(read_template("openai-gpt-oss-120b.jinja"))
    assert analysis.caps.is_harmony and not analysis.tools.supports_tools


def test_content_only_templates_have_no_tools() -> None:
    for name in ("google-gemma-2-2b-it.jinja", "microsoft-Phi-3.5-mini-instruct.jinja"):
        analysis = analyze(read_template(name))
        assert not analysis.caps.supports_tools and not analysis.caps.supports_reasoning


def test_null_content_quirk() -> None:
    assert isinstance(
        analyze(read_template("Qwen-Qwen2.5-7B-Instruct.jinja")).tools.requires_nonnull_content, bool
    )


def test_analysis_is_cached() -> None:
    text = read_template("Qwen3-Coder.jinja")
    assert analyze(text) is analyze(text)


def test_functionary_recipient_based() -> None:
    tools = analyze(read_template("meetkai-functionary-medium-v3.2.jinja")).tools
    assert tools.function_format is FunctionFormat.RECIPIENT_BASED
    assert (tools.recipient_delimiter, tools.content_recipient) == (">>>", "all")
    assert tools.string_arguments  # the template concatenates arguments as text


def test_command_r_plus_markdown_code_block() -> None:
    tools = analyze(read_template("CohereForAI-c4ai-command-r-plus-tool_use.jinja")).tools
    assert tools.function_format is FunctionFormat.MARKDOWN_CODE_BLOCK
    assert tools.triggers == ("Action:",) and tools.flat_tools
    assert (tools.name_path, tools.args_path) == (("tool_name",), ("parameters",))


def test_gemma4_channel_reasoning_and_relaxed_arguments() -> None:
    analysis = analyze(read_template("google-gemma-4-31B-it.jinja"))
    assert (analysis.content.reasoning_start, analysis.content.reasoning_end) == (
        "<|channel>thought",
        "<channel|>",
    )
    assert analysis.tools.argument_format is ArgumentFormat.RELAXED_OBJECT
    assert analysis.tools.string_quote == '<|"|>'
    assert analysis.tools.stop_markers == ("<|tool_response>",)


@pytest.mark.parametrize(
    "template",
    ["{% if %}", "{{ 1 / 0 }}", "{{ raise_exception('no') }}", "{{ messages[5]['content'] }}", "", "text"],
)
def test_broken_templates_do_not_raise(template: str) -> None:
    analysis = analyze(template)
    assert not analysis.caps.supports_tools and not analysis.caps.supports_reasoning


def test_deepseek_v25_calls_render_only_for_null_content() -> None:
    tools = analyze(read_template("deepseek-ai-DeepSeek-V2.5.jinja")).tools
    assert tools.supports_tools and tools.tool_section_end == "<\uff5ctool\u2581calls\u2581end\uff5c>"


def test_constant_content_headers_and_recipient_openers() -> None:
    solar = analyze(read_template("upstage-Solar-Open-100B.jinja")).content
    assert solar.content_start == "<|content|>"
    muse = analyze(read_template("muse-glimmer.jinja")).content
    assert (muse.reasoning_start, muse.content_start) == ("to=self<|message|>", "to=user<|message|>")


def test_lfm2_pythonic() -> None:
    tools = analyze(read_template("LFM2.5-8B-A1B.jinja")).tools
    assert tools.argument_format is ArgumentFormat.PYTHONIC
    assert tools.triggers == ("<|tool_call_start|>",)
