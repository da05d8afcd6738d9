"""The modules of the mask engine that the install compiled (setup.py, with mypyc), and a way around them.

A compiled module sits beside its source and wins the import. `TOKENLOOM_PURE_PYTHON=1` (which also turns
off `_native`) imports every source instead, so the tests can hold both to the same results. `stale()`
names the compiled modules older than their source: after an edit, the old build would go on running
until `pip install -e .` builds it again, so the test session refuses to start on one.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent


def compiled_modules() -> dict[str, Path]:
    """Module name -> its extension file, for each module of this package built beside its source."""
    found: dict[str, Path] = {}
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        for path in HERE.glob(f"*{suffix}"):
            name = path.name[: -len(suffix)]
            if (HERE / f"{name}.py").is_file():
                found[name] = path
    return found


def stale() -> list[str]:
    """The compiled modules whose source changed after they were built."""
    return sorted(
        name
        for name, path in compiled_modules().items()
        if path.stat().st_mtime < (HERE / f"{name}.py").stat().st_mtime
    )


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Imports these modules of the package from their Python source, past their compiled build."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if package != __package__ or name not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, HERE / f"{name}.py")


if os.environ.get("TOKENLOOM_PURE_PYTHON"):
    sys.meta_path.insert(0, _SourcesFirst(set(compiled_modules())))
