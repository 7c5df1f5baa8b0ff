"""Progress lines for long work, on a terminal or not: one plain line on stderr every few seconds.

None for work that ends sooner, unless its total is at least `announce` (then the first line comes
at once). A heartbeat thread keeps the lines coming through a step that reports nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

INTERVAL = 3.0  # seconds between lines; $DESK_PROGRESS_INTERVAL overrides it (0: every update)
HEARTBEAT_MIN = 0.2  # the heartbeat thread never wakes more often than this


class ProgressLines:
    """`progress(done, total)` for the API; `with` it to get the heartbeat and the closing line."""

    def __init__(self, label: str, write: Callable[[str], None], *, unit: str = "",
                 interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic,
                 heartbeat: bool = True, announce: int | None = None) -> None:
        self.label = label
        self.announce = announce
        self.write = write
        self.unit = unit
        self.interval = interval
        self.clock = clock
        self.heartbeat = heartbeat
        self.start = clock()
        self.last = self.start  # the first line comes one interval after the start
        self.done: int | None = None
        self.total: int | None = None
        self.lines = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self.beat(force=self.announce is not None and not self.lines and total >= self.announce)

    def beat(self, force: bool = False) -> None:
        """Print a line if `interval` has passed since the last one (or the start), or `force`."""
        with self._lock:
            now = self.clock()
            if not force and now - self.last < self.interval:
                return
            self.last = now
            self.lines += 1
            self.write(f"desk: {self.label}: {self._where()}, {now - self.start:.0f} s")

    def _where(self) -> str:
        if self.done is None or not self.total:
            return "working"
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.done}/{self.total}{unit} ({100 * self.done // self.total}%)"

    def __enter__(self) -> ProgressLines:
        if self.heartbeat:
            self._thread = threading.Thread(target=self._run, name="desk-progress", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(max(self.interval, HEARTBEAT_MIN)):
            self.beat()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.lines:  # only work that printed progress says it has finished
            with self._lock:
                self.write(f"desk: {self.label}: {'done' if exc[0] is None else 'stopped'}, "
                           f"{self.clock() - self.start:.0f} s")


def stderr_progress(label: str, *, unit: str = "", enabled: bool = True,
                    announce: int | None = None) -> ProgressLines:
    """ProgressLines on stderr (silent when not `enabled`), every $DESK_PROGRESS_INTERVAL seconds."""
    import os

    import click

    try:
        interval = max(0.0, float(os.environ.get("DESK_PROGRESS_INTERVAL", INTERVAL)))
    except ValueError:
        interval = INTERVAL

    def write(line: str) -> None:
        if enabled:
            click.echo(line, err=True)

    return ProgressLines(label, write, unit=unit, interval=interval, heartbeat=enabled, announce=announce)
