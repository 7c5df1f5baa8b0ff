"""`desk serve` benchmark (issue 12): a tool call through a running MCP server vs the same call in process.

  `remember` through the server (stdio, no process start) vs `Desk.remember` in process   target <= 1.2x
  `recall` (warm) through the server vs `Desk.recall` in process (warm)                    target <= 1.2x
  `recall`, read-only rounds (no write between calls: the cache stays warm on both sides)  target <= 1.2x
  `now_show`, read-only rounds: the server's fixed cost per call (the call itself is ~0.1 ms),
      and the CPU time a call costs the client (this process) and the server (Linux: schedstat)
  and, in the same read-only rounds, where that fixed cost goes:
  `now_show` through a second server with a minimal client (one JSON-RPC line written, one read
      and parsed: no SDK on the client side), and a pipe round trip to an echo process (no MCP)
  `recall` through that second server with the minimal client: the read-only ratio with the SDK
      client's own CPU left out (the server side alone; the measured row above stays the target's)

Usage: python bench/bench_serve.py [--memories 3,1000] [--rounds 30] [--reads 200] [--idle MS] [--probe]
                                  [--profile-server FILE]

Each desk size in `--memories` (default 3 and 1,000) is a run of its own, one after another, and
the run ends with the recall ratios of each. The desk is built as in bench_core.py (N memories,
one commit each). The server is the installed
`python -m desk serve`, started once with the MCP SDK's own client (`stdio_client` +
`ClientSession`), as a harness would keep it; its start is not measured. Each round makes the
in-process call and the server call back to back, alternating which goes first, and medians are
compared, so a slow moment on the shared machine hits both sides. Both write to the same desk, as
the assistant, so both pay for the same desk size. The desk is built in a child process, so the
bench process is as lean as a harness's.

`--idle MS` pauses before each read-only call (both sides), as a harness's calls come after the
model's turn rather than back to back. `--probe` starts the server through `bench/serve_probe.py`
(the same installed `desk serve`, its `Desk` calls time-stamped) and splits each call through the
server, from time stamps on both sides (one monotonic clock), into the desk call itself and what
comes before it (the client sending, the SDK reading and dispatching the request) and after it
(the SDK building and writing the answer, the client reading and validating it).
`--profile-server FILE` also runs the server under cProfile (stats in FILE, for `python -m pstats`).
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from bench_core import GIT_ENV, build_desk
from environment import describe
from mcp import ClientSession, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client

import desk as desk_api

QUERIES = ["topic5 benchmark fact", "benchmark value topic42", "fact topic7"]
PROBE = Path(__file__).with_name("serve_probe.py")
Sent = tuple[str | None, float, float]  # a server call: its row (None: a warm-up), sent, answered

def server_pid() -> int | None:
    """The `desk ... serve` child of this process (Linux /proc), else None."""
    try:
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with open(f"/proc/{entry.name}/stat") as stat, open(f"/proc/{entry.name}/cmdline", "rb") as cmd:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
                    if parent == os.getpid() and cmd.read().endswith(b"\0serve\0"):
                        return int(entry.name)
    except OSError:
        return None
    return None


def cpu_seconds(pid: int | None) -> float:
    """CPU time of every thread of `pid` so far, from the scheduler's nanosecond counts (0: unknown)."""
    if pid is None:
        return 0.0
    total = 0
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task.name}/schedstat") as schedstat:
                total += int(schedstat.read().split()[0])
    except OSError:
        return 0.0
    return total / 1e9


def remember_args(i: int, who: str) -> dict[str, object]:
    return {"name": f"{who}-{i:04d}", "type": "fact", "description": f"{who} benchmark memory {i}",
            "body": f"Fact recorded through {who}, round {i}.", "triggers": [f"topic{i % 97}"]}


def server_args(root: Path, stamps: Path | None, profile: Path | None) -> list[str]:
    """`python -m desk --desk ROOT serve`, or the same through serve_probe.py (time stamps, cProfile)."""
    desk_args = ["--desk", str(root), "serve"]
    if stamps is None:
        return ["-m", "desk", *desk_args]
    return [str(PROBE), "--stamps", str(stamps), *(["--profile", str(profile)] if profile else []), "--", *desk_args]


