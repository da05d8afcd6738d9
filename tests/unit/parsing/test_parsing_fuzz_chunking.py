"""Chunking invariance on random mixtures of marker fragments, JSON and words (seeded, so reproducible)."""

from __future__ import annotations

import os
import random

import pytest
from parsing_helpers import feed_all, joined, random_pieces, read_template

from tokenloom.cli.roundtrip import TOOLS, round_trip_cases
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.stream.output_parser import make_output_parser
from tokenloom.parsing.structures import SLOTS

TEMPLATES = [
    "Qwen-Qwen3-0.6B.jinja",
    "Qwen3-Coder.jinja",
    "GLM-4.7-Flash.jinja",
    "moonshotai-Kimi-K2.jinja",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "deepseek-ai-DeepSeek-V3.1.jinja",
    "Apriel-1.6-15b-Thinker-fixed.jinja",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
    "meetkai-functionary-medium-v3.2.jinja",
    "MiniMax-M2.jinja",
    "MiniMax-M3.jinja",
    "google-gemma-4-31B-it.jinja",
    "LFM2.5-8B-A1B.jinja",
    "upstage-Solar-Open-100B.jinja",
    "muse-glimmer.jinja",
]


def _vocabulary(name: str) -> list[str]:
    template = read_template(name)
    analysis = analyze(template)
    words = ["hello", " ", "\n", "get_weather", "run_code", '{"location": "Oslo"}', "{", "}", '"', "<", ">"]
    c, t = analysis.content, analysis.tools
    markers = [c.reasoning_start, c.reasoning_end, c.content_start, c.content_end, *t.triggers]
    markers += [p for p in t.call_pattern if p not in SLOTS]
    markers += [t.tool_section_start, t.tool_section_end, t.arg_prefix, t.arg_suffix, t.arg_close]
    for marker in filter(None, markers):
        words += [marker, marker[: len(marker) // 2], marker[len(marker) // 2 :]]
    for case in round_trip_cases(template, name):
        words.append(case.output)
    return words


CONFIGS: list[dict[str, object]] = [
    {},
    {"reasoning_format": "none"},
    {"enable_thinking": True},
    {"enable_thinking": False},
    {"reasoning_format": "none", "enable_thinking": True},
]


@pytest.mark.parametrize("name", TEMPLATES)
def test_random_outputs_parse_the_same_in_any_chunking(name: str) -> None:
    analysis = analyze(read_template(name))
    words = _vocabulary(name)
    rng = random.Random(name)
    for trial in range(int(os.environ.get("FUZZ_TRIALS", "40"))):
        text = "".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        options = rng.choice(CONFIGS)
        results = []
        for pieces in ([text], list(text), random_pieces(text, trial)):
            parser = make_output_parser(analysis, tools=TOOLS, id_prefix="c", **options)  # type: ignore[arg-type]
            events = feed_all(parser, pieces)
            results.append((parser.message(), joined(events)))
        assert results[0] == results[1] == results[2], text
