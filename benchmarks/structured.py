"""Structured-output benchmark: tokenloom.constrain beside xgrammar and llguidance, one run, one vocabulary.

Every engine gets the Gemma 3 token bytes of the default model's GGUF; engines alternate per schema (the
first one rotates). Each engine runs in its own worker process (structured_workers.py), forked once after
the tokenizer is loaded and kept for the whole set, so its caches stay warm as in a server; it first
compiles and uses one small schema, untimed. Per schema and engine: compile (timed; over --compile-seconds
of CPU it is a compile timeout, even inside C: the kernel ends the worker and a fresh one is forked), follow
the first valid instance token by token in three forms (compact and pretty in the instance's own property
order, compact in schema order), then generate with a random policy (each step a random allowed token; the
end whenever allowed) and check each finished output with `jsonschema` (formats checked). Every mask and
compile is timed in the worker thread's CPU time (a busy machine does not inflate it); the budgets are the
worker process's CPU time: --compile-seconds for the compile, then --schema-seconds for the rest. With
--all-instances each test instance, valid or not, is then followed untimed (schema order, compact): valid
ones must pass, invalid ones not. The report notes /proc/pressure/cpu at start and end.

Sets: `shared` (the 230 of ../shared/bench/schemas.jsonl), `hard` (benchmarks/data/hard_schemas.jsonl,
collected from SchemaStore, plus benchmarks/data/pathological_schemas.jsonl, the shapes of issue 12, which
`issue12` runs alone).

    python benchmarks/structured.py [--set shared|hard|issue12|both] [--limit N] [--engines a,b,...]
        [--any-order] [--random 2] [--max-steps 200] [--compile-seconds 30] [--schema-seconds 60]
        [--all-instances]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import random
import signal
import subprocess
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
from structured_workers import Send, Timeout, Worker, limit_cpu  # noqa: E402

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
# Compiled and used once by each worker before the set, untimed: first calls and copied pages paid there.
WARM_UP = {
    "id": "warm-up",
    "schema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "integer"}}},
        "required": ["name"],
    },
    "tests": [{"data": {"name": "a", "tags": [1, 2]}, "valid": True}],
}


@dataclass
class Tally:
    """What one engine did on one set (or, from a worker, on one schema)."""

    compiled_ids: list[str] = field(default_factory=list)
    compile_s: list[float] = field(default_factory=list)
    compile_timeouts: list[str] = field(default_factory=list)
    mask_s_by_schema: dict[str, list[float]] = field(default_factory=dict)
    followed: dict[str, list[int]] = field(default_factory=lambda: {f: [0, 0] for f in FORMS})
    generated: int = 0
    finished: int = 0
    invalid: int = 0
    stuck: int = 0
    timeouts: int = 0
    worker_deaths: int = 0
    instances: dict[str, list[int]] = field(default_factory=lambda: {"valid": [0, 0], "invalid": [0, 0]})
    failures: list[str] = field(default_factory=list)

    @property
    def compiled(self) -> int:
        return len(self.compiled_ids)

    def add(self, other: Tally) -> None:
        self.compiled_ids += other.compiled_ids
        self.compile_s += other.compile_s
        self.compile_timeouts += other.compile_timeouts
        self.mask_s_by_schema.update(other.mask_s_by_schema)
        for table, more in ((self.followed, other.followed), (self.instances, other.instances)):
            for key, (ok, n) in more.items():
                table[key][0] += ok
                table[key][1] += n
        self.generated += other.generated
        self.finished += other.finished
        self.invalid += other.invalid
        self.stuck += other.stuck
        self.timeouts += other.timeouts
        self.worker_deaths += other.worker_deaths
        self.failures += other.failures


class Run:
    """One engine's work on one schema at a time (in its worker), with the shared tokenizer and the random
    policy's tables."""

    def __init__(self, engine: Engine, tokenizer: Tokenizer, args: argparse.Namespace) -> None:
        self.engine = engine
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

    def schema(self, row: dict[str, Any], send: Send) -> None:
        """Compile within --compile-seconds, then the rest within --schema-seconds; says "compiled" (with
        the compile's CPU seconds) as soon as it is, then "tally"."""
        tally = Tally()
        try:
            self._schema(row, tally, send)
        except Timeout:  # raised again in a handler, past the phase's own except
            limit_cpu(0)
            tally.timeouts += 1
            tally.failures.append(f"{row['id']}: over the time limit")
        send("tally", tally)

    def _schema(self, row: dict[str, Any], tally: Tally, send: Send) -> None:
        args = self.args
        limit_cpu(args.compile_seconds)
        try:
            t0 = time.thread_time()
            compiled = self.engine.compile(row["schema"], args.any_order)
            seconds = time.thread_time() - t0
        except CompileFailed as e:
            limit_cpu(0)
            tally.failures.append(f"{row['id']}: compile: {e}")
            return
        except Timeout:
            limit_cpu(0)
            tally.compile_timeouts.append(row["id"])
            tally.failures.append(f"{row['id']}: compile timeout, over {args.compile_seconds} s")
            return
        finally:
            limit_cpu(0)
        send("compiled", seconds)
        tally.compiled_ids.append(row["id"])
        tally.compile_s.append(seconds)
        limit_cpu(args.schema_seconds)
        try:
            self._use(compiled, row, tally)
        except Timeout:
            limit_cpu(0)
            tally.timeouts += 1
            tally.failures.append(f"{row['id']}: over {args.schema_seconds} s after the compile")
        finally:
            limit_cpu(0)

    def _use(self, compiled: Any, row: dict[str, Any], tally: Tally) -> None:
        engine, schema = self.engine, row["schema"]
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


