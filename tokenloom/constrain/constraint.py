"""The per-request constraint the engine drives: `allowed()` mask, `advance(token_id)`, `is_accepting()`.

Compiled grammars (interned parser states and their cached masks) are shared between requests with
the same spec and vocabulary, so a repeated schema costs nothing after its first request.
Knows nothing of the engine: the vocabulary arrives as the `Vocab` protocol.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from tokenloom.constrain.json_unique import twin_state
from tokenloom.constrain.mask import MaskParts, compute, feed_bytes, to_mask
from tokenloom.constrain.parser import Grammar, ParserState
from tokenloom.constrain.trie import BoolArray, ByteTrie, IntArray, Vocab
from tokenloom.constrain.unique_mask import exact_parts
from tokenloom.errors import GrammarError

MAX_CACHED_MASKS = 4096
MASK_MEMO_BYTES = 256 << 20  # all grammars' memoised masks together (a hostile stream of schemas included)
READY_MASK_BYTES = 48 << 20  # whole bool masks kept ready to hand out (about 190 with a 262k vocabulary)


# Masks are computed on a representative state (ParserState.mask_rep) that takes the same strings of up
# to HORIZON chars: a string far from its maxLength, a counted repeat far from its bound. A token of
# fewer than LONG_CHARS chars reads at most HORIZON chars (its own, and one more when its first bytes
# complete an unfinished character). The longer ones (36 of Gemma 3's 262k tokens, mostly runs of tabs or
# newlines) are judged from the state itself. The shorter the horizon, the more states share a mask.
LONG_CHARS = 20
HORIZON = LONG_CHARS
_LONG: dict[int, tuple[ByteTrie, IntArray, list[bytes]]] = {}  # id(trie) -> its long tokens


def _long_tokens(trie: ByteTrie) -> tuple[IntArray, list[bytes]]:
    """The ids and bytes of the tokens of LONG_CHARS chars or more (cached per trie)."""
    hit = _LONG.get(id(trie))
    if hit is None or hit[0] is not trie:
        rows = np.flatnonzero(trie.nchars >= LONG_CHARS)
        hit = _LONG[id(trie)] = (trie, trie.ids[rows].astype(np.int32), [trie.keys[row] for row in rows])
    return hit[1], hit[2]


def _long_taken(st: ParserState, pending: bytes, ids: IntArray, keys: list[bytes]) -> tuple[int, ...]:
    """The long tokens `st` takes (after `pending` bytes of an unfinished character)."""
    first = st.allowed_chars().first_bytes() if not pending else None
    return tuple(
        token
        for token, key in zip(ids.tolist(), keys, strict=True)
        if (first is None or key[0] in first) and feed_bytes(st, pending, key)[0] is not None
    )


class _MemoBudget:
    """Bytes held by every grammar's mask memo; a grammar over its share evicts its own oldest masks."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.lock = threading.RLock()  # reentrant: a grammar freed (its __del__) while another holds it


_BUDGET = _MemoBudget(MASK_MEMO_BYTES)


# (representative state, pending bytes, the long tokens the state itself takes when it is not its own
# representative)
_ReadyKey = tuple[ParserState, bytes, tuple[int, ...] | None]


class _ReadyMasks:
    """The most recently handed-out whole masks, read-only, by `_ReadyKey`.

    A memoised mask is stored compactly (ids, packed bits); unpacking it into a fresh 262k-entry array costs
    tens of microseconds, more than everything else on a repeated state. States are interned per grammar, so
    the key is unique across grammars; holding it keeps only a bounded number of states alive.
    """

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self._masks: OrderedDict[_ReadyKey, BoolArray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: _ReadyKey) -> BoolArray | None:
        with self._lock:
            mask = self._masks.get(key)
            if mask is not None:
                self._masks.move_to_end(key)
            return mask

    def put(self, key: _ReadyKey, mask: BoolArray) -> None:
        mask.flags.writeable = False  # shared from now on: nobody may change it
        with self._lock:
            if key in self._masks:
                return
            self._masks[key] = mask
            self._bytes += mask.nbytes
            while self._bytes > self.limit_bytes and self._masks:
                _, old = self._masks.popitem(last=False)
                self._bytes -= old.nbytes


_READY = _ReadyMasks(READY_MASK_BYTES)


def _owned_bytes(parts: MaskParts) -> int:
    """Bytes a memo entry keeps alive (a shared base mask belongs to the trie, not to the entry)."""
    _, packed, ids, minus = parts
    return int(ids.nbytes + minus.nbytes + (packed.nbytes if packed is not None else 0)) + 200


