"""`desk.serve.wire`: the stdio wire read and written on the event loop, over real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp.shared.message import SessionMessage

from desk.layout import DeskFolder
from tests.serve.mcp_client import server_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the pipe wire is POSIX only")


def request(i: int, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "now_show", "arguments": params}}


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


def received(chunks: list[bytes]) -> list[Any]:
    """What `Incoming` yields for `chunks` written to a pipe one after another, then closed: each
    message as a dict, each line that is not one as its exception."""
    from desk.serve.wire import Incoming

    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    got: list[Any] = []

    async def main() -> None:
        async def feed() -> None:
            for chunk in chunks:  # written from a thread: a chunk larger than the pipe blocks
                await anyio.to_thread.run_sync(os.write, write_fd, chunk)
                await anyio.sleep(0.001)  # each chunk its own read
            os.close(write_fd)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            async with Incoming(read_fd) as incoming:
                async for item in incoming:
                    got.append(item.message.model_dump(by_alias=True, exclude_unset=True)
                               if isinstance(item, SessionMessage) else item)
    try:
        anyio.run(main)
    finally:
        os.close(read_fd)
    return got


def test_messages_split_across_reads_and_many_in_one_read() -> None:
    data = line(request(1)) + line(request(2)) + line(request(3))
    assert received([data[:7], data[7:60], data[60:]]) == [request(1), request(2), request(3)]


def test_a_multibyte_character_split_between_reads_is_kept_whole() -> None:
    data = line(request(1, text="日本語 zero\u200bwidth"))
    cut = data.index("本".encode()) + 1
    assert received([data[:cut], data[cut:]]) == [request(1, text="日本語 zero\u200bwidth")]


def test_hostile_lines_come_as_errors_and_the_messages_around_them_still_arrive() -> None:
    bad_utf8 = line(request(2, text="X")).replace(b"X", b"\xff\xfe")
    got = received([line(request(1)), b"not json\n", b"\n", bad_utf8, line(request(3)).rstrip(b"\n") + b"\r\n",
                    json.dumps(request(4)).encode()])  # the last line has no newline
    assert got[0] == request(1)
    assert isinstance(got[1], Exception) and isinstance(got[2], Exception)
    assert got[3] == request(2, text="\ufffd\ufffd")  # bad bytes replaced, as the SDK's transport reads them
    assert got[4:] == [request(3), request(4)]


def test_an_empty_pipe_ends_the_messages() -> None:
    assert received([]) == []


def test_a_flood_of_messages_pauses_reading_and_all_arrive_in_order() -> None:
    from desk.serve.wire import PENDING_LINES

    count = PENDING_LINES * 5
    assert received([b"".join(line(request(i)) for i in range(count))]) == [request(i) for i in range(count)]


def answer(i: int, text: str) -> SessionMessage:
    return SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=i, result={"text": text}))


def test_long_answers_are_written_whole_and_in_order_while_the_reader_is_slower_than_the_pipe() -> None:
    """More than a pipe holds (64 KiB on Linux), from two tasks at once: each waits for room
    instead of failing or blocking the loop, and the reader on the same loop gets every line whole."""
    from desk.serve.wire import Outgoing

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    texts = ["x" * 300_000 + "日本語", "short", "y" * 200_000]
    got = bytearray()

    async def main() -> None:
        outgoing = Outgoing(write_fd)

        async def send(i: int) -> None:
            await outgoing.send(answer(i, texts[i]))

        async def write() -> None:
            async with anyio.create_task_group() as tg:
                for i in range(len(texts)):
                    tg.start_soon(send, i)
            await outgoing.aclose()
            os.close(write_fd)

        async def read() -> None:
            while True:
                await anyio.wait_readable(read_fd)
                chunk = os.read(read_fd, 4096)
                if not chunk:
                    return
                got.extend(chunk)
                await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            tg.start_soon(read)
    try:
        anyio.run(main)
    finally:
        os.close(read_fd)
    lines = [json.loads(part) for part in bytes(got).decode().splitlines()]
    assert sorted(lines, key=lambda m: m["id"]) == [
        {"jsonrpc": "2.0", "id": i, "result": {"text": text}} for i, text in enumerate(texts)]


def test_an_answer_to_a_client_that_hung_up_is_a_broken_stream_not_a_crash() -> None:
    from desk.serve.wire import Outgoing

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    os.close(read_fd)

    async def main() -> None:
        outgoing = Outgoing(write_fd)
        for _ in range(2):
            with pytest.raises(anyio.BrokenResourceError):
                await outgoing.send(answer(1, "gone"))
        await outgoing.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await outgoing.send(answer(2, "closed"))
    try:
        anyio.run(main)
    finally:
        os.close(write_fd)


def test_claimed_pipes_divert_fd_0_and_1_while_serving_and_restore_them() -> None:
    code = textwrap.dedent("""
        import os, sys
        from desk.serve.wire import claimed_pipes
        blocking = os.get_blocking(0), os.get_blocking(1)
        with claimed_pipes() as wire:
            assert wire is not None
            print("stray output", flush=True)          # fd 1 is stderr now: not on the wire
            os.write(1, b"a child's stray bytes\\n")
            assert os.read(0, 10) == b""               # fd 0 reads the null device
            wire_in, wire_out = wire
            assert not os.get_blocking(wire_in) and not os.get_blocking(wire_out)
            import anyio, select
            select.select([wire_in], [], [])
            data = b""
            while not data.endswith(b"two\\n"):
                select.select([wire_in], [], [])
                data += os.read(wire_in, 100)
            os.write(wire_out, b"echo " + data)
        assert (os.get_blocking(0), os.get_blocking(1)) == blocking
        print("after", flush=True)                     # fd 1 is the pipe again
        assert sys.stdin.read() == "three\\n"          # fd 0 is the pipe again
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=server_env())
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"one\ntwo\n")
    proc.stdin.flush()
    assert proc.stdout.read(13) == b"echo one\ntwo\n"
    proc.stdin.write(b"three\n")
    proc.stdin.close()
    assert proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert out == b"after\n"
    assert b"stray output" in err and b"a child's stray bytes" in err


