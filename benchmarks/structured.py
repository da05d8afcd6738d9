"""Structured-output benchmark: tokenloom.constrain vs lm-format-enforcer on 230 real JSON Schemas.

For each schema of ../shared/bench/schemas.jsonl: compile, then follow its first valid instance
(compact JSON, keys in schema order, tokenized by the real Gemma 3 tokenizer) token by token, timing
each mask; the output is valid if every token was allowed, the end was accepted and `jsonschema`
validates it. tokenloom is also checked on every valid instance (compact and pretty) and every
invalid one (must not complete).

    python benchmarks/structured.py [--limit N] [--no-lmfe] [--default-gc]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tokenloom.constrain import compile as tl_compile  # noqa: E402
from tokenloom.constrain.order import schema_order  # noqa: E402
from tokenloom.constrain.trie import trie_for  # noqa: E402
from tokenloom.engine.vocab import Vocab, load_tokenizer  # noqa: E402
from tokenloom.errors import GrammarError  # noqa: E402
from tokenloom.runtime import tune_gc  # noqa: E402

DATA = ROOT.parent / "shared" / "bench" / "schemas.jsonl"
PER_SCHEMA_SECONDS = 30


class Timeout(Exception):
    pass


def _alarm(_sig: int, _frame: Any) -> None:
    raise Timeout


def valid_output(schema: Any, text: str) -> bool:
    try:
        jsonschema.validate(json.loads(text), schema)
        return True
    except (jsonschema.ValidationError, jsonschema.SchemaError, ValueError):
        return False


def force_tokenloom(c: Any, tokens: list[int], eog: int, times: list[float] | None) -> bool:
    """Follow `tokens` through the mask; True if each was allowed and EOG is allowed at the end."""
    for tok in tokens:
        t0 = time.perf_counter()
        mask = c.allowed()
        if times is not None:
            times.append(time.perf_counter() - t0)
        if not mask[tok]:
            return False
        c.advance(tok)
    t0 = time.perf_counter()
    mask = c.allowed()
    if times is not None:
        times.append(time.perf_counter() - t0)
    return bool(mask[eog])


def run_tokenloom(rows: list[dict[str, Any]], vocab: Vocab, tok: Any) -> dict[str, Any]:
    eog = min(vocab.eog_ids)
    compiled = 0
    compile_times: list[float] = []
    times: list[float] = []
    outputs_ok = 0
    attempted = 0
    checked = {"valid": 0, "valid_forced": 0, "invalid": 0, "invalid_rejected": 0}
    failures: list[str] = []
    for row in rows:
        spec = {"json_schema": row["schema"]}
        t0 = time.perf_counter()
        try:
            c = tl_compile(spec, vocab)
        except GrammarError as e:
            failures.append(f"{row['id']}: compile: {e.message}")
            continue
        compile_times.append(time.perf_counter() - t0)
        compiled += 1
        valid = [schema_order(t["data"], row["schema"]) for t in row["tests"] if t["valid"]]
        if valid:
            attempted += 1
            text = json.dumps(valid[0], ensure_ascii=False, separators=(",", ":"))
            if force_tokenloom(c, tok.tokenize(text, parse_special=False), eog, times) and valid_output(
                row["schema"], text
            ):
                outputs_ok += 1
        for t in row["tests"]:
            data = schema_order(t["data"], row["schema"])
            texts = [json.dumps(data, ensure_ascii=False, separators=(",", ":"))]
            texts.append(json.dumps(data, ensure_ascii=False, indent=2))
            for text in texts:
                ok = force_tokenloom(
                    tl_compile(spec, vocab), tok.tokenize(text, parse_special=False), eog, None
                )
                key = "valid" if t["valid"] else "invalid"
                checked[key] += 1
                checked[key + ("_forced" if t["valid"] else "_rejected")] += ok if t["valid"] else not ok
                if ok != t["valid"]:
                    failures.append(f"{row['id']}: {key} instance {'rejected' if t['valid'] else 'accepted'}")
    return {
        "compiled": compiled,
        "compile_times": compile_times,
        "times": times,
        "outputs_ok": outputs_ok,
        "attempted": attempted,
        "checked": checked,
        "failures": failures,
    }


def lmfe_tokenizer_data(vocab: Vocab) -> Any:
    from lmformatenforcer import TokenEnforcerTokenizerData

    regular = []
    for i, piece in enumerate(vocab.pieces):
        if i in vocab.special_ids or not piece:
            continue
        try:
            regular.append((i, piece.decode("utf-8"), False))
        except UnicodeDecodeError:
            regular.append((i, "\ufffd", False))

    def decode(ids: list[int]) -> str:
        data = b"".join(vocab.pieces[i] for i in ids if i not in vocab.special_ids)
        return data.decode("utf-8", "ignore")

    return TokenEnforcerTokenizerData(regular, decode, sorted(vocab.eog_ids), False, vocab.n_vocab)


def run_lmfe(rows: list[dict[str, Any]], vocab: Vocab, tok: Any) -> dict[str, Any]:
    from lmformatenforcer import JsonSchemaParser, TokenEnforcer

    t0 = time.perf_counter()
    data = lmfe_tokenizer_data(vocab)
    setup = time.perf_counter() - t0
    eog = min(vocab.eog_ids)
    compiled = 0
    compile_times: list[float] = []
    times: list[float] = []
    outputs_ok = 0
    attempted = 0
    signal.signal(signal.SIGALRM, _alarm)
    for i, row in enumerate(rows):
        if i % 20 == 0:
            print(f"lm-format-enforcer: {i}/{len(rows)} schemas", file=sys.stderr, flush=True)
        valid = [schema_order(t["data"], row["schema"]) for t in row["tests"] if t["valid"]]
        signal.alarm(PER_SCHEMA_SECONDS)
        try:
            t0 = time.perf_counter()
            enforcer = TokenEnforcer(data, JsonSchemaParser(row["schema"]))
            compile_times.append(time.perf_counter() - t0)
            compiled += 1
            if not valid:
                continue
            attempted += 1
            text = json.dumps(valid[0], ensure_ascii=False, separators=(",", ":"))
            tokens = tok.tokenize(text, parse_special=False)
            prefix: list[int] = [vocab.bos_id or 0]
            ok = True
            for t in [*tokens, eog]:
                t1 = time.perf_counter()
                allowed = enforcer.get_allowed_tokens(prefix).allowed_tokens
                times.append(time.perf_counter() - t1)
                if t not in set(allowed):
                    ok = False
                    break
                prefix.append(t)
            outputs_ok += ok and valid_output(row["schema"], text)
        except Timeout:
            pass
        except Exception:
            compiled -= 0
        finally:
            signal.alarm(0)
    return {
        "compiled": compiled,
        "compile_times": compile_times,
        "times": times,
        "outputs_ok": outputs_ok,
        "setup": setup,
        "attempted": attempted,
    }


def summary(res: dict[str, Any], n: int) -> dict[str, float]:
    times = sorted(res["times"]) or [0.0]
    return {
        "coverage_pct": 100.0 * res["compiled"] / n,
        "compile_ms_median": 1e3 * statistics.median(res["compile_times"] or [0.0]),
        "mask_us_mean": 1e6 * statistics.fmean(times),
        "mask_us_p99": 1e6 * times[min(len(times) - 1, int(0.99 * len(times)))],
        # of the schemas that compiled and have a valid instance: was that instance followed and valid?
        "valid_pct": 100.0 * res["outputs_ok"] / max(res["attempted"], 1),
        "steps": len(res["times"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--no-lmfe", action="store_true")
    ap.add_argument("--default-gc", action="store_true", help="keep CPython's GC thresholds (no tune_gc)")
    args = ap.parse_args()
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    if args.limit:
        rows = rows[: args.limit]
    tok = load_tokenizer()
    vocab = tok.vocab
    t0 = time.perf_counter()
    trie_for(vocab)
    trie_s = time.perf_counter() - t0
    if not args.default_gc:
        tune_gc()  # as the server does after loading (tokenloom/runtime.py); both libraries run under it
    ours = run_tokenloom(rows, vocab, tok)
    table = {"tokenloom": summary(ours, len(rows))}
    if not args.no_lmfe:
        theirs = run_lmfe(rows, vocab, tok)
        table["lm-format-enforcer"] = summary(theirs, len(rows))
    gc_mode = "CPython defaults" if args.default_gc else "tokenloom.runtime.tune_gc, as the server"
    print(f"{len(rows)} schemas, Gemma 3 vocabulary ({vocab.n_vocab} tokens); trie built in {trie_s:.2f} s")
    print(f"garbage collector: {gc_mode}")
    cols = ["coverage_pct", "compile_ms_median", "mask_us_mean", "mask_us_p99", "valid_pct", "steps"]
    print(f"{'':20}" + "".join(f"{c:>19}" for c in cols))
    for name, row in table.items():
        print(f"{name:20}" + "".join(f"{row[c]:>19.1f}" for c in cols))
    ck = ours["checked"]
    print(
        f"tokenloom, all instances (compact and pretty): valid forced {ck['valid_forced']}/{ck['valid']}, "
        f"invalid rejected {ck['invalid_rejected']}/{ck['invalid']}"
    )
    for line in ours["failures"][:40]:
        print("  ", line)
    if "lm-format-enforcer" in table:
        ratio = table["lm-format-enforcer"]["mask_us_mean"] / max(table["tokenloom"]["mask_us_mean"], 1e-9)
        table["speedup_mean_mask"] = {"x": ratio}  # type: ignore[dict-item]
    result = {"schemas": len(rows), "trie_s": trie_s, "gc": gc_mode, "checked": ck, **table}
    print("RESULT_JSON " + json.dumps(result))


if __name__ == "__main__":
    main()
