"""The wide round trip (`tokenloom.cli.wide_corpus`): messages shaped like real conversations, rendered
through every real template (harmony ones included) and parsed back, whole and split every way.

Cases whose truth the rendered text does not define are listed with the reason; they must still differ
(so the list never hides a fix), and they stay split-invariant like every other case.
"""

from __future__ import annotations

import pytest
from parsing_helpers import feed_all, joined, random_pieces, read_template, template_names

from tokenloom.cli.roundtrip import Case, normalized
from tokenloom.cli.wide_corpus import wide_cases
from tokenloom.parsing.analysis.analyze import analyze
from tokenloom.parsing.stream.output_parser import make_output_parser

_UNQUOTED = (
    "the template writes string arguments between ' quotes without escaping them, so a value holding ' is "
    "no Python"
)
_APRIEL = (
    "the template renders a past answer after 'Here ' of the prompt's 'Here are my reasoning steps:', "
    "with no [BEGIN FINAL RESPONSE]: the text does not say where reasoning ends"
)
UNDEFINED: dict[str, str] = {
    "LFM2.5-8B-A1B.jinja/null content, nested call": _UNQUOTED,
    "LFM2.5-8B-A1B.jinja/content + two calls": _UNQUOTED,
    "LFM2.5-8B-A1B.jinja/reasoning + content + two calls": _UNQUOTED,
    "LFM2.5-8B-A1B.jinja/after a tool result, another call": _UNQUOTED,
    "Apriel-1.6-15b-Thinker-fixed.jinja/multi-line": _APRIEL,
    "Apriel-1.6-15b-Thinker-fixed.jinja/after a tool result": _APRIEL,
}
CASES = [case for name in template_names() for case in wide_cases(read_template(name), name)]


def _id(case: Case) -> str:
    return f"{case.template_name}/{case.label}"


def _parser(case: Case):  # type: ignore[no-untyped-def]
    analysis = analyze(read_template(case.template_name))
    return make_output_parser(
        analysis, tools=case.tools, generation_prompt=case.generation_prompt, id_prefix="call_"
    )


def test_the_corpus_is_wide() -> None:
    assert len({c.template_name for c in CASES}) >= 100
    assert len(CASES) >= 1200
    assert sum(1 for c in CASES if len(c.expected.tool_calls) == 2) >= 60
    assert set(UNDEFINED) <= {_id(c) for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_wide_round_trip(case: Case) -> None:
    parser = _parser(case)
    feed_all(parser, [case.output])
    got = normalized(parser.message())
    if _id(case) in UNDEFINED:
        assert got != case.expected, f"{_id(case)} passes now: remove it from UNDEFINED"
    else:
        assert got == case.expected


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_wide_streaming_invariance(case: Case) -> None:
    whole = _parser(case)
    whole_events = feed_all(whole, [case.output])
    text = case.output
    chunkings = [list(text)] + [random_pieces(text, seed) for seed in range(2)]
    chunkings += [[text[:i], text[i:]] for i in range(1, len(text), 7)]  # cut at every 7th character
    for pieces in chunkings:
        parser = _parser(case)
        events = feed_all(parser, pieces)
        assert parser.message() == whole.message(), pieces
        assert joined(events) == joined(whole_events)
