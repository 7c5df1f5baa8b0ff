"""The stdio wire of `desk serve`: JSON-RPC lines read and written on the event loop, no threads.

The MCP SDK's `stdio_server()` reads stdin and writes stdout through `anyio.wrap_file`, so each
line read, each answer written and each flush is a trip to a worker thread and back, and every
message then passes a memory stream to reach the server (or the writer task). On a 2-core machine
those hand-offs, not the JSON, were most of a tool call's fixed cost (docs/agents.md,
Performance). The server's loop takes any streams with the SDK's public stream interface
(`mcp.shared._stream_protocols`: `ReadStream`, `WriteStream`): `Incoming` is one, fed by the
loop's own readiness callback on the pipe (`loop.add_reader`), parsing each line when the server
asks for the next message, as the SDK's transport parses it; `Outgoing` writes each answer
straight to the non-blocking pipe from the task that sends it, and only when the pipe is full
parks that task until the loop sees room (`loop.add_writer`).

Only pipes and sockets are served this way, on POSIX: a terminal or a file (someone typing
JSON-RPC at `desk serve`) keeps the SDK's own streams, so no flag of a shared terminal is ever
changed. Like the SDK, while serving fd 0 reads the null device and fd 1 goes to stderr, so a git
process's or a library's stray output can never land on the wire; both are restored on exit.

A message is at most MAX_MESSAGE_BYTES long, the SDK's own cap on an HTTP request body: a longer
line is skipped as it arrives, never held whole (a 100 MB line made the server take 439 MB), and
answered with an Invalid Request error (the request's id when its first bytes name it, as the SDK's
own client writes it, else null), as HTTP answers it with 413. The SDK's streams, for a terminal or
a file, read each line whole: their input is a person's own, not a client's.

Either way the end of input waits for the answers (`Calls`): the SDK's serving loop cancels the
calls still in flight when its input ends, so a client that wrote its requests and closed its
stdin at once (`desk serve < requests.jsonl`) lost answers, though their commits landed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Self

import anyio
import mcp_types
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage

CHUNK = 1 << 16
PENDING_LINES = 64
"""Lines read ahead of the server: past this many (or MAX_MESSAGE_BYTES of them), reading pauses
until the server catches up, so a client that floods the pipe is slowed by the pipe, not buffered
in the server's memory."""
MAX_MESSAGE_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
HEAD_BYTES = 512  # what is kept of a message too long to read: enough to find its id
# A request's id when it comes before anything nested (`{"jsonrpc":"2.0","id":7,"method":...`):
# only top-level keys can precede it then, so no id inside the params is taken for it.
_LEADING_ID = re.compile(rb'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*\s*"id"\s*:\s*'
                         rb'(-?[0-9]{1,15}|"[^"\\]{0,200}")\s*[,}]')


class MessageTooLarge(ValueError):
    """A line longer than MAX_MESSAGE_BYTES, skipped unread; `head` is its first bytes."""

    def __init__(self, head: bytes) -> None:
        super().__init__(f"a message of more than {MAX_MESSAGE_BYTES} bytes was refused unread")
        self.head = head

    def request_id(self) -> int | str | None:
        """The id the message's first bytes give it, if they do (see `_LEADING_ID`)."""
        found = _LEADING_ID.match(self.head)
        if found is None:
            return None
        value = json.loads(found.group(1))
        return value if isinstance(value, (int, str)) else None

    def answer(self) -> SessionMessage:
        """The Invalid Request error that tells the client (`id` null when it is not known)."""
        return SessionMessage(mcp_types.JSONRPCError(
            jsonrpc="2.0", id=self.request_id(),
            error=mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST,
                                      message=f"{self} (desk serve's limit for one message, as over HTTP)")))


def parse(line: bytes | bytearray) -> SessionMessage | Exception:
    """One JSON-RPC line as the SDK's stdio transport reads it (UTF-8, bad bytes replaced): the
    message, or the parse error (which the server answers or logs, then reads on)."""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line.decode("utf-8", errors="replace"),
                                                                 by_name=False)
    except Exception as exc:  # as the SDK: any line that is not a message is passed on as the error
        return exc
    return SessionMessage(message)


