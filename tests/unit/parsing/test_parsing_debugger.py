"""The template debugger: `template analyze` and `template parse` (JSON lines in, JSON lines out)."""

from __future__ import annotations

import io
import json

from parsing_helpers import TEMPLATES

from tokenloom.cli import main
from tokenloom.cli.debugger import run_parse
from tokenloom.cli.roundtrip import TOOLS

QWEN3 = str(TEMPLATES / "Qwen-Qwen3-0.6B.jinja")


def _parse(*requests: dict[str, object]) -> list[dict[str, object]]:
    out = io.StringIO()
    stdin = io.StringIO("".join(json.dumps(r) + "\n" for r in requests) + "not json\n")
    assert run_parse(None, stdin, out) == 0  # type: ignore[arg-type]
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_parse_lines() -> None:
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Oslo"}}\n</tool_call>'
    results = _parse(
        {"template": QWEN3, "text": f"<think>\nhm\n</think>\n\nOK.\n{call}", "tools": TOOLS},
        {"template": QWEN3, "text": "<think>\nhm\n</think>\n\nOK.", "reasoning_format": "none"},
        {"template": QWEN3, "text": "<tool_call>\n{broken", "tools": TOOLS},
        {"template": QWEN3, "text": '<tool_call>\n{"name": "get_wea', "tools": TOOLS, "partial": True},
        {"template": QWEN3, "text": call[: call.index("Oslo") + 2], "tools": TOOLS, "partial": True},
        {"template": "/nonexistent.jinja", "text": "x"},
    )
    first, none, broken, partial, streaming, missing, bad_line = results
    assert first == {
        "content": "OK.",
        "reasoning_content": "hm",
        "tool_calls": [{"id": "call_0", "name": "get_weather", "arguments": '{"location": "Oslo"}'}],
        "error": None,
    }
    assert none["content"] == "<think>\nhm\n</think>\n\nOK." and none["reasoning_content"] is None
    assert broken["content"] == "<tool_call>\n{broken" and "expected a key" in str(broken["error"])
    assert partial["content"] is None and partial["error"] is None  # still waiting for the call's name
    # A call announced but not finished shows the arguments streamed so far.
    assert streaming["tool_calls"] == [
        {"id": "call_0", "name": "get_weather", "arguments": '{"location": "Os'}
    ]
    assert streaming["error"] is None
    assert "FileNotFoundError" in str(missing["error"])
    assert "bad input line" in str(bad_line["error"])


def test_parse_handles_thousands_of_lines() -> None:
    request = {"template": QWEN3, "text": "<think>a</think>b"}
    results = _parse(*([request] * 2000))
    assert len(results) == 2001 and results[1999]["content"] == "b"


def test_analyze_text_and_json(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["template", "analyze", str(TEMPLATES / "Qwen3-Coder.jinja")]) == 0
    text = capsys.readouterr().out
    assert "tag_with_name" in text and "triggers: ['<tool_call>']" in text
    assert main(["template", "analyze", str(TEMPLATES / "Qwen3-Coder.jinja"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tools"]["argument_format"] == "tagged" and data["triggers"] == ["<tool_call>"]


def test_a_lone_surrogate_is_written_escaped_never_a_crash() -> None:
    stdin = io.StringIO(
        json.dumps({"template": str(TEMPLATES / "Qwen3-Coder.jinja"), "text": "a \ud800 b"}) + "\n"
    )
    out = io.StringIO()
    assert run_parse(None, stdin, out) == 0  # type: ignore[arg-type]
    line = out.getvalue()
    line.encode("utf-8")  # valid UTF-8: the surrogate went out as an escape
    assert json.loads(line)["content"] == "a \ud800 b"


def test_harmony_templates_answer_through_the_same_entry() -> None:
    gpt_oss = str(TEMPLATES / "openai-gpt-oss-120b.jinja")
    good, broken, _ = _parse(
        {
            "template": gpt_oss,
            "text": "<|channel|>analysis<|message|>think<|end|>"
            "<|start|>assistant<|channel|>final<|message|>Hi",
        },
        {"template": gpt_oss, "text": "<|channel|>final<|message|>Hi<|end|>junk<|start|>assistant<|chan"},
    )
    assert (good["content"], good["reasoning_content"], good["error"]) == ("Hi", "think", None)
    assert (
        str(broken["content"]).startswith("Hi") and broken["error"]
    )  # recovered as content, with a ParseError


def test_parse_help_documents_the_json_line_input(capsys) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from tokenloom.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["template", "parse", "--help"])
    text = capsys.readouterr().out
    for name in (
        "template",
        "text",
        "tools",
        "partial",
        "reasoning_format",
        "enable_thinking",
        "generation_prompt",
        "prefill",
        "json_schema",
    ):
        assert name in text


def test_unclosed_pythonic_calls_reach_the_content_whole() -> None:
    """`template parse` on thousands of unclosed `get_weather(city=` heads: every character is content."""
    text = "<|tool_call_start|>[" + "get_weather(city=" * 3000
    lfm = str(TEMPLATES / "LFM2.5-8B-A1B.jinja")
    (result, _) = _parse({"template": lfm, "text": text, "tools": TOOLS})
    assert result["content"] == text and result["tool_calls"] == []
    assert "not closed" in str(result["error"])


def test_json_schema_drops_a_json_fence_and_prefill_works_for_harmony() -> None:
    fenced = '```json\n{"a": 1}\n```'
    plain, json_answer, continued, _ = _parse(
        {"template": QWEN3, "text": fenced},
        {"template": QWEN3, "text": fenced, "json_schema": {"type": "object"}},
        {
            "template": str(TEMPLATES / "openai-gpt-oss-120b.jinja"),
            "prefill": "<|channel|>final<|message|>Hello, ",
            "text": "world!",
        },
    )
    assert plain["content"] == fenced  # without a JSON request a fence is the model's own text
    assert str(json_answer["content"]).strip() == '{"a": 1}'
    assert continued["content"] == "Hello, world!"  # the whole message: prefill and continuation
