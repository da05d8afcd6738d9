"""Renaming error fields: the pipeline names request parts in chat-completions terms; each API's adapter
gives a function that maps such a path to the field its client wrote."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tokenloom.errors import InvalidRequest

Rename = Callable[[str], str]


@contextmanager
def fields_named(rename: Rename) -> Iterator[None]:
    """Inside this block an InvalidRequest's `param` (and the message that starts with it) is renamed."""
    try:
        yield
    except InvalidRequest as exc:
        if exc.param is not None and not getattr(exc, "names_own_field", False):
            new = rename(exc.param)
            if new != exc.param:
                if exc.message.startswith(exc.param):
                    exc.message = new + exc.message[len(exc.param) :]
                    exc.args = (exc.message,)
                exc.param = new
        raise