ECHO = "import os\nwhile data := os.read(0, 65536):\n    os.write(1, data)\n"
"""The floor: a process that writes back what it reads, as plainly as Python can (no MCP, no JSON)."""


class Piped:
    """A child process spoken to one line at a time over its stdin and stdout (blocking: the
    bench makes one call at a time)."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=GIT_ENV, cwd=cwd)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in, self._out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        self._buffer = b""

    def send(self, line: bytes) -> None:
        while line:
            line = line[os.write(self._in, line):]

    def receive(self) -> bytes:
        while b"\n" not in self._buffer:
            chunk = os.read(self._out, 65536)
            if not chunk:
                raise EOFError("the child process hung up")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


class MinimalClient(Piped):
    """`desk serve` with the least a client can do: each request one JSON line written, each
    answer one line read and parsed (`json.loads`), no SDK models, no schema check."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        super().__init__(args, cwd)
        self.ids = 0
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bench-minimal", "version": "1"}})
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def call(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self.ids += 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}).encode() + b"\n")
        answer: dict[str, object] = json.loads(self.receive())
        assert answer.get("id") == self.ids and "result" in answer, answer
        return answer


async def measure(root: Path, rounds: int, reads: int, cwd: Path, idle: float = 0.0,
                  stamps: Path | None = None, profile: Path | None = None
                  ) -> tuple[dict[str, tuple[float, float]], tuple[float, float], dict[str, list[Sent]]]:
    local = desk_api.open(root).with_trailers({"Desk-Client": "bench"})
    params = StdioServerParameters(command=sys.executable, args=server_args(root, stamps, profile),
                                   env=GIT_ENV, cwd=str(cwd))
    times: dict[str, tuple[list[float], list[float]]] = {"remember": ([], []), "recall": ([], [])}
    sent: dict[str, list[Sent]] = {"recall": [], "remember": [], "now_show": []}  # by tool, in call order
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=Implementation(name="bench", version="1")) as s:
            await s.initialize()
            pid = server_pid()
            fixed_cpu = [0.0, 0.0]  # the now_show rounds' CPU seconds: this process, the server
            t0 = time.perf_counter()
            await s.call_tool("recall", {"query": QUERIES[0]})  # warm both recall caches
            sent["recall"].append((None, t0, time.perf_counter()))
            local.recall(QUERIES[0])
            for i in range(rounds):
                for what in ("remember", "recall"):
                    args = remember_args(i, "api") if what == "remember" else {"query": QUERIES[i % 3]}
                    served = remember_args(i, "mcp") if what == "remember" else args

                    def in_process() -> None:
                        if what == "remember":
                            local.remember(f"api-{i:04d}", f"Fact recorded through api, round {i}.",
                                           type="fact", description=f"api benchmark memory {i}",
                                           triggers=[f"topic{i % 97}"], actor="assistant")
                        else:
                            local.recall(str(args["query"]))

                    async def through_server() -> None:
                        t0 = time.perf_counter()
                        result = await s.call_tool(what, served)
                        sent[what].append((what, t0, time.perf_counter()))
                        assert not result.is_error, result.content

                    for side in ((0, 1) if i % 2 else (1, 0)):
                        t0 = time.perf_counter()
                        if side == 0:
                            in_process()
                        else:
                            await through_server()
                        times[what][side].append(time.perf_counter() - t0)
            # Read-only rounds: what a call costs when nothing changed the desk since the last one.
            # Beside them, started now (after the SDK's server), the same now_show through a second
            # server with a minimal client, and a pipe round trip to an echo process.
            times.update({"recall, reads only": ([], []), "now_show, reads only": ([], []),
                          "now_show, minimal client": ([], []), "pipe round trip": ([], []),
                          "recall, minimal client": ([], [])})
            minimal = MinimalClient(server_args(root, None, None), cwd)
            echo = Piped(["-c", ECHO], cwd)
            minimal.call("tools/call", {"name": "now_show", "arguments": {}})
            minimal.call("tools/call", {"name": "recall", "arguments": {"query": QUERIES[0]}})  # its cache warm
            request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": "now_show", "arguments": {}}}).encode() + b"\n"
            for i in range(reads):
                for what, tool, args, local_call in (
                        ("recall, reads only", "recall", {"query": QUERIES[i % 3]},
                         functools.partial(local.recall, QUERIES[i % 3])),
                        ("now_show, reads only", "now_show", {}, local.now_show)):
                    for side in ((0, 1) if i % 2 else (1, 0)):
                        if idle:
                            time.sleep(idle)
                        t0 = time.perf_counter()
                        if side == 0:
                            local_call()
                        else:
                            c0, s0 = time.process_time(), cpu_seconds(pid)
                            result = await s.call_tool(tool, args)
                            sent[tool].append((what, t0, time.perf_counter()))
                            assert not result.is_error, result.content
                            if tool == "now_show":
                                fixed_cpu[0] += time.process_time() - c0
                                fixed_cpu[1] += cpu_seconds(pid) - s0
                        times[what][side].append(time.perf_counter() - t0)
                for what, floor_call in (("now_show, minimal client",
                                          functools.partial(minimal.call, "tools/call",
                                                            {"name": "now_show", "arguments": {}})),
                                         ("recall, minimal client",
                                          functools.partial(minimal.call, "tools/call",
                                                            {"name": "recall", "arguments": {"query": QUERIES[i % 3]}})),
                                         ("pipe round trip", lambda: (echo.send(request), echo.receive()))):
                    if idle:
                        time.sleep(idle)
                    t0 = time.perf_counter()
                    floor_call()
                    times[what][1].append(time.perf_counter() - t0)
            minimal.close()
            echo.close()
    medians = {what: (statistics.median(a) if a else 0.0, statistics.median(b)) for what, (a, b) in times.items()}
    return medians, (fixed_cpu[0] / reads, fixed_cpu[1] / reads), sent


