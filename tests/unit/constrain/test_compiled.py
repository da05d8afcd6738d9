"""The mask engine as the install compiled it (mypyc, setup.py) against its Python source, which stays
the reference: the same masks, token by token, on real schemas of the benchmark set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import tokenloom.constrain.parser as parser_module
from tests.conftest import REPO_ROOT
from tokenloom.constrain.compiled import compiled_modules, stale

# What setup.py compiles: the parser states and JSON frames, the trie walk, the regex automaton, char
# sets, the trie.
COMPILED = {
    "charset", "trie", "parser", "mask", "regex", "regex_horizon", "pattern_mask", "unique_mask",
    "schema_ir", "number", "json_frames", "json_containers", "json_objects", "json_probe", "json_unique",
    "json_partial", "json_checks", "json_values",
}  # fmt: skip

# Follows each (schema, text) pair token by token in a fresh process (up to a token the schema's property
# order refuses) and prints a digest of every mask on the way, and where the parser module came from.
_FOLLOW = """
import hashlib, json, sys
import numpy as np
import tokenloom.constrain.parser as parser
from tokenloom.constrain import compile
from tokenloom.engine.vocab import load_tokenizer
from tokenloom.errors import GrammarError

tok = load_tokenizer()
digests = []
for schema, text in json.load(sys.stdin):
    c = compile({"json_schema": schema}, tok.vocab)
    for token_id in tok.tokenize(text, parse_special=False):
        digests.append(hashlib.sha1(np.packbits(c.allowed()).tobytes()).hexdigest())
        try:
            c.advance(token_id)
        except GrammarError:  # another property order than the schema's: stop here
            digests.append("refused")
            break
    else:
        digests.append(hashlib.sha1(np.packbits(c.allowed()).tobytes()).hexdigest())
print(json.dumps({"parser": parser.__file__, "digests": digests}))
"""


def _follow(pairs: list[tuple[Any, str]], pure: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TOKENLOOM_PURE_PYTHON"}
    if pure:
        env["TOKENLOOM_PURE_PYTHON"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", _FOLLOW],
        input=json.dumps(pairs),
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=600,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_install_compiled_the_mask_engine() -> None:
    """The README's install compiles these modules (gcc is among its requirements); built from this
    very source, or the comparison below would hold an old build to the new source."""
    assert set(compiled_modules()) >= COMPILED
    assert stale() == []
    assert not parser_module.__file__.endswith(".py")


def test_compiled_and_source_give_the_same_masks(bench_rows: list[dict[str, Any]]) -> None:
    """Every mask along the valid instances of schemas with patterns, formats, nested objects and
    arrays, from the compiled modules and from their source (TOKENLOOM_PURE_PYTHON)."""
    pairs: list[tuple[Any, str]] = []
    for row in bench_rows:
        text = json.dumps(row["schema"])
        if not any(key in text for key in ('"pattern"', '"format"', '"items"')):
            continue
        valid = [t["data"] for t in row.get("tests", []) if t.get("valid")]
        if valid:
            pairs.append((row["schema"], json.dumps(valid[0], separators=(",", ":"))))
        if len(pairs) == 12:
            break
    assert len(pairs) == 12
    compiled = _follow(pairs, pure=False)
    source = _follow(pairs, pure=True)
    assert not compiled["parser"].endswith(".py")
    assert source["parser"].endswith("parser.py")
    assert len(compiled["digests"]) > 300
    assert compiled["digests"] == source["digests"]
