"""What stays interpreted Python when the mask engine is compiled with mypyc (setup.py).

A compiled class takes weak references only when it derives from an ordinary Python class: the grammars
(`WeaklyHeld`), which the count of interned states holds weakly (parser.py). Compiled code runs no
bytecode of its own, and only at bytecode does the mask worker let the scheduler thread have the
interpreter and its timeout stop it (engine/masking.py): `let_others_run` is such a point, which compiled
loops call now and then (mask._tick, a regex's new automaton states).
"""

from __future__ import annotations


class WeaklyHeld:
    """The base of a compiled class that is held by weak reference (a `__weakref__` comes with it)."""


def let_others_run() -> None:
    """Nothing, run as bytecode: compiled loops call it now and then, since only at bytecode does a thread
    waiting for the interpreter get it and an asynchronous exception (the mask timeout) land."""
