"""Round trip through every real template that supports tools or reasoning, and streaming invariance.

Each case renders an assistant message through the template itself, cuts what the model would have emitted
after the generation prompt and parses it back. Where a template drops reasoning (or content, or a second
call) from the rendered turn, or opens the reasoning block in the generation prompt and renders the turn
inside it, the expected message is what the rendered text really carries (see `roundtrip._expected`).
"""

from __future__ import annotations

import pytest
from parsing_helpers import feed_all, joined, random_pieces, read_template, template_names

from tokenloom.cli.roundtrip import Case, normalized, round_trip_cases
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.stream.output_parser import make_output_parser

# Known failures, with their causes (also listed in docs/templates.md by `template analyze --all`).
KNOWN_FAILURES: dict[str, str] = {}  # "template/label": cause, for cases expected to fail


def _cases() -> list[Case]:
    cases: list[Case] = []
    for name in template_names():
        template = read_template(name)
        if not analyze(template).caps.is_harmony:
            cases += round_trip_cases(template, name)
    return cases


CASES = _cases()


def _param(case: Case, failures: dict[str, str]) -> object:
    cause = failures.get(f"{case.template_name}/{case.label}")
    marks = [pytest.mark.xfail(reason=cause, strict=True)] if cause else []
    return pytest.param(case, id=f"{case.template_name}/{case.label}", marks=marks)


PARAMS = [_param(c, KNOWN_FAILURES) for c in CASES]
# Chunking never changes the result, even where the expected message is not reached.
STREAM_PARAMS = [_param(c, {}) for c in CASES]


def _parser(case: Case):  # type: ignore[no-untyped-def]
    analysis = analyze(read_template(case.template_name))
    return make_output_parser(
        analysis, tools=case.tools, generation_prompt=case.generation_prompt, id_prefix="call_"
    )


def test_corpus_covers_the_families() -> None:
    names = {c.template_name for c in CASES}
    assert len(names) >= 50
    assert sum(1 for c in CASES if c.label == "two parallel calls") >= 40


@pytest.mark.parametrize("case", PARAMS)
def test_round_trip(case: Case) -> None:
    parser = _parser(case)
    events = feed_all(parser, [case.output])
    assert normalized(parser.message()) == case.expected
    assert joined(events)[3] == []


@pytest.mark.parametrize("case", STREAM_PARAMS)
def test_streaming_invariance(case: Case) -> None:
    whole = _parser(case)
    whole_events = feed_all(whole, [case.output])
    chunkings = [list(case.output)] + [random_pieces(case.output, seed) for seed in range(3)]
    for pieces in chunkings:
        parser = _parser(case)
        events = feed_all(parser, pieces)
        assert parser.message() == whole.message()
        assert joined(events) == joined(whole_events)
    message = whole.message()
    markers = _markers(case)
    for text in (message.content or "", message.reasoning_content or ""):
        assert not any(m in text for m in markers) or f"{case.template_name}/{case.label}" in KNOWN_FAILURES


def _markers(case: Case) -> tuple[str, ...]:
    analysis = analyze(read_template(case.template_name))
    c = analysis.content
    return tuple(m for m in (*analysis.tools.triggers, c.reasoning_start, c.reasoning_end) if len(m) > 1)
