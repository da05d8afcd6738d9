"""`oneOf` branches proven disjoint (listed values outside a pattern, patterns with no common string)
compile as a plain union; the others stay checked side by side."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.constrain.chars import schema_accepts
from tests.unit.constrain.conftest import Greedy, mask_ids
from tests.unit.constrain.test_negation import _combos
from tests.unit.constrain.test_vocab_masks import _brute_force
from tokenloom.constrain.api import compile
from tokenloom.engine.vocab import Vocab

# schemastore dart-test's timeout: 3.7 s for the mask after its opening quote while checked
TIMEOUT: dict[str, Any] = {
    "oneOf": [
        {"enum": ["none"]},
        {"type": "string", "pattern": r"^(?:[^a-df-zA-DF-Z\s]+(?:[umUM][sS]|[dhmsDHMS])\s?)+$"},
        {"type": "string", "pattern": r"^[^a-df-zA-DF-Z\s]+[xX]$"},
    ]
}


def _accepts(schema: Any, value: Any) -> bool:
    return schema_accepts(schema, json.dumps(value))


@pytest.mark.parametrize(
    ("schema", "combos"),
    [
        (TIMEOUT, 0),
        ({"oneOf": [{"enum": ["none", 3]}, {"type": "string", "pattern": "^[0-9]+$"}]}, 0),
        ({"oneOf": [{"enum": ["12"]}, {"type": "string", "pattern": "^[0-9]+$"}]}, 1),  # "12" is in both
        ({"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]}, 1),  # "ab"
        ({"oneOf": [{"type": "string", "pattern": "^a+$"}, {"type": "string", "pattern": "^b+$"}]}, 0),
        ({"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string"}]}, 1),
        ({"oneOf": [{"enum": [2]}, {"type": "number"}]}, 1),
        ({"oneOf": [{"enum": [2.5]}, {"type": "integer"}]}, 0),
    ],
)
def test_proven_disjoint_one_of_is_plain(schema: dict[str, Any], combos: int) -> None:
    assert _combos(schema) == combos


def test_timeout_values() -> None:
    for good in ("none", "1m", "30s", "1m 30s", "12x", "1.5X"):
        assert _accepts(TIMEOUT, good), good
    for bad in ("never", "12", "x", "1m x", 3):
        assert not _accepts(TIMEOUT, bad), bad


def test_overlapping_patterns_still_exactly_one() -> None:
    s = {"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "b$"}]}
    assert _accepts(s, "ac") and _accepts(s, "cb")
    assert not _accepts(s, "ab") and not _accepts(s, "c")


def test_timeout_mask_equals_brute_force(vocab: Vocab, greedy: Greedy) -> None:
    c = compile({"json_schema": TIMEOUT}, vocab)
    for prefix in ('"', "1m "):
        assert greedy.tokens(c, prefix) is not None
        assert mask_ids(c.allowed()) == _brute_force(c, vocab)  # type: ignore[arg-type]