def split_calls(sent: dict[str, list[Sent]], stamps: dict[str, list[list[float]]]
                ) -> dict[str, tuple[float, float, float, float]]:
    """Per row, the medians of: the round trip, before the desk call (sent -> the call starts in
    the server), the desk call, after it (the call ends -> the answer is back in the client)."""
    parts: dict[str, list[tuple[float, float, float, float]]] = {}
    for tool, calls in sent.items():
        served = stamps.get(tool, [])
        if len(served) != len(calls):  # e.g. a tool that called another Desk method: no pairing
            continue
        for (row, t_sent, t_back), (start, end) in zip(calls, served):
            if row is not None:
                parts.setdefault(row, []).append((t_back - t_sent, start - t_sent, end - start, t_back - end))
    return {row: tuple(statistics.median(p[k] for p in rows) for k in range(4))  # type: ignore[misc]
            for row, rows in parts.items()}


def sizes(text: str) -> list[int]:
    """`--memories`: one desk size or several, comma-separated (`3,1000`)."""
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or comma-separated numbers: {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"desk sizes must be 1 or more: {text!r}")
    return counts


def run(memories: int, ns: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """One desk of `memories` memories: build it, measure, print its rows; the medians by row."""
    with tempfile.TemporaryDirectory() as tmp:
        root, cwd = Path(tmp) / "desk", Path(tmp) / "cwd"
        cwd.mkdir()  # `python -m desk` from an empty folder imports the installed desk
        # Built in a child process: the bench process then holds no more than a harness would, so
        # the in-process side does not pay for a heap of 10,000 parsed memories (garbage
        # collection, and fork() for each git process copying a larger page table).
        builder = multiprocessing.get_context("spawn").Process(target=build_desk,
                                                                args=(root, memories, "full"))
        builder.start()
        builder.join()
        if builder.exitcode != 0:
            sys.exit(f"building the desk failed (exit {builder.exitcode})")
        stamps_file = Path(tmp) / "stamps.json" if ns.probe or ns.profile_server else None
        results, (client_cpu, server_cpu), sent = anyio.run(
            functools.partial(measure, root, ns.rounds, ns.reads, cwd, ns.idle / 1000, stamps_file,
                              ns.profile_server))
        stamps = json.loads(stamps_file.read_text()) if stamps_file is not None else None
    print(f"\ndesk        {memories:,} memories, one commit each; {ns.rounds} paired rounds, "
          f"{ns.reads} read-only rounds" + (f", {ns.idle:g} ms idle before each" if ns.idle else "")
          + f"; load average {os.getloadavg()[0]:.2f} at the end\n")
    for what, (api, server) in results.items():
        if what in ("now_show, minimal client", "pipe round trip"):
            continue
        if what == "recall, minimal client":  # the in-process side: the reads-only rounds' own
            api = results["recall, reads only"][0]
            print(f"{what:<24} in process {api * 1000:7.2f} ms   through the server {server * 1000:7.2f} ms   "
                  f"{server / api:.2f}x  (the server's side alone: the SDK client's CPU left out)")
            continue
        if what.startswith("now_show"):
            print(f"{what:<24} in process {api * 1000:7.2f} ms   through the server {server * 1000:7.2f} ms   "
                  f"fixed cost per call {(server - api) * 1000:.2f} ms")
            if server_cpu:
                print(f"{'':<24} CPU time a call: client (this process, the SDK's ClientSession) "
                      f"{client_cpu * 1000:.2f} ms, server {server_cpu * 1000:.2f} ms")
            continue
        ratio = server / api
        verdict = "OK" if ratio <= 1.2 else "MISSED"
        print(f"{what:<24} in process {api * 1000:7.2f} ms   through the server {server * 1000:7.2f} ms   "
              f"{ratio:.2f}x  (target <= 1.2x) {verdict}")
    fixed = results["now_show, reads only"][1] - results["now_show, reads only"][0]
    minimal = results["now_show, minimal client"][1] - results["now_show, reads only"][0]
    floor = results["pipe round trip"][1]
    print(f"{'where the fixed cost goes':<24} {fixed * 1000:.2f} ms = a pipe round trip to an echo process "
          f"{floor * 1000:.2f} + the server's MCP work (SDK + desk.serve) {(minimal - floor) * 1000:.2f} "
          f"+ the SDK client's {(fixed - minimal) * 1000:.2f} ms")
    print(f"{'':<24} (now_show through a second server with a minimal client: {minimal * 1000:.2f} ms "
          "beyond the in-process call)")
    if stamps is not None:
        print("\nwhere a call through the server goes (time stamps both sides, medians of each part):")
        for what, (trip, before, call, after) in split_calls(sent, stamps).items():
            print(f"{what:<24} round trip {trip * 1000:6.2f} ms = before the desk call {before * 1000:5.2f} "
                  f"+ the desk call {call * 1000:6.2f} + after it {after * 1000:5.2f} ms")
        if ns.profile_server:
            print(f"server profile: python -m pstats {ns.profile_server}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=sizes, default=[3, 1000],
                        help="memories in the desk, or several desk sizes comma-separated, each a run "
                             "of its own (default 3,1000)")
    parser.add_argument("--rounds", type=int, default=30, help="paired rounds per call (default 30)")
    parser.add_argument("--reads", type=int, default=200,
                        help="paired read-only rounds of recall and now_show after them (default 200)")
    parser.add_argument("--idle", type=float, default=0.0,
                        help="milliseconds to pause before each read-only call, both sides (default 0)")
    parser.add_argument("--probe", action="store_true",
                        help="time-stamp the desk calls in the server and split each call's time")
    parser.add_argument("--profile-server", type=Path, metavar="FILE",
                        help="run the server under cProfile (implies --probe); stats written to FILE")
    ns = parser.parse_args()
    print(describe(sys.argv))
    ratios = {memories: run(memories, ns) for memories in ns.memories}
    print("\nrecall through the server / in process (target <= 1.2x):")
    for memories, results in ratios.items():
        print(f"  {memories:>6,} memories: " + ", ".join(
            f"{what} {results[what][1] / results[what][0]:.2f}x" for what in ("recall", "recall, reads only"))
            + f", reads only with a minimal client {results['recall, minimal client'][1] / results['recall, reads only'][0]:.2f}x"
            + f"; remember {results['remember'][1] / results['remember'][0]:.2f}x")


if __name__ == "__main__":
    main()
