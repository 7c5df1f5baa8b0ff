"""`desk import`'s progress on stderr: `label: done/total (pct%)` at the first call, at most every
`every` seconds, and at the end; rewritten in place on a terminal, a line each in a log."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class ProgressLines:
    def __init__(self, label: str, *, every: float = 2.0, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.every = every
        self.stream = stream or sys.stderr
        self.clock = clock
        self.last: float | None = None
        self.tty = self.stream.isatty()
        self.open = False

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        finished = done >= total
        if self.last is not None and now - self.last < self.every and not finished:
            return
        self.last = now
        pct = 100 * done // total if total else 100
        line = f"{self.label}: {done:,}/{total:,} ({pct}%)"
        if self.tty:
            self.stream.write(f"\r{line}" + ("\n" if finished else ""))
            self.open = not finished
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End a rewritten terminal line (when the run stopped before its end)."""
        if self.open:
            self.stream.write("\n")
            self.stream.flush()
            self.open = False
