"""Structured-output benchmark: tokenloom.constrain beside xgrammar and llguidance, one run, one vocabulary.

Every engine gets the Gemma 3 token bytes of the default model's GGUF; engines alternate per schema (the
first one rotates). Per schema and engine: compile (timed), follow the first valid instance token by token
in three forms (compact and pretty in the instance's own property order, compact in schema order), then
generate with a random policy (each step a random allowed token; the end whenever allowed) and check each
finished output with `jsonschema` (formats checked). Every mask and compile is timed in the calling
thread's CPU time (a busy machine does not inflate it); --schema-seconds is process CPU time. With
--all-instances each test instance, valid or not, is then followed untimed (schema order, compact): valid
ones must pass, invalid ones not.

Sets: `shared` (the 230 of ../shared/bench/schemas.jsonl), `hard` (benchmarks/data/hard_schemas.jsonl,
collected from SchemaStore, plus benchmarks/data/pathological_schemas.jsonl, the shapes of issue 12, which
`issue12` runs alone).

    python benchmarks/structured.py [--set shared|hard|issue12|both] [--limit N] [--engines a,b,...]
        [--any-order] [--random 2] [--max-steps 200] [--schema-seconds 60] [--all-instances]
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
from jsonschema.validators import validator_for

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from structured_engines import BoolArray, CompileFailed, Engine, Session, make_engines  # noqa: E402
from structured_report import print_report  # noqa: E402

from tokenloom.constrain.order import schema_order  # noqa: E402
from tokenloom.constrain.pattern_mask import table_for  # noqa: E402
from tokenloom.constrain.regex import Regex  # noqa: E402
from tokenloom.constrain.trie import trie_for  # noqa: E402
from tokenloom.engine.vocab import Tokenizer, load_tokenizer  # noqa: E402
from tokenloom.runtime import tune_gc  # noqa: E402

SETS = {
    "shared": [ROOT.parent / "shared" / "bench" / "schemas.jsonl"],
    "issue12": [ROOT / "benchmarks" / "data" / "pathological_schemas.jsonl"],
    "hard": [
        ROOT / "benchmarks" / "data" / "hard_schemas.jsonl",
        ROOT / "benchmarks" / "data" / "pathological_schemas.jsonl",
    ],
}
FORMS = ("original compact", "original pretty", "schema order compact")
_STRUCTURAL = frozenset(b'"{}[],:')


class Timeout(BaseException):
    """The engine's time for one schema ran out (a BaseException: an engine's `except Exception` around
    its compile must not record it as a compile failure)."""


# A Timeout raised where Python swallows exceptions (a __del__, a GC callback, an engine's own handler)
# would let the schema run on: until the budget is lifted, the signal comes back this often.
_AGAIN_S = 0.05
_armed = [False]


def _alarm(_sig: int, _frame: Any) -> None:
    if not _armed[0]:
        return
    signal.setitimer(signal.ITIMER_PROF, _AGAIN_S)
    raise Timeout


def cpu_limit(seconds: float) -> None:
    """Raise Timeout after `seconds` of this process's CPU time (0: none), and again every 50 ms until
    lifted, so a swallowed one does not end the budget; a busy machine does not count."""
    _armed[0] = seconds > 0
    signal.setitimer(signal.ITIMER_PROF, seconds)


@dataclass
class Tally:
    """What one engine did on one set."""

    compiled: int = 0
    compile_s: list[float] = field(default_factory=list)
    mask_s_by_schema: dict[str, list[float]] = field(default_factory=dict)
    followed: dict[str, list[int]] = field(default_factory=lambda: {f: [0, 0] for f in FORMS})
    generated: int = 0
    finished: int = 0
    invalid: int = 0
    stuck: int = 0
    timeouts: int = 0
    instances: dict[str, list[int]] = field(default_factory=lambda: {"valid": [0, 0], "invalid": [0, 0]})
    failures: list[str] = field(default_factory=list)


class Run:
    """The loop over schemas for every engine, with the shared tokenizer and the random policy's tables."""

    def __init__(self, engines: list[Engine], tokenizer: Tokenizer, args: argparse.Namespace) -> None:
        self.engines = engines
        self.tok = tokenizer
        vocab = tokenizer.vocab
        self.eog = min(vocab.eog_ids)
        self.args = args
        self.pieces = vocab.pieces
        ordinary = np.ones(vocab.n_vocab, dtype=np.bool_)
        ordinary[sorted(vocab.special_ids | vocab.eog_ids)] = False
        self.ordinary = ordinary
        self.structural = np.array(
            [len(p) <= 1 or not _STRUCTURAL.isdisjoint(p) for p in vocab.pieces], dtype=np.bool_
        )

    def schema(self, row: dict[str, Any], order: int, tallies: dict[str, Tally]) -> None:
        engines = self.engines[order:] + self.engines[:order]
        for engine in engines:
            tally = tallies[engine.name]
            t0 = time.process_time()
            cpu_limit(self.args.schema_seconds)
            try:
                self._one(engine, row, tally)
            except Timeout:
                cpu_limit(0)
                tally.timeouts += 1
                tally.failures.append(f"{row['id']}: over {self.args.schema_seconds} s")
            finally:
                cpu_limit(0)
            used = time.process_time() - t0
            if self.args.schema_seconds and used > self.args.schema_seconds + 1:
                # a C call the signal cannot interrupt: shown, so the budget's misses are never silent
                tally.failures.append(f"{row['id']}: budget overrun, {used:.1f} s CPU")

    def _one(self, engine: Engine, row: dict[str, Any], tally: Tally) -> None:
        schema = row["schema"]
        t0 = time.thread_time()
        try:
            compiled = engine.compile(schema, self.args.any_order)
        except CompileFailed as e:
            tally.failures.append(f"{row['id']}: compile: {e}")
            return
        tally.compile_s.append(time.thread_time() - t0)
        tally.compiled += 1
        times = tally.mask_s_by_schema.setdefault(row["id"], [])
        valid = [t["data"] for t in row["tests"] if t["valid"]]
        if valid:
            for form, text in zip(FORMS, forms_of(valid[0], schema), strict=True):
                tally.followed[form][1] += 1
                ok = self.follow(engine.start(compiled), text, times)
                tally.followed[form][0] += ok
                if not ok:
                    tally.failures.append(f"{row['id']}: {form} instance rejected")
        validator = checker(schema)
        for k in range(self.args.random):
            seed = zlib.crc32(row["id"].encode()) + k
            made = self.generate(engine.start(compiled), random.Random(seed), times)
            tally.generated += 1
            if made is None:
                continue
            text = made
            if text == "\0stuck":
                tally.stuck += 1
                tally.failures.append(f"{row['id']}: random policy reached a state with nothing allowed")
                continue
            tally.finished += 1
            if not is_valid(validator, text):
                tally.invalid += 1
                tally.failures.append(f"{row['id']}: invalid output {text[:120]!r}")
        for t in row["tests"] if self.args.all_instances else []:
            text = json.dumps(schema_order(t["data"], schema), ensure_ascii=False, separators=(",", ":"))
            key = "valid" if t["valid"] else "invalid"
            ok = self.follow(engine.start(compiled), text, None)
            tally.instances[key][1] += 1
            tally.instances[key][0] += ok if t["valid"] else not ok

    def follow(self, session: Session, text: str, times: list[float] | None) -> bool:
        """Each token of `text` allowed in turn, then the end allowed."""
        for token_id in [*self.tok.tokenize(text, parse_special=False), self.eog]:
            t0 = time.thread_time()
            session.compute_mask()
            if times is not None:
                times.append(time.thread_time() - t0)
            if not session.mask()[token_id]:
                return False
            if token_id != self.eog and not session.advance(token_id):
                return False
        return True

    def generate(self, session: Session, rng: random.Random, times: list[float]) -> str | None:
        """Random tokens the engine allows until it allows the end (the text), None if unfinished."""
        out: list[bytes] = []
        for _ in range(self.args.max_steps):
            t0 = time.thread_time()
            session.compute_mask()
            times.append(time.thread_time() - t0)
            mask: BoolArray = session.mask()
            if mask[self.eog]:
                return b"".join(out).decode("utf-8", "replace")
            allowed = mask & self.ordinary
            if rng.random() < 0.5 and (allowed & self.structural).any():
                allowed = allowed & self.structural  # half the steps: tokens that may close a value
            ids = np.flatnonzero(allowed)
            if not len(ids):
                return "\0stuck"
            token_id = int(ids[rng.randrange(len(ids))])
            if not session.advance(token_id):
                return "\0stuck"
            out.append(self.pieces[token_id])
        return None


