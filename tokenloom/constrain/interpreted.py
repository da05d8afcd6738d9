"""What stays interpreted Python when the mask engine is compiled with mypyc (setup.py).

A compiled function cannot carry `dataclass_transform`'s marker, and a class under a decorator mypyc does
not know stays an ordinary Python class: the parser frames (built by `frame_class`) and the grammars,
which are held by weak reference (`weakly_held`; a compiled class takes no weak references). The frames'
hashes, called at every new parser state, are thus bytecode: where the mask worker lets the scheduler
thread have the interpreter and where its timeout can stop it (engine/masking.py); `let_others_run` is
such a point for compiled loops that make no new state (a regex walked over the whole trie).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

_F = TypeVar("_F")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frame_class(cls: type[_F]) -> type[_F]:
    """A slotted dataclass, frozen for the type checker, whose hash is computed once and kept.

    Every new parser state is interned by its stacks, and a tuple hashes each of its frames again every
    time: about eleven frame hashes per new state, each building a tuple of the fields (the Phase enum's
    hash is Python code too). A frame never changes, so its first hash is its hash for good. Frames are
    made by the hundred thousand, so `__init__` stores its fields plainly: the frozen one called
    `object.__setattr__` per field. Nothing assigns to a frame (mypy holds them frozen).
    """
    body: Any = cls
    body.__annotations__ = {**vars(body).get("__annotations__", {}), "_hash": int}
    body._hash = field(default=0, init=False, repr=False, compare=False)
    made: Any = dataclass(slots=True, eq=False)(body)
    names = [f.name for f in fields(made) if f.compare]
    values = attrgetter(*names) if len(names) > 1 else (lambda frame: (attrgetter(names[0])(frame),))

    def __hash__(self: Any) -> int:
        h: int = self._hash
        if not h:
            h = self._hash = hash(values(self)) or 1
        return h

    def __eq__(self: Any, other: object) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return hash(self) == hash(other) and values(self) == values(other)

    made.__hash__ = __hash__
    made.__eq__ = __eq__
    return made  # type: ignore[no-any-return]


def weakly_held(cls: type[_F]) -> type[_F]:
    """Marks a class that is held by weak reference: compiled, it stays an ordinary Python class."""
    return cls


def let_others_run() -> None:
    """Nothing, run as bytecode: compiled loops call it now and then, since only at bytecode does a thread
    waiting for the interpreter get it and an asynchronous exception (the mask timeout) land."""
