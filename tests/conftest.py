"""Shared test helpers: where the shared test data lives."""

from __future__ import annotations

import gc
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
TEMPLATES = SHARED / "templates"


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    """Freeze what the session built before pytest's exit-time garbage collections (five full passes,
    looking for unraisable exceptions): by then the constrain tests' compiled grammars and interned parser
    states fill several GB, and each pass over them took minutes. Unraisable exceptions raised while
    tests run are still reported after each test."""
    gc.freeze()