def warm_up(vocab: Any) -> None:
    """Build the vocabulary trie and the pattern views once, before any schema (as a server's first
    constrained request does), so no schema's time pays for them."""
    table_for(Regex("a"), trie_for(vocab))


def forms_of(data: Any, schema: Any) -> tuple[str, str, str]:
    return (
        json.dumps(data, ensure_ascii=False, separators=(",", ":")),
        json.dumps(data, ensure_ascii=False, indent=2),
        json.dumps(schema_order(data, schema), ensure_ascii=False, separators=(",", ":")),
    )


def checker(schema: Any) -> Any:
    try:
        cls = validator_for(schema)
        return cls(schema, format_checker=cls.FORMAT_CHECKER)
    except jsonschema.SchemaError:
        return None


def is_valid(validator: Any, text: str) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return validator is None or validator.is_valid(data)


def load(name: str, limit: int) -> list[dict[str, Any]]:
    rows = []
    for path in SETS[name]:
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not limit or limit >= len(rows):
        return rows
    return [rows[i * len(rows) // limit] for i in range(limit)]  # spread over the set, in its order


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", choices=["shared", "hard", "issue12", "both"], default="both")
    ap.add_argument("--limit", type=int, default=0, help="N schemas of each set, evenly spaced")
    ap.add_argument("--all-instances", action="store_true", help="also follow every test instance, untimed")
    ap.add_argument("--engines", default="tokenloom,xgrammar,llguidance")
    ap.add_argument("--any-order", action="store_true", help="properties in any order (each engine's switch)")
    ap.add_argument("--random", type=int, default=2, help="random-policy generations per schema")
    ap.add_argument("--max-steps", type=int, default=200)
    ap.add_argument("--schema-seconds", type=int, default=60, help="time of one engine on one schema")
    ap.add_argument("--default-gc", action="store_true", help="keep CPython's GC thresholds (no tune_gc)")
    args = ap.parse_args()
    tok = load_tokenizer()
    engines = make_engines(args.engines.split(","), tok.vocab, tok)
    if not args.default_gc:
        tune_gc()  # as the server does after loading (tokenloom/runtime.py); every engine runs under it
    signal.signal(signal.SIGPROF, _alarm)
    if "tokenloom" in args.engines.split(","):
        t0 = time.thread_time()
        warm_up(tok.vocab)
        print(
            f"tokenloom trie and pattern tables built in {time.thread_time() - t0:.2f} s CPU", file=sys.stderr
        )
    run = Run(engines, tok, args)
    result: dict[str, Any] = {"args": vars(args)}
    for set_name in ["shared", "hard"] if args.set == "both" else [args.set]:
        rows = load(set_name, args.limit)
        tallies = {e.name: Tally() for e in engines}
        for i, row in enumerate(rows):
            if i % 10 == 0:
                print(f"{set_name}: {i}/{len(rows)} schemas", file=sys.stderr, flush=True)
            run.schema(row, i % len(engines), tallies)
        result[set_name] = print_report(set_name, len(rows), tallies, args)
    print("RESULT_JSON " + json.dumps(result))


if __name__ == "__main__":
    main()