class _Stream:
    """What the streams here share: `async with` closes the stream (`aclose`) at its end."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class _Receiving(_Stream):
    """A read stream: `async for` receives until the end of input."""

    async def receive(self) -> SessionMessage | Exception:
        raise NotImplementedError

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class Incoming(_Receiving):
    """The wire's incoming side, a `ReadStream[SessionMessage | Exception]` of the messages on `fd`
    (non-blocking, read on the running asyncio loop); ends at the end of the pipe. A line longer
    than MAX_MESSAGE_BYTES is skipped as it comes, and received as a `MessageTooLarge` error after
    `refuse` (the outgoing side's `send`) has sent the client its `answer()`."""

    def __init__(self, fd: int, refuse: WriteStream[SessionMessage] | None = None) -> None:
        self._fd = fd
        self._refuse = refuse
        self._loop = asyncio.get_running_loop()
        self._buffer = bytearray()  # the start of a line not ended yet
        self._skipping: bytes | None = None  # the head of a line too long, while its rest is dropped
        self._lines: deque[bytes | bytearray | MessageTooLarge] = deque()
        self._held = 0  # bytes in self._lines
        self._eof = False
        self._closed = False
        self._reading = True
        self._waiter: asyncio.Future[None] | None = None
        self._loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            chunk = os.read(self._fd, CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # a broken wire reads as its end
            chunk = b""
        if not chunk:
            self._eof = True
            self._pause()
            if self._skipping is not None:
                self._hold(MessageTooLarge(self._skipping))
            elif self._buffer:  # the last line, without its newline
                self._hold(bytes(self._buffer))
            self._buffer.clear()
        else:
            if self._skipping is not None:  # drop the long line's bytes up to its end
                end = chunk.find(b"\n")
                if end < 0:
                    return
                self._hold(MessageTooLarge(self._skipping))
                self._skipping, chunk = None, chunk[end + 1:]
            start = len(self._buffer)
            self._buffer += chunk
            if self._buffer.find(b"\n", start) >= 0:
                *lines, rest = self._buffer.split(b"\n")
                for line in lines:
                    self._hold(line + b"\n" if len(line) <= MAX_MESSAGE_BYTES
                               else MessageTooLarge(bytes(line[:HEAD_BYTES])))
                self._buffer = bytearray(rest)
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                self._skipping = bytes(self._buffer[:HEAD_BYTES])
                self._buffer = bytearray()
            if len(self._lines) >= PENDING_LINES or self._held >= MAX_MESSAGE_BYTES:
                self._pause()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _hold(self, line: bytes | bytearray | MessageTooLarge) -> None:
        self._lines.append(line)
        self._held += len(line) if not isinstance(line, MessageTooLarge) else 0

    def _pause(self) -> None:
        if self._reading:
            self._loop.remove_reader(self._fd)
            self._reading = False

    async def receive(self) -> SessionMessage | Exception:
        while not self._lines:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._eof:
                raise anyio.EndOfStream
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        line = self._lines.popleft()
        if not isinstance(line, MessageTooLarge):
            self._held -= len(line)
        if (not self._reading and not self._eof and not self._closed and len(self._lines) < PENDING_LINES // 2
                and self._held < MAX_MESSAGE_BYTES // 2):
            self._loop.add_reader(self._fd, self._readable)
            self._reading = True
        if isinstance(line, MessageTooLarge):
            if self._refuse is not None:
                try:
                    await self._refuse.send(line.answer())
                except anyio.BrokenResourceError:
                    pass  # the client hung up: the end of input follows
            return line
        return parse(line)

    async def aclose(self) -> None:
        self._closed = True
        self._pause()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class Outgoing(_Stream):
    """The wire's outgoing side, a `WriteStream[SessionMessage]` onto `fd` (non-blocking): each
    message one line, written whole and in the order sent, however long, on the running loop."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._pending = bytearray()  # what the pipe had no room for yet
        self._drained = asyncio.Event()
        self._drained.set()
        self._broken = False
        self._closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        data = (item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")
        if not self._pending:
            try:
                written = os.write(self._fd, data)
            except (BlockingIOError, InterruptedError):
                written = 0
            except OSError:  # the client hung up
                self._broken = True
                raise anyio.BrokenResourceError from None
            if written == len(data):
                return
            data = data[written:]
            self._drained.clear()
            self._loop.add_writer(self._fd, self._writable)
        self._pending += data
        await self._drained.wait()
        if self._broken:
            raise anyio.BrokenResourceError

    def _writable(self) -> None:
        try:
            written = os.write(self._fd, self._pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._broken = True
            self._pending.clear()
        else:
            del self._pending[:written]
        if not self._pending:
            self._loop.remove_writer(self._fd)
            self._drained.set()

    async def aclose(self) -> None:
        """Closed once what was sent is on the wire (or the wire is broken)."""
        if not self._closed:
            self._closed = True
            await self._drained.wait()


class Calls:
    """The requests read and not answered yet, so that the end of input waits for their answers.

    The SDK's serving loop ends when its input does and cancels every call still running (its
    answer becomes "Connection closed", or is never written). `reading` and `answering` wrap the
    two streams the loop is given: the end of input reaches the loop only once every request read
    has had its answer sent (written whole, or found the wire broken), and then the loop ends as
    before. A request the client cancelled (`notifications/cancelled`) is never answered (the
    spec), so it is not waited for. A call that needed the client to answer a request of the
    server's would wait for ever here; desk's tools send the client none.
    """

    def __init__(self) -> None:
        self._open: dict[str, int] = {}  # request id (as a string: "7" and 7 are one id) -> how many
        self._answered: anyio.Event | None = None

    def reading(self, stream: ReadStream[SessionMessage | Exception]) -> ReadStream[SessionMessage | Exception]:
        return _Reading(stream, self)

    def answering(self, stream: WriteStream[SessionMessage]) -> WriteStream[SessionMessage]:
        return _Answering(stream, self)

    def read(self, item: SessionMessage | Exception) -> None:
        if not isinstance(item, SessionMessage):
            return
        message = item.message
        if isinstance(message, mcp_types.JSONRPCRequest):
            key = str(message.id)
            self._open[key] = self._open.get(key, 0) + 1
        elif isinstance(message, mcp_types.JSONRPCNotification) and message.method == "notifications/cancelled":
            self._close(cancelled_request_id_from_params(message.params))

    def sent(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError)):
            self._close(message.id)

    def _close(self, request_id: object) -> None:
        key = str(request_id)
        left = self._open.get(key, 0) - 1
        if left > 0:
            self._open[key] = left
        elif self._open.pop(key, None) is not None and not self._open and self._answered is not None:
            self._answered.set()

    async def all_answered(self) -> None:
        while self._open:
            self._answered = anyio.Event()
            await self._answered.wait()


class _Reading(_Receiving):
    """A `ReadStream` whose end waits for `Calls.all_answered`."""

    def __init__(self, stream: ReadStream[SessionMessage | Exception], calls: Calls) -> None:
        self._stream, self._calls = stream, calls

    @property
    def last_context(self) -> object:
        """The sender's context the SDK's own streams carry (the serving loop asks for it)."""
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._stream.receive()
        except anyio.EndOfStream:
            await self._calls.all_answered()
            raise
        self._calls.read(item)
        return item

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Answering(_Stream):
    """A `WriteStream` that tells `Calls` of each answer sent."""

    def __init__(self, stream: WriteStream[SessionMessage], calls: Calls) -> None:
        self._stream, self._calls = stream, calls

    async def send(self, item: SessionMessage, /) -> None:
        try:
            await self._stream.send(item)
        finally:  # written, or the wire is broken: either way nothing more will come of it
            self._calls.sent(item)

    async def aclose(self) -> None:
        await self._stream.aclose()


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _same_file(a: int, b: int) -> bool:
    """Whether fds `a` and `b` are the same pipe (stderr sent to the wire: `2>&1`)."""
    try:
        sa, sb = os.fstat(a), os.fstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


@contextmanager
def claimed_pipes() -> Iterator[tuple[int, int] | None]:
    """The wire's (in, out) on private non-blocking copies of fds 0 and 1, while fd 0 reads the
    null device and fd 1 writes to stderr; None (nothing changed) unless both are pipes or sockets
    on POSIX and stderr is not the wire itself (its writes must not become non-blocking). On exit
    both are put back as they were."""
    if sys.platform == "win32" or not (_is_pipe(0) and _is_pipe(1)) or _same_file(1, 2):
        yield None
        return
    import fcntl

    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    blocking = os.get_blocking(wire_in), os.get_blocking(wire_out)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        os.set_blocking(wire_in, False)
        os.set_blocking(wire_out, False)
        yield wire_in, wire_out
    finally:
        os.close(null)
        os.set_blocking(wire_in, blocking[0])
        os.set_blocking(wire_out, blocking[1])
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)
