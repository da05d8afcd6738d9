"""Import the `tokenloom` of this checkout, even when the installed editable package points elsewhere.

Plain `pytest` does not put the repository root on sys.path (`python -m pytest` does); in a git
worktree the editable install would then import another checkout. `pythonpath = ["."]` in
pyproject's pytest options would make this file unnecessary.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[3])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
