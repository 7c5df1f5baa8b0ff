"""The `desk` console script (and `python -m desk`): Ctrl-C at any moment is one line, no traceback.

The SIGINT handler is installed before click and the commands load. Nothing committed yet:
`desk: interrupted`, exit 130; a commit landed first: desk names it and exits 0. While the command
runs the handler raises `Interrupted` (a KeyboardInterrupt, as Python's own); inside click's code,
which would print "Aborted!", a Ctrl-C is held (HOLD) or ignored once the command ended (IGNORE).
After the first, a Ctrl-C is ignored, so it cannot cut the clean-up of the first.
"""

from __future__ import annotations

import sys
from types import FrameType

INTERRUPTED_EXIT = 130
RAISE, HOLD, IGNORE = "raise", "hold", "ignore"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) as desk's CLI raises it."""


class _State:
    mode = RAISE
    pending = False


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _State.mode == HOLD:
        _State.pending = True
    elif _State.mode == RAISE:
        if _in_finalizer(frame):
            # Python prints and drops an exception raised in a `__del__`: send it again in a moment.
            import os
            import threading

            threading.Timer(0.01, os.kill, (os.getpid(), signum)).start()
            return
        _State.mode = IGNORE  # the first one is being handled: let its clean-up finish
        raise Interrupted


def _in_finalizer(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def set_mode(mode: str) -> None:
    """RAISE (a held Ctrl-C is raised now), HOLD or IGNORE: see the module docstring."""
    _State.mode = mode
    if mode == RAISE and _State.pending:
        _State.pending = False
        _State.mode = IGNORE
        raise Interrupted


def main() -> None:
    """Console-script entry point: the CLI (desk.cli.main.main) under desk's Ctrl-C handling."""
    try:
        import signal  # here: a Ctrl-C while it loads is still Python's KeyboardInterrupt, caught

        signal.signal(signal.SIGINT, _on_sigint)
    except KeyboardInterrupt:
        sys.exit(report_interrupt())
    try:
        try:
            from desk.cli.main import main as run

            run()
        finally:
            # A later Ctrl-C changes nothing: ignored outright (Python's exit restores the default
            # action for a handler of its own, and a Ctrl-C then would end the process silently).
            _State.mode = IGNORE
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:
        sys.exit(report_interrupt())


def report_interrupt() -> int:
    """Say what a Ctrl-C left (one line on stderr) and return the exit code (module docstring)."""
    _State.mode = IGNORE
    api = sys.modules.get("desk.api")  # not loaded: nothing was committed
    landed = api.last_landed() if api is not None else None
    message, code = ("desk: interrupted\n", INTERRUPTED_EXIT) if landed is None else (
        f"desk: interrupted after the change was committed: {landed[1]} (commit {landed[0][:7]})\n", 0)
    try:
        sys.stderr.write(message)
        sys.stderr.flush()
    except OSError:  # stderr closed or a broken pipe: the exit code still says it
        pass
    return code
