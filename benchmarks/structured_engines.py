"""The engines the structured-output benchmark compares, behind one small interface, all on one vocabulary.

tokenloom.constrain, xgrammar, llguidance and (optionally) lm-format-enforcer each get the Gemma 3 token
byte strings read from the GGUF (tokenloom's `Vocab`). Knows nothing of schemas sets, timing or reports.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from tokenloom.constrain import compile as tl_compile
from tokenloom.engine.vocab import Tokenizer, Vocab
from tokenloom.errors import GrammarError

BoolArray = npt.NDArray[np.bool_]


class CompileFailed(Exception):
    """The engine refused or could not compile the schema."""


class Session(Protocol):
    """One generation against one compiled schema."""

    def compute_mask(self) -> None:
        """Compute the next-token mask (the timed step)."""
        ...

    def mask(self) -> BoolArray:
        """The mask computed last, as booleans over the vocabulary (not timed)."""
        ...

    def advance(self, token_id: int) -> bool:
        """Take a token; False if the engine rejects it."""
        ...


class Engine(Protocol):
    name: str

    def compile(self, schema: Any, any_order: bool) -> Any:
        """A compiled grammar for the schema; CompileFailed when refused."""
        ...

    def start(self, compiled: Any) -> Session: ...


def with_any_order(schema: Any) -> Any:
    """The schema with tokenloom's any-order switch at its root (a copy; non-object schemas unchanged)."""
    if not isinstance(schema, dict):
        return schema
    return {**schema, "x-tokenloom-any-order": True}


class TokenloomSession:
    def __init__(self, constraint: Any) -> None:
        self._c = constraint
        self._mask: BoolArray | None = None

    def compute_mask(self) -> None:
        self._mask = self._c.allowed()

    def mask(self) -> BoolArray:
        assert self._mask is not None
        return self._mask

    def advance(self, token_id: int) -> bool:
        try:
            self._c.advance(token_id)
        except GrammarError:
            return False
        return True


class TokenloomEngine:
    name = "tokenloom"

    def __init__(self, vocab: Vocab) -> None:
        self._vocab = vocab

    def compile(self, schema: Any, any_order: bool) -> Any:
        spec = {"json_schema": with_any_order(schema) if any_order else schema}
        try:
            tl_compile(spec, self._vocab)  # compiles and caches the grammar (by spec value)
        except GrammarError as e:
            raise CompileFailed(e.message) from e
        return spec

    def start(self, compiled: Any) -> Session:
        return TokenloomSession(tl_compile(compiled, self._vocab))  # the cached grammar, a new position


def _bits_to_bools(words: npt.NDArray[np.int32], n_vocab: int) -> BoolArray:
    return np.unpackbits(words.view(np.uint8), bitorder="little", count=n_vocab).view(np.bool_)


class XgrammarSession:
    def __init__(self, matcher: Any, n_vocab: int) -> None:
        import xgrammar as xgr

        self._m = matcher
        self._n = n_vocab
        self._bitmask = xgr.allocate_token_bitmask(1, n_vocab)
        self._fill = matcher.fill_next_token_bitmask

    def compute_mask(self) -> None:
        self._fill(self._bitmask)

    def mask(self) -> BoolArray:
        return _bits_to_bools(self._bitmask.numpy()[0], self._n)

    def advance(self, token_id: int) -> bool:
        return bool(self._m.accept_token(token_id))


class XgrammarEngine:
    """xgrammar on the raw token bytes; one compile thread (tokenloom compiles on one), schemas as
    JSON Schema says (strict_mode off: additional properties allowed unless the schema forbids them)."""

    name = "xgrammar"

    def __init__(self, vocab: Vocab) -> None:
        import xgrammar as xgr

        pieces = [b"" if i in vocab.special_ids else p for i, p in enumerate(vocab.pieces)]
        info = xgr.TokenizerInfo(
            pieces, xgr.VocabType.RAW, vocab_size=vocab.n_vocab, stop_token_ids=sorted(vocab.eog_ids)
        )
        self._compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self._n = vocab.n_vocab
        self._xgr = xgr

    def compile(self, schema: Any, any_order: bool) -> Any:
        try:
            return self._compiler.compile_json_schema(
                json.dumps(schema), any_whitespace=True, strict_mode=False, any_order=any_order
            )
        except Exception as e:  # xgrammar raises RuntimeError/ValueError subclasses of its own
            raise CompileFailed(str(e)[:200]) from e

    def start(self, compiled: Any) -> Session:
        return XgrammarSession(self._xgr.GrammarMatcher(compiled), self._n)


class LlguidanceSession:
    def __init__(self, matcher: Any, n_vocab: int) -> None:
        from llguidance.numpy import allocate_token_bitmask

        self._m = matcher
        self._n = n_vocab
        self._bitmask = allocate_token_bitmask(1, n_vocab)
        self._row = self._bitmask[0]
        self._ptr = self._row.ctypes.data
        self._size = self._row.size * self._row.itemsize

    def compute_mask(self) -> None:
        self._m.unsafe_compute_mask_ptr(self._ptr, self._size)

    def mask(self) -> BoolArray:
        return _bits_to_bools(self._row, self._n)

    def advance(self, token_id: int) -> bool:
        return bool(self._m.consume_token(token_id)) and not self._m.is_error()