def cpu_pressure() -> str:
    """The machine's CPU pressure line ("some avg10=... avg60=... avg300=..."), or why there is none."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError as e:
        return f"unavailable ({e.strerror})"
    return " ".join(first.split()[:4])


def versions(names: list[str]) -> dict[str, str]:
    out = {}
    for name in names:
        if name == "tokenloom":
            head = subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
            )
            out[name] = f"git {head.stdout.strip() or '?'}"
        else:
            try:
                out[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                out[name] = "?"
    return out


def worker_setup(name: str, tok: Tokenizer, args: argparse.Namespace) -> Any:
    """What a fresh worker for engine `name` does before its first schema; returns its handler."""

    def setup() -> Any:
        [engine] = make_engines([name], tok.vocab, tok)
        if not args.default_gc:
            tune_gc()  # as the server does after loading (tokenloom/runtime.py); every engine runs under it
        if name == "tokenloom":
            t0 = time.thread_time()
            warm_up(tok.vocab)
            print(
                f"tokenloom trie and pattern tables built in {time.thread_time() - t0:.2f} s CPU",
                file=sys.stderr,
            )
        run = Run(engine, tok, args)
        run.schema(WARM_UP, lambda _kind, _payload: None)
        return run.schema

    return setup


def ask(worker: Worker, row: dict[str, Any]) -> tuple[Tally, str]:
    """One schema on one engine's worker: its tally (a worker that died is accounted) and a word on it."""
    reply = worker.ask(row)
    tallies = [payload for kind, payload in reply.messages if kind == "tally"]
    if tallies:
        part = tallies[0]
        state = "compiled" if part.compiled else "timeout" if part.compile_timeouts else "refused"
        return part, f"{worker.name} {state} {reply.cpu_s:.1f} s"
    part = Tally(worker_deaths=1)
    how = f"worker {reply.death} after {reply.cpu_s:.1f} s CPU"
    compiled = [payload for kind, payload in reply.messages if kind == "compiled"]
    if compiled:
        part.compiled_ids.append(row["id"])
        part.compile_s.append(compiled[0])
        part.timeouts += 1
        part.failures.append(f"{row['id']}: {how}, after its compile: its mask times are lost")
    elif "SIGXCPU" in str(reply.death) or "stalled" in str(reply.death):
        part.compile_timeouts.append(row["id"])
        part.failures.append(f"{row['id']}: compile timeout: {how}")
    else:
        part.failures.append(f"{row['id']}: compile crashed: {how}")
    return part, f"{worker.name} {reply.death} {reply.cpu_s:.1f} s"


class Stop(Exception):
    """SIGTERM or SIGUSR1 to the benchmark: report the schemas done so far, then end."""


def _stop(sig: int, _frame: Any) -> None:
    raise Stop(signal.Signals(sig).name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", choices=["shared", "hard", "issue12", "both"], default="both")
    ap.add_argument("--limit", type=int, default=0, help="N schemas of each set, evenly spaced")
    ap.add_argument("--all-instances", action="store_true", help="also follow every test instance, untimed")
    ap.add_argument("--engines", default="tokenloom,xgrammar,llguidance")
    ap.add_argument("--any-order", action="store_true", help="properties in any order (each engine's switch)")
    ap.add_argument("--random", type=int, default=2, help="random-policy generations per schema")
    ap.add_argument("--max-steps", type=int, default=200)
    ap.add_argument(
        "--compile-seconds", type=int, default=30, help="CPU time of one compile (then a timeout)"
    )
    ap.add_argument(
        "--schema-seconds",
        type=int,
        default=60,
        help="CPU time of one engine on one schema after its compile",
    )
    ap.add_argument("--default-gc", action="store_true", help="keep CPython's GC thresholds (no tune_gc)")
    args = ap.parse_args()
    names = args.engines.split(",")
    pressure = {"start": cpu_pressure()}
    result: dict[str, Any] = {"args": vars(args), "versions": versions(names)}
    print("engines: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()), file=sys.stderr)
    tok = load_tokenizer()
    if not args.default_gc:
        tune_gc()  # what the workers inherit is frozen: the collector never touches (and copies) it
    workers = [Worker(name, worker_setup(name, tok, args)) for name in names]
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGUSR1, _stop)
    try:
        for set_name in ["shared", "hard"] if args.set == "both" else [args.set]:
            rows = load(set_name, args.limit)
            tallies = {name: Tally() for name in names}
            done, cut = 0, ""
            try:
                for i, row in enumerate(rows):
                    if i % 10 == 0:
                        print(f"{set_name}: cpu {cpu_pressure()}", file=sys.stderr, flush=True)
                    order = i % len(workers)
                    parts = [ask(worker, row) for worker in workers[order:] + workers[:order]]
                    for worker, (part, _) in zip(workers[order:] + workers[:order], parts, strict=True):
                        tallies[worker.name].add(part)
                    done = i + 1
                    words = "; ".join(word for _, word in parts)
                    print(f"{set_name} {done}/{len(rows)} {row['id']}: {words}", file=sys.stderr, flush=True)
            except Stop as e:
                cut = f"cut short by {e} after {done} of {len(rows)} schemas"
            pressure["end"] = cpu_pressure()
            result[set_name] = print_report(set_name, done, tallies, args, pressure, cut)
            if cut:
                result[set_name + "_cut"] = cut
                break
    finally:
        for worker in workers:
            worker.stop()
    result["cpu_pressure"] = pressure
    print("RESULT_JSON " + json.dumps(result))


if __name__ == "__main__":
    main()
