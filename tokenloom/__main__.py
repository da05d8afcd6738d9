"""`python -m tokenloom`."""

from __future__ import annotations

import sys

from tokenloom.cli import main

sys.exit(main())
