"""llama.cpp's own chat-parser expectations (tests/golden/llamacpp/cases.jsonl, from test-chat.cpp at b11434)
through the parser the server uses, whole and split every way; a listed known miss must stay a miss (so
the list never hides a fix) and every other case must pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEMPLATES
from tokenloom.cli.conformance import case_id, check, load_cases

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "llamacpp"
CASES = load_cases(GOLDEN / "cases.jsonl")
KNOWN_MISSES: dict[str, str] = json.loads((GOLDEN / "known_misses.json").read_text(encoding="utf-8"))


def test_the_golden_holds_every_test_chat_case() -> None:
    assert len(CASES) == 473  # 435 .run() chains of test-chat.cpp, loops over templates expanded
    assert len({case_id(c) for c in CASES}) == len(CASES)
    assert set(KNOWN_MISSES) <= {case_id(c) for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_llamacpp_expectation(case: dict[str, Any]) -> None:
    problem = check(case, TEMPLATES, num_splits=3, every_cut=True)
    if case_id(case) in KNOWN_MISSES:
        assert problem is not None, f"{case_id(case)} passes now: remove it from known_misses.json"
    else:
        assert problem is None, problem