def wire_requests(tmp_path: Path) -> list[dict[str, Any]]:
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "file", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        request(2),
    ]


def check_answers(stdout: str) -> None:
    answers = {a["id"]: a for a in map(json.loads, stdout.splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "desk"
    assert answers[2]["result"]["isError"] is False and "structuredContent" in answers[2]["result"]


def test_serve_with_stdin_from_a_file_keeps_the_sdks_own_streams(desk: DeskFolder, tmp_path: Path,
                                                                  identity: None) -> None:
    """Not a pipe (a file, a terminal): nothing is claimed by desk, the SDK's stdio serves."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(m) + "\n" for m in wire_requests(tmp_path)))
    code = ("from desk.serve.wire import claimed_pipes\n"
            "with claimed_pipes() as wire:\n    claimed = wire is not None\nprint(claimed)\n")
    with requests.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-c", code], stdin=stdin, capture_output=True, text=True,
                              env=server_env(), timeout=60)
    assert proc.stdout == "False\n", proc.stderr
    with requests.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), "serve"], stdin=stdin,
                              capture_output=True, text=True, env=server_env(), timeout=60)
    check_answers(proc.stdout)  # the end of the file waits for the tool call's answer


def test_serve_with_stderr_on_the_wire_keeps_the_sdks_own_streams(desk: DeskFolder, tmp_path: Path,
                                                                   identity: None) -> None:
    """`2>&1`: the wire is stderr too, so desk does not make it non-blocking (a log line could
    fail); the SDK's stdio serves, and the answers still arrive."""
    code = ("from desk.serve.wire import claimed_pipes\n"
            "with claimed_pipes() as wire:\n    claimed = wire is not None\nprint(claimed)\n")
    for stderr, claimed in ((subprocess.STDOUT, "False"), (subprocess.PIPE, "True")):
        proc = subprocess.run([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=stderr, text=True, env=server_env(), timeout=60)
        assert proc.stdout == claimed + "\n"
    # stdin stays open until the answers are in (a client that hangs up at once:
    # test_a_client_that_closes_its_input_at_once_still_gets_every_answer)
    proc = subprocess.Popen([sys.executable, "-m", "desk", "--desk", str(desk.root), "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=server_env())
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in wire_requests(tmp_path)).encode())
    proc.stdin.flush()
    lines = []
    while not any(line.startswith('{"jsonrpc":"2.0","id":2,') for line in lines):
        line = proc.stdout.readline().decode()
        assert line, "the server hung up before answering"
        lines.append(line)
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    proc.stdout.close()
    check_answers("".join(line for line in lines if line.startswith("{")))


def hang_up_at_once(argv: list[str], stdin: str, how: str) -> subprocess.CompletedProcess[str]:
    """Run `argv` with `stdin` written and closed at once, the way `how` gives it: a pipe (desk's
    own wire), a file, or a pipe with stderr on the wire too (`2>&1`; both the SDK's streams)."""
    if how == "file":
        with tempfile.TemporaryFile("w+") as file:
            file.write(stdin)
            file.seek(0)
            return subprocess.run(argv, stdin=file, capture_output=True, text=True, env=server_env(), timeout=60)
    return subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, text=True, env=server_env(), timeout=60,
                          stderr=subprocess.STDOUT if how == "2>&1" else subprocess.PIPE)


@pytest.mark.parametrize("how", ["pipe", "file", "2>&1"])
def test_a_client_that_closes_its_input_at_once_still_gets_every_answer(desk: DeskFolder, tmp_path: Path,
                                                                        identity: None, how: str) -> None:
    """`initialize`, a write and a read, then the end of input at once (`desk serve < requests`):
    every call read is answered and its answer written before the server exits. The SDK's
    serving loop cancels the calls in flight at the end of its input: the write's answer was lost
    (through the SDK's own streams every time) though its commit landed."""
    remember = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"name": "tea", "body": "Green tea.", "type": "preference",
                                                             "description": "Drink of choice", "triggers": ["tea"]}}}
    stdin = "".join(json.dumps(m) + "\n" for m in [*wire_requests(tmp_path), remember])
    proc = hang_up_at_once([sys.executable, "-m", "desk", "--desk", str(desk.root), "serve"], stdin, how)
    assert proc.returncode == 0, proc.stderr
    answers = {a["id"]: a for a in map(json.loads, (line for line in proc.stdout.splitlines() if line.startswith("{")))}
    assert sorted(answers) == [1, 2, 3], proc.stdout
    check_answers("\n".join(json.dumps(answers[i]) for i in (1, 2)))
    assert answers[3]["result"]["structuredContent"]["status"] == "created", answers[3]
    assert (desk.root / "memory" / "tea.md").is_file()