class Compiled:
    """A grammar plus its mask memo for one vocabulary trie."""

    def __init__(self, grammar: Grammar, trie: ByteTrie, unenforced: frozenset[str]) -> None:
        self.grammar = grammar
        self.trie = trie
        self.unenforced = unenforced
        self._masks: OrderedDict[tuple[ParserState, bytes], MaskParts] = OrderedDict()
        self._lock = threading.Lock()

    def mask_parts(self, st: ParserState, pending: bytes) -> MaskParts:
        """Memoised by state; inside a uniqueItems array by its twin state (see unique_mask.py)."""
        twin = twin_state(st)
        parts = self._twin_parts(twin, pending)
        return parts if twin is st else exact_parts(self.trie, parts, twin, st, pending)

    def _twin_parts(self, st: ParserState, pending: bytes) -> MaskParts:
        key = (st, pending)
        with self._lock:
            hit = self._masks.get(key)
            if hit is not None:
                self._masks.move_to_end(key)
                return hit
        parts = compute(self.trie, st, pending)
        self._remember(key, parts)
        return parts

    def _remember(self, key: tuple[ParserState, bytes], parts: MaskParts) -> None:
        size = _owned_bytes(parts)
        with self._lock, _BUDGET.lock:
            if key in self._masks:
                return
            while self._masks and (
                len(self._masks) >= MAX_CACHED_MASKS or _BUDGET.used + size > _BUDGET.limit
            ):
                _, old = self._masks.popitem(last=False)
                _BUDGET.used -= _owned_bytes(old)
            if _BUDGET.used + size > _BUDGET.limit:
                return  # other grammars hold the budget: this mask is simply not memoised
            self._masks[key] = parts
            _BUDGET.used += size

    def __del__(self) -> None:
        with _BUDGET.lock:
            _BUDGET.used -= sum(_owned_bytes(parts) for parts in self._masks.values())


class Constraint:
    """One request's position in a compiled grammar; lazy ones wait for a trigger text first."""

    def __init__(self, compiled: Compiled, vocab: Vocab, triggers: tuple[str, ...] = ()) -> None:
        self._compiled = compiled
        self._pieces = vocab.pieces
        self._special = vocab.special_ids
        self._eog = np.fromiter(sorted(vocab.eog_ids), dtype=np.int32)
        self._eog_set = vocab.eog_ids
        self._n_vocab = vocab.n_vocab
        self._triggers = tuple(t.encode("utf-8") for t in triggers)
        self._waiting = bool(triggers)  # lazy and not yet triggered
        self._seen = b""  # tail of free text that may hold the start of a trigger
        self._state: ParserState | None = compiled.grammar.initial
        self._pending = b""
        self._finished = False

    @property
    def unenforced(self) -> frozenset[str]:
        """Schema keywords accepted but not enforced (e.g. uniqueItems)."""
        return self._compiled.unenforced

    def allowed(self) -> BoolArray | None:
        """Read-only bool mask over the vocabulary, or None while a lazy constraint is not triggered."""
        if self._waiting:
            return None
        if self._state is None or self._finished:
            return np.zeros(self._n_vocab, dtype=np.bool_)
        state, pending = self._state, self._pending
        rep = state.mask_rep(HORIZON)
        long_ids, long_keys = _long_tokens(self._compiled.trie)
        taken = None if rep is state else _long_taken(state, pending, long_ids, long_keys)
        key = (rep, pending, taken)
        mask = _READY.get(key)
        if mask is None:
            mask = to_mask(self._compiled.mask_parts(rep, pending), self._n_vocab)
            if taken is not None:  # the representative's verdict holds for shorter tokens only
                mask[long_ids] = False
                mask[list(taken)] = True
            if self.is_accepting():
                mask[self._eog] = True
            _READY.put(key, mask)
        return mask

    def is_accepting(self) -> bool:
        if self._waiting:
            return True
        return self._state is not None and not self._pending and self._state.can_end()

    def advance(self, token_id: int) -> None:
        """Take the sampled token; GrammarError if the mask did not allow it."""
        if not 0 <= token_id < self._n_vocab:
            raise GrammarError(f"token id {token_id} out of range")
        if token_id in self._eog_set:
            if not self.is_accepting():
                raise GrammarError("end of generation before the structured output was complete")
            self._finished = True
            return
        if self._finished:
            raise GrammarError("token after the end of generation")
        if token_id in self._special:
            if self._waiting:
                return
            raise GrammarError(f"special token {token_id} is not allowed inside structured output")
        piece = self._pieces[token_id]
        if self._waiting:
            self._watch(piece)
            return
        self._feed(piece, token_id)

    def _watch(self, piece: bytes) -> None:
        text = self._seen + piece
        hits = [(i, t) for t in self._triggers if (i := text.find(t)) >= 0]
        if not hits:
            keep = max(len(t) for t in self._triggers) - 1
            self._seen = text[-keep:] if keep > 0 else b""
            return
        start = min(i for i, _ in hits)
        self._waiting = False
        self._seen = b""
        self._feed(text[start:], None)

    def _feed(self, data: bytes, token_id: int | None) -> None:
        st, pending = feed_bytes(self._state, self._pending, data)
        self._state, self._pending = st, pending
        if st is None:
            what = f"token {token_id} ({data!r})" if token_id is not None else f"text {data!r}"
            raise GrammarError(f"{what} does not fit the required format here")
