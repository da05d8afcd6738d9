"""The compiled passes of the mask engine (`_native.c`), when the install could build them.

`NATIVE` is the module or None (no C compiler at install time, or TOKENLOOM_PURE_PYTHON set); every
caller keeps its numpy version of the same pass, which the tests hold the compiled one to.
"""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("TOKENLOOM_PURE_PYTHON"):
        return None
    try:
        from tokenloom.constrain import _native  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _native  # type: ignore[no-any-return]


NATIVE = _load()