# A server whose tool awaits (as a desk call on the HTTP server's worker thread does): over desk's
# wire, the end of input then reached the SDK's serving loop before the call finished.
SLOW_TOOL = """
import anyio
from mcp.server.mcpserver import MCPServer
from desk.serve.server import serve_wire
from desk.serve.wire import claimed_pipes

server = MCPServer("slow")

@server.tool()
async def slow(text: str) -> str:
    await anyio.sleep(0.2)
    return text.upper()

with claimed_pipes() as wire:
    assert wire is not None
    anyio.run(serve_wire, server, *wire, backend="asyncio")
"""


def test_end_of_input_waits_for_a_call_that_awaits_on_desks_wire(tmp_path: Path) -> None:
    calls = [{"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
              "params": {"name": "slow", "arguments": {"text": f"c{n}"}}} for n in range(3)]
    cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12}}
    stdin = "".join(json.dumps(m) + "\n" for m in [*wire_requests(tmp_path)[:2], *calls, cancelled])
    proc = hang_up_at_once([sys.executable, "-c", SLOW_TOOL], stdin, "pipe")
    assert proc.returncode == 0, proc.stderr
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    # The cancelled call is never answered (the spec), and the end of input does not wait for it.
    assert sorted(answers) == [1, 10, 11], proc.stdout
    assert [answers[i]["result"]["structuredContent"] for i in (10, 11)] == [{"result": "C0"}, {"result": "C1"}]


# -- the size of one message ---------------------------------------------------------------------

def huge(i: int | str | None, size: int) -> bytes:
    """A tools/call line of about `size` bytes (its id first, as the SDK's client writes it)."""
    head = {"jsonrpc": "2.0", "id": i} if i is not None else {"jsonrpc": "2.0"}
    return line({**head, "method": "tools/call",
                 "params": {"name": "now_show", "arguments": {"section": "x" * size}}})


