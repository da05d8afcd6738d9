"""What every streaming reader of one call's arguments shares: the canonical text it produced and not
yet handed out, and where the arguments ended (-1 until then) or why they broke. Knows nothing of formats.
"""

from __future__ import annotations


class ArgReader:
    """Base of the argument readers in stream_tagged / stream_pairs (see stream_args.ArgsStream)."""

    def __init__(self) -> None:
        self._out: list[str] = []
        self.end = -1
        self.error = ""

    @property
    def done(self) -> bool:
        return self.end >= 0

    @property
    def failed(self) -> bool:
        return bool(self.error)

    def take(self) -> str:
        """The canonical argument text produced since the last call."""
        text = "".join(self._out)
        self._out.clear()
        return text
