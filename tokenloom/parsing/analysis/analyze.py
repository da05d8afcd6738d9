"""`analyze(template)`: the two phases of seed 000 over one chat template, cached per template text.

Phase 1 (`reasoning_analysis`) then phase 2 (`tool_analysis`); both only render probe conversations.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from tokenloom.harmony import is_harmony_template
from tokenloom.parsing.analysis.conventions import convention_of
from tokenloom.parsing.analysis.probes import Prober, find_assistant_header, find_turn_end
from tokenloom.parsing.analysis.reasoning_analysis import analyze_content
from tokenloom.parsing.analysis.tool_analysis import analyze_tools
from tokenloom.parsing.structures import (
    ContentStructure,
    ReasoningMode,
    TemplateAnalysis,
    TemplateCaps,
    ToolCallStructure,
)


def is_harmony(template: str) -> bool:
    """gpt-oss's harmony format (channels and recipients between <|start|> and <|end|>/<|call|>), by the
    one detector the server uses too (`tokenloom.harmony.is_harmony_template`)."""
    return is_harmony_template(template)


@lru_cache(maxsize=256)
def analyze(template: str) -> TemplateAnalysis:
    """Detect how a template writes reasoning, content and tool calls; never raises on a bad template."""
    notes: list[str] = []
    if is_harmony(template):
        notes.append("harmony format: parsed by tokenloom.harmony, not the auto-parser")
        return TemplateAnalysis(
            ContentStructure(), ToolCallStructure(), TemplateCaps(is_harmony=True), tuple(notes)
        )
    prober = Prober(template)
    if prober.prompt(True) is None:
        prober = Prober(template, [])
    if prober.prompt(True) is None:
        notes.append("the template does not render a plain user turn")
    content = analyze_content(prober)
    content = replace(
        content,
        turn_end=find_turn_end(prober, content.content_end),
        assistant_header=find_assistant_header(prober, (content.reasoning_start, content.reasoning_end)),
    )
    tools = analyze_tools(template, content, notes)
    renders_calls = tools.supports_tools  # the template itself can write calls into a past turn
    if not tools.supports_tools and (convention := convention_of(template)) is not None:
        tools = analyze_tools(convention.reference, content, [])
        notes.append(f"tool calls follow the {convention.name} convention (the template renders none)")
    caps = TemplateCaps(
        supports_tools=renders_calls,
        supports_parallel_calls=tools.parallel_calls and renders_calls,
        supports_reasoning=content.reasoning_mode is not ReasoningMode.NONE,
    )
    return TemplateAnalysis(content, tools, caps, tuple(notes))
