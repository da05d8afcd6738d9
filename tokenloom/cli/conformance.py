"""Runs llama.cpp's test-chat expectations (tests/golden/llamacpp/cases.jsonl) through our output parser.

Each case names a template, the conversation, the model's text and what llama.cpp's own test expects; this
module renders the prompt the way llama.cpp does, parses the text whole and in random pieces with
`make_output_parser`, and compares with that test's rules. Knows nothing of how the cases were extracted.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tokenloom.chat.render import render_chat
from tokenloom.cli.roundtrip import FIXED_CLOCK
from tokenloom.events import ParsedMessage
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.markers import TAG_RE
from tokenloom.parsing.stream.output_parser import make_output_parser
from tokenloom.parsing.structures import TemplateAnalysis


@dataclass(frozen=True, slots=True)
class ParseInputs:
    """What `template parse` takes for one case: the rendered generation prompt and any prefill."""

    generation_prompt: str
    prefill: str


def load_cases(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


@lru_cache(maxsize=256)
def _template(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


@lru_cache(maxsize=256)
def _analysis(path: str) -> TemplateAnalysis:
    return analyze(_template(path))


def _render(template: str, case: dict[str, Any], messages: list[dict[str, Any]], add_gen: bool) -> str:
    return render_chat(
        template,
        messages,
        tools=case["tools"] or None,
        add_generation_prompt=add_gen,
        template_kwargs={"enable_thinking": case["enable_thinking"], **FIXED_CLOCK},
    )


def continuation_mode(case: dict[str, Any]) -> str:
    """ "none", "content" or "reasoning"; llama.cpp's "auto" picks reasoning for a reasoning-only message."""
    mode = str(case["continue_final_message"])
    if mode == "auto":
        last = case["messages"][-1]
        return "reasoning" if last.get("reasoning_content") and not last.get("content") else "content"
    return mode


def parse_inputs(case: dict[str, Any], templates: Path) -> ParseInputs:
    """The generation prompt as llama.cpp computes it (the render with it minus the render without), and
    for a continued assistant message the prefill llama.cpp writes after it (reasoning opener, the
    message's reasoning, its closer and content when the content is continued)."""
    path = str(templates / case["template"])
    template = _template(path)
    mode = continuation_mode(case)
    messages = case["messages"][:-1] if mode != "none" else case["messages"]
    with_gen = _render(template, case, messages, True)
    without = _render(template, case, messages, False)
    shared = 0
    while shared < min(len(with_gen), len(without)) and with_gen[shared] == without[shared]:
        shared += 1
    generation_prompt = with_gen[shared:]
    if mode == "none":
        return ParseInputs(generation_prompt, "")
    last = case["messages"][-1]
    if case["reasoning_format"] == "none" and mode == "content":  # reasoning is not parsed out: the
        # model goes on from the message's text (what llama.cpp's none-mode expectations show)
        return ParseInputs(generation_prompt, str(last.get("content") or ""))
    if _analysis(path).caps.is_harmony:
        return ParseInputs(generation_prompt, _rendered_prefill(template, case, messages, mode))
    content = _analysis(path).content
    prefill = ""
    if content.reasoning_start:
        at = generation_prompt.find(content.reasoning_start)
        generation_prompt = generation_prompt[:at] if at >= 0 else generation_prompt
        prefill = content.reasoning_start + str(last.get("reasoning_content") or "")
        if mode == "content":
            prefill += content.reasoning_end
    elif content.reasoning_end:  # reasoning with no opener: the prompt's own lead-in ("Here are my
        # reasoning steps:\n", Apriel) is replaced by the message's reasoning
        tags = list(TAG_RE.finditer(generation_prompt))
        generation_prompt = generation_prompt[: tags[-1].end()] if tags else generation_prompt
        prefill = str(last.get("reasoning_content") or "")
        if mode == "content":
            prefill += content.reasoning_end
    if mode == "content":
        prefill += str(last.get("content") or "")
    return ParseInputs(generation_prompt, prefill)


_CUT = "\ue000tokenloom:continue\ue000"