def test_a_message_past_the_limit_is_skipped_as_it_comes_and_the_ones_around_it_arrive() -> None:
    from desk.serve.wire import CHUNK, MAX_MESSAGE_BYTES, MessageTooLarge

    big = huge(2, MAX_MESSAGE_BYTES + 10)
    chunks = [line(request(1))] + [big[i:i + CHUNK] for i in range(0, len(big), CHUNK)] + [line(request(3))]
    got = received(chunks)
    assert got[0] == request(1) and got[2] == request(3)
    assert isinstance(got[1], MessageTooLarge) and got[1].request_id() == 2
    # its end and the next message in one read; a long line in one read; the last line unended
    tail = big[-100:] + line(request(4))
    got = received([big[:-100], tail, huge("seven", MAX_MESSAGE_BYTES), huge(8, MAX_MESSAGE_BYTES + 1)[:-1]])
    assert [type(g).__name__ for g in got] == ["MessageTooLarge", "dict", "MessageTooLarge", "MessageTooLarge"]
    assert [got[0].request_id(), got[2].request_id(), got[3].request_id()] == [2, "seven", 8]
    assert got[1] == request(4)
    just = huge(5, 0)
    just = huge(5, MAX_MESSAGE_BYTES - len(just) + 1)  # exactly the limit, and its newline: served
    assert len(just) == MAX_MESSAGE_BYTES + 1 and received([just])[0]["id"] == 5


@pytest.mark.parametrize("head, expected", [
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":', 7),
    (b'{"id": "a-b", "jsonrpc": "2.0", "method": "x"', "a-b"),
    (b'{"method":"tools/call","params":{"id":9}', None),          # an id inside the params is not its id
    (b'{"jsonrpc":"2.0","method":"notifications/x","params":{"x', None),
    (b'{"jsonrpc":"2.0","id":12345678901234567890,', None),        # not an id any client sends
    (b'\xff\xfe garbage', None),
])
def test_the_id_of_a_message_too_large_is_read_from_its_first_bytes_only_where_it_is_certain(
        head: bytes, expected: object) -> None:
    from desk.serve.wire import MessageTooLarge

    refused = MessageTooLarge(head)
    assert refused.request_id() == expected
    answer_ = refused.answer().message
    assert isinstance(answer_, mcp_types.JSONRPCError) and answer_.id == expected
    assert answer_.error.code == mcp_types.INVALID_REQUEST


def peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="Linux /proc")
def test_a_100_mb_message_to_desk_serve_is_answered_with_an_error_without_being_held(
        desk: DeskFolder, tmp_path: Path, identity: None) -> None:
    """Over a pipe: the server answers the request's id with Invalid Request, serves the next
    call, and never holds the message (its peak memory stays near what it is without one)."""
    proc = subprocess.Popen([sys.executable, "-m", "desk", "--desk", str(desk.root), "serve"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=server_env())
    assert proc.stdin is not None and proc.stdout is not None
    try:
        initialize, initialized, _ = wire_requests(tmp_path)
        proc.stdin.write(line(initialize) + line(initialized))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        before = peak_rss_kib(proc.pid)
        proc.stdin.write(huge(2, 100 * 1024 * 1024) + line(request(3)))
        proc.stdin.flush()
        refused, served = json.loads(proc.stdout.readline()), json.loads(proc.stdout.readline())
        after = peak_rss_kib(proc.pid)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
        assert proc.stderr is not None
        proc.stderr.close()
    assert refused["id"] == 2 and refused["error"]["code"] == mcp_types.INVALID_REQUEST
    assert "refused unread" in refused["error"]["message"]
    assert served["id"] == 3 and served["result"]["isError"] is False
    assert after - before < 50 * 1024, (before, after)  # KiB: half the message would be 50 MiB


def test_the_sdks_client_gets_an_error_for_a_call_past_the_limit_and_its_session_goes_on(
        desk: DeskFolder, identity: None) -> None:
    from mcp.shared.exceptions import MCPError

    from desk.serve.wire import MAX_MESSAGE_BYTES
    from tests.serve.mcp_client import stdio_session

    async def main() -> None:
        async with stdio_session(desk.root) as session:
            with pytest.raises(MCPError, match="refused unread"):
                await session.call_tool("recall", {"query": "x" * MAX_MESSAGE_BYTES})
            assert not (await session.call_tool("now_show", {})).is_error
    anyio.run(main)
