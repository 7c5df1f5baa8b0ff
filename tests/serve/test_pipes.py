"""`desk.serve.pipes`: the stdio wire read and written on the event loop, over real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from desk.layout import DeskFolder
from desk.serve.pipes import PipeLines, PipeWriter
from tests.serve.mcp_client import server_env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the pipe wire is POSIX only")


def lines_of(chunks: list[bytes]) -> list[str]:
    """What `PipeLines` yields for `chunks` written to a pipe one after another, then closed."""
    read_fd, write_fd = os.pipe()
    got: list[str] = []

    async def main() -> None:
        async def feed() -> None:
            for chunk in chunks:
                os.write(write_fd, chunk)
                await anyio.sleep(0)
            os.close(write_fd)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            async for line in PipeLines(read_fd):
                got.append(line)
    try:
        anyio.run(main)
    finally:
        os.close(read_fd)
    return got


def test_lines_split_across_chunks_and_many_in_one_chunk() -> None:
    assert lines_of([b'{"a":', b'1}\n{"b":2}\n{"c"', b":3}\n"]) == ['{"a":1}\n', '{"b":2}\n', '{"c":3}\n']


def test_hostile_bytes_keep_their_line_boundaries() -> None:
    got = lines_of([b"one\r\n", b"\xff\xfe bad utf-8\n", "zero\u200bwidth\n".encode(), b"last, no newline"])
    assert got == ["one\r\n", "\ufffd\ufffd bad utf-8\n", "zero\u200bwidth\n", "last, no newline"]


def test_a_multibyte_character_split_between_reads_is_kept_whole() -> None:
    data = "日本語\n".encode()
    assert lines_of([data[:4], data[4:]]) == ["日本語\n"]


def test_an_empty_pipe_ends_the_lines() -> None:
    assert lines_of([]) == []


def test_a_long_answer_is_written_whole_while_the_reader_is_slower_than_the_pipe() -> None:
    """More than a pipe holds (64 KiB on Linux): the writer waits for room instead of failing or
    blocking the loop, and the reader on the same loop gets every byte."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    answer = json.dumps({"text": "x" * 700_000, "tail": "日本語"}) + "\n"
    got: list[str] = []

    async def main() -> None:
        async def write() -> None:
            writer = PipeWriter(write_fd)
            await writer.write(answer)
            await writer.flush()
            os.close(write_fd)

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            async for line in PipeLines(read_fd):
                got.append(line)
    try:
        anyio.run(main)
    finally:
        os.close(read_fd)
    assert got == [answer]


def test_claimed_pipes_divert_fd_0_and_1_while_serving_and_restore_them() -> None:
    code = textwrap.dedent("""
        import os, sys
        from desk.serve.pipes import claimed_pipes
        with claimed_pipes() as wire:
            assert wire is not None
            print("stray output", flush=True)          # fd 1 is stderr now: not on the wire
            os.write(1, b"a child's stray bytes\\n")
            assert os.read(0, 10) == b""               # fd 0 reads the null device
            stdin, stdout = wire
            import anyio
            async def main():
                async for line in stdin:
                    await stdout.write("echo " + line)
                    await stdout.flush()
            anyio.run(main)
        print("after", flush=True)                     # fd 1 is the pipe again
    """)
    proc = subprocess.run([sys.executable, "-c", code], input="one\ntwo\n", capture_output=True, text=True,
                          env=server_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "echo one\necho two\nafter\n"
    assert "stray output" in proc.stderr and "a child's stray bytes" in proc.stderr


def test_serve_with_stdin_from_a_file_keeps_the_sdks_own_streams(desk: DeskFolder, tmp_path: Path,
                                                                  identity: None) -> None:
    """Not a pipe (a file, a terminal): nothing is claimed by desk, the SDK's stdio serves."""
    requests = tmp_path / "requests.jsonl"
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "file", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "now_show", "arguments": {}}},
    ]
    requests.write_text("".join(json.dumps(m) + "\n" for m in messages))
    with requests.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk.root), "serve"], stdin=stdin,
                              capture_output=True, text=True, env=server_env(), timeout=60)
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "desk"
    assert answers[2]["result"]["isError"] is False and "structuredContent" in answers[2]["result"]