def _rendered_prefill(template: str, case: dict[str, Any], messages: list[dict[str, Any]], mode: str) -> str:
    """Harmony: the continued message as the template writes it, up to where the model goes on."""
    last = dict(case["messages"][-1])
    field = "reasoning_content" if mode == "reasoning" else "content"
    last[field] = str(last.get(field) or "") + _CUT
    prompt = _render(template, case, messages, True)
    full = _render(template, case, [*messages, last], False)
    shared = 0
    while shared < min(len(prompt), len(full)) and prompt[shared] == full[shared]:
        shared += 1
    return full[shared : full.index(_CUT)]


def parse_case(
    case: dict[str, Any], templates: Path, pieces: list[str] | None = None, inputs: ParseInputs | None = None
) -> ParsedMessage:
    """The message our parser reads from the case's text, fed whole or in the given pieces."""
    path = str(templates / case["template"])
    inputs = inputs or parse_inputs(case, templates)
    parser = make_output_parser(
        _analysis(path),
        tools=case["tools"] or None,
        reasoning_format="none" if case["reasoning_format"] == "none" else "auto",
        enable_thinking=case["enable_thinking"],
        generation_prompt=inputs.generation_prompt,
        id_prefix="call_",
        prefill=inputs.prefill,
        json_answer=bool(case["json_schema"]),
    )
    for piece in pieces if pieces is not None else [case["input"]]:
        parser.feed(piece)
    if not case["partial"]:
        parser.finish()
    return parser.message()


def _json_or_empty(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return ""  # test-chat ignores arguments that are not (yet) whole JSON


def mismatch(case: dict[str, Any], got: ParsedMessage) -> str | None:
    """None when `got` meets test-chat's rules (outer whitespace stripped, arguments as JSON, ids where the
    test sets one), else the first difference."""
    expect = case["expect"]
    for name, have in (("content", got.content), ("reasoning_content", got.reasoning_content)):
        if (have or "").strip() != expect[name].strip():
            return f"{name}: expected {expect[name].strip()!r}, got {(have or '').strip()!r}"
    calls = expect["tool_calls"]
    if len(calls) != len(got.tool_calls):
        return f"tool_calls: expected {len(calls)}, got {len(got.tool_calls)}: {got.tool_calls!r}"
    for want, call in zip(calls, got.tool_calls, strict=True):
        if want["name"] != call.name:
            return f"tool name: expected {want['name']!r}, got {call.name!r}"
        if _json_or_empty(want["arguments"]) != _json_or_empty(call.arguments):
            return f"arguments: expected {want['arguments']!r}, got {call.arguments!r}"
        if want["id"] and want["id"] != call.id:
            return f"id: expected {want['id']!r}, got {call.id!r}"
    return None


def random_pieces(text: str, rng: random.Random) -> list[str]:
    pieces, at = [], 0
    while at < len(text):
        step = rng.randint(1, 8)
        pieces.append(text[at : at + step])
        at += step
    return pieces


def splits(text: str, rng: random.Random, num_random: int, every_cut: bool) -> list[list[str]]:
    """Ways to feed `text`: per character, `num_random` random splits, and (`every_cut`) in two pieces cut
    at every character."""
    ways = [list(text)] + [random_pieces(text, rng) for _ in range(num_random)]
    if every_cut:
        ways += [[text[:i], text[i:]] for i in range(1, len(text))]
    return ways


def check(
    case: dict[str, Any], templates: Path, num_splits: int = 3, seed: int = 0, every_cut: bool = False
) -> str | None:
    """None when the case passes whole and gives the same message however it is split, else why not."""
    try:
        inputs = parse_inputs(case, templates)
        whole = parse_case(case, templates, inputs=inputs)
    except Exception as exc:  # a case that cannot even run is a miss with its reason
        return f"{type(exc).__name__}: {exc}"
    if (problem := mismatch(case, whole)) is not None:
        return problem
    for pieces in splits(case["input"], random.Random(seed), num_splits, every_cut):
        if (streamed := parse_case(case, templates, pieces, inputs)) != whole:
            return f"fed as {pieces!r}: {streamed!r}, whole: {whole!r}"
    return None


def case_id(case: dict[str, Any]) -> str:
    return f"{case['template']}:{case['source_line']}"
