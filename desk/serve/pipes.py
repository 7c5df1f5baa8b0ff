"""The stdio wire of `desk serve`, read and written on the event loop: no thread hop per line.

The MCP SDK's `stdio_server()` wraps stdin and stdout in `anyio.wrap_file`, so reading a line,
writing an answer and flushing it are each a trip to a worker thread and back: with desk's own hop
to its worker, eight cross-thread wake-ups per tool call. On a 2-core machine those hops, not the
JSON, were the larger part of a call's fixed cost (docs/agents.md, Performance). `stdio_server`
takes the two streams as arguments (`stdin`, `stdout`: it iterates lines of the one and awaits
`write` and `flush` on the other); `claimed_pipes` gives it streams that wait for the pipe to be
readable or writable (`anyio.wait_readable`, `anyio.wait_writable`) and then read or write it
directly, on the loop's thread.

Only pipes and sockets are served this way, on POSIX: a terminal or a file (someone typing
JSON-RPC at `desk serve`) keeps the SDK's own streams, so no flag of a shared terminal is ever
changed. Like the SDK, while serving fd 0 reads the null device and fd 1 goes to stderr, so a
child process's stray output can never land on the wire; both are restored on exit.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

CHUNK = 1 << 16


class PipeLines:
    """The wire's incoming side as the SDK's transport reads it: `async for line in stdin`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._eof = False

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched)
            if end >= 0:
                line = bytes(self._buffer[:end + 1])
                del self._buffer[:end + 1]
                return line.decode("utf-8", errors="replace")  # as the SDK decodes stdin
            if self._eof:
                if not self._buffer:
                    raise StopAsyncIteration
                line = bytes(self._buffer)
                self._buffer.clear()
                return line.decode("utf-8", errors="replace")
            searched = len(self._buffer)
            await anyio.wait_readable(self._fd)
            chunk = os.read(self._fd, CHUNK)  # readable: returns at once (data, or b"" at the end)
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True


class PipeWriter:
    """The wire's outgoing side: `await write(text)` (whole, however long), `await flush()`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd  # non-blocking: a reader that stops reading parks this task, not the loop

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(self._fd, data):]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)

    async def flush(self) -> None:
        """Nothing is buffered: each `write` is on the wire when it returns."""


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextmanager
def claimed_pipes() -> Iterator[tuple[PipeLines, PipeWriter] | None]:
    """The wire on private copies of fds 0 and 1 while fd 0 reads /dev/null and fd 1 writes to
    stderr; None (nothing changed) unless both are pipes or sockets on POSIX."""
    if sys.platform == "win32" or not (_is_pipe(0) and _is_pipe(1)):
        yield None
        return
    import fcntl

    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    was_blocking = os.get_blocking(wire_out)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        os.set_blocking(wire_out, False)
        yield PipeLines(wire_in), PipeWriter(wire_out)
    finally:
        os.close(null)
        os.set_blocking(wire_out, was_blocking)
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)