class _TokenList:
    """What llguidance's TokenizerWrapper reads: token bytes (special ones marked by 0xFF), ids, tokenize."""

    def __init__(self, vocab: Vocab, tokenizer: Tokenizer) -> None:
        self.tokens = [
            b"\xff" + tokenizer.token_text(i).encode() if i in vocab.special_ids else p
            for i, p in enumerate(vocab.pieces)
        ]
        self.special_token_ids = sorted(vocab.special_ids)
        self.eos_token_id = min(vocab.eog_ids)
        self.bos_token_id = vocab.bos_id
        self._tokenizer = tokenizer

    def __call__(self, text: bytes) -> list[int]:
        return self._tokenizer.tokenize(text.decode("utf-8", "replace"), parse_special=False)


class LlguidanceEngine:
    """llguidance with flexible whitespace (as the others); JSON properties in schema order (it has no
    any-order option: `any_order` is ignored)."""

    name = "llguidance"

    def __init__(self, vocab: Vocab, tokenizer: Tokenizer) -> None:
        import llguidance

        wrapper = llguidance.TokenizerWrapper(_TokenList(vocab, tokenizer))
        self._tok = llguidance.LLTokenizer(wrapper, n_vocab=vocab.n_vocab, eos_token=sorted(vocab.eog_ids))
        self._ll = llguidance
        self._n = vocab.n_vocab

    def compile(self, schema: Any, any_order: bool) -> Any:
        grammar = self._ll.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": True})
        is_error, messages = self._ll.LLMatcher.validate_grammar_with_warnings(grammar, self._tok)
        if is_error:
            raise CompileFailed(messages[0][:200] if messages else "invalid grammar")
        matcher = self._ll.LLMatcher(self._tok, grammar, log_level=0)  # compiles the lexer: timed here
        if matcher.is_error():
            raise CompileFailed(matcher.get_error()[:200])
        return matcher

    def start(self, compiled: Any) -> Session:
        return LlguidanceSession(compiled.deep_copy(), self._n)  # a copy of the matcher built at compile


class LmfeSession:
    def __init__(self, enforcer: Any, bos: int, n_vocab: int) -> None:
        self._e = enforcer
        self._prefix = [bos]
        self._n = n_vocab
        self._allowed: list[int] = []

    def compute_mask(self) -> None:
        self._allowed = self._e.get_allowed_tokens(self._prefix).allowed_tokens

    def mask(self) -> BoolArray:
        out = np.zeros(self._n, dtype=np.bool_)
        out[self._allowed] = True
        return out

    def advance(self, token_id: int) -> bool:
        self._prefix.append(token_id)
        return True  # lm-format-enforcer judges through the next mask


class LmfeEngine:
    """lm-format-enforcer (the old peer); slow: only with --engines naming it."""

    name = "lm-format-enforcer"

    def __init__(self, vocab: Vocab) -> None:
        from lmformatenforcer import TokenEnforcerTokenizerData

        regular = []
        for i, piece in enumerate(vocab.pieces):
            if i in vocab.special_ids or not piece:
                continue
            regular.append((i, piece.decode("utf-8", "replace"), False))

        def decode(ids: list[int]) -> str:
            return b"".join(vocab.pieces[i] for i in ids if i not in vocab.special_ids).decode(
                "utf-8", "ignore"
            )

        self._data = TokenEnforcerTokenizerData(regular, decode, sorted(vocab.eog_ids), False, vocab.n_vocab)
        self._bos = vocab.bos_id or 0
        self._n = vocab.n_vocab

    def compile(self, schema: Any, any_order: bool) -> Any:
        from lmformatenforcer import JsonSchemaParser

        try:
            return JsonSchemaParser(schema)
        except Exception as e:
            raise CompileFailed(str(e)[:200]) from e

    def start(self, compiled: Any) -> Session:
        from lmformatenforcer import TokenEnforcer

        return LmfeSession(TokenEnforcer(self._data, compiled), self._bos, self._n)


def make_engines(names: list[str], vocab: Vocab, tokenizer: Tokenizer) -> list[Engine]:
    made: dict[str, Any] = {
        "tokenloom": lambda: TokenloomEngine(vocab),
        "xgrammar": lambda: XgrammarEngine(vocab),
        "llguidance": lambda: LlguidanceEngine(vocab, tokenizer),
        "lm-format-enforcer": lambda: LmfeEngine(vocab),
    }
    unknown = [n for n in names if n not in made]
    if unknown:
        raise SystemExit(f"unknown engine(s): {', '.join(unknown)}; known: {', '.join(made)}")
    return [made[n]() for n in names]
