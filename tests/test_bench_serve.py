"""bench/bench_serve.py's probe: a server started through bench/serve_probe.py answers exactly as
`desk serve` does and time-stamps each desk call; the bench pairs those stamps with its own."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from types import ModuleType

import anyio
import pytest
from mcp import ClientSession, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client

from desk.layout import DeskFolder
from tests.serve.mcp_client import call, server_env, stdio_session

BENCH = Path(__file__).resolve().parents[1] / "bench"
pytestmark = pytest.mark.usefixtures("identity")


def bench_serve() -> ModuleType:
    sys.path.insert(0, str(BENCH))  # bench_serve imports its neighbours (bench_core, environment)
    try:
        spec = importlib.util.spec_from_file_location("bench_serve", BENCH / "bench_serve.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_the_probe_answers_as_desk_serve_does_and_stamps_each_desk_call(desk: DeskFolder, tmp_path: Path) -> None:
    stamps = tmp_path / "stamps.json"
    args = bench_serve().server_args(desk.root, stamps, None)
    assert args[0] == str(BENCH / "serve_probe.py") and args[-3:] == ["--desk", str(desk.root), "serve"]
    sent: list[tuple[float, float]] = []
    answers: dict[str, list[object]] = {"probe": [], "plain": []}

    async def calls(session: ClientSession, into: list[object]) -> None:
        for tool, arguments in (("recall", {"query": "report"}), ("now_show", {}), ("recall", {"query": "x y"})):
            t0 = time.perf_counter()
            into.append(await call(session, tool, **arguments))
            if into is answers["probe"]:
                sent.append((t0, time.perf_counter()))

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=args, env=server_env())
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, client_info=Implementation(name="probe", version="1")) as s:
                await s.initialize()
                await calls(s, answers["probe"])
        async with stdio_session(desk.root) as session:
            await calls(session, answers["plain"])

    anyio.run(main)

    def timeless(answer: object) -> object:  # a recall names the second it ran (as_of, query_id)
        if isinstance(answer, dict) and "query" in answer:
            return {**answer, "query": {k: v for k, v in answer["query"].items() if k not in ("as_of", "query_id")}}
        return answer
    assert [timeless(a) for a in answers["probe"]] == [timeless(a) for a in answers["plain"]]
    assert answers["probe"][0]["query"]["text"] == "report"  # type: ignore[index]
    got = json.loads(stamps.read_text())
    assert {tool: len(calls) for tool, calls in got.items()} == {"recall": 2, "remember": 0, "now_show": 1}
    for (start, end), (t_sent, t_back) in zip([got["recall"][0], got["now_show"][0], got["recall"][1]], sent):
        assert t_sent < start <= end < t_back  # one monotonic clock on both sides


def test_split_calls_pairs_each_tools_calls_in_order_and_leaves_out_warm_ups() -> None:
    split = bench_serve().split_calls
    sent = {"recall": [(None, 0.0, 10.0), ("recall", 20.0, 30.0), ("recall", 40.0, 48.0), ("reads", 50.0, 60.0)],
            "now_show": [("now", 70.0, 72.0)], "remember": [("remember", 80.0, 90.0)]}
    stamps = {"recall": [[1.0, 9.0], [21.0, 28.0], [41.0, 47.0], [52.0, 55.0]], "now_show": [[71.0, 71.5]],
              "remember": []}  # a remember the server never stamped: not paired, not guessed
    assert split(sent, stamps) == {"recall": (9.0, 1.0, 6.5, 1.5), "reads": (10.0, 2.0, 3.0, 5.0),
                                   "now": (2.0, 1.0, 0.5, 0.5)}


def test_memories_takes_one_desk_size_or_several() -> None:
    import argparse

    sizes = bench_serve().sizes
    assert sizes("3,1000") == [3, 1000] and sizes("1000") == [1000]
    for bad in ("", "3,,1000", "three", "0", "3,-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            sizes(bad)


def test_the_minimal_client_and_the_echo_process_answer_each_line(desk: DeskFolder, tmp_path: Path) -> None:
    """The rows that split the fixed cost: `now_show` through `desk serve` with no SDK on the client
    side (the same answer the SDK's client gets), and a pipe round trip to an echo process."""
    module = bench_serve()
    cwd = tmp_path / "cwd"  # an empty folder: `python -m desk` imports the installed desk
    cwd.mkdir()
    minimal = module.MinimalClient(module.server_args(desk.root, None, None), cwd)
    try:
        answer = minimal.call("tools/call", {"name": "now_show", "arguments": {}})
        result = answer["result"]
        assert result["isError"] is False and json.loads(result["content"][0]["text"]) == result["structuredContent"]
        assert minimal.call("tools/call", {"name": "now_show", "arguments": {"section": "doing"}})["id"] == 3
    finally:
        minimal.close()
    echo = module.Piped(["-c", module.ECHO], cwd)
    try:
        for line in (b'{"jsonrpc":"2.0"}', "日本語".encode(), b"x" * 60_000):  # less than a pipe holds
            echo.send(line + b"\n")
            assert echo.receive() == line
    finally:
        echo.close()
