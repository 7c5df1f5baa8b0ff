"""A/B of two `desk serve` versions (issue 12): which one's tool call is cheaper, with the start-order bias cancelled.

Usage: python bench/bench_serve_ab.py A_TREE B_TREE [--memories 3,1000] [--runs 4] [--reads 150] [--writes 30]

A_TREE and B_TREE are desk source trees (a checkout or `git archive REV | tar -x -C DIR`): each
server is `python -m desk serve` run with PYTHONPATH=TREE by this interpreter (so the SDK is this
interpreter's). Both serve the same desk, with the SDK's own client, beside the same call in
process. Within a run each round makes the three calls (in process, A, B) in one of the six
orders, each in turn, so a slow moment on the shared machine hits all three; the runs alternate
which server is started first (a server started first was measured faster, 0.5-1.3 ms a recall,
when both were the same code: docs/agents.md, Performance). Each run first makes `--writes`
rounds of `remember` (each side its own new memory), then the read-only rounds. Rows: `remember`
and read-only `recall` (ratios to the in-process call) and `now_show` (its time beyond the
in-process call: the fixed cost of a tool call), the median of each run, then the median over the
runs.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from bench_core import GIT_ENV, build_desk
from bench_serve import QUERIES, sizes
from environment import describe
from mcp import ClientSession, Implementation, StdioServerParameters
from mcp.client.stdio import stdio_client

import desk as desk_api

Medians = dict[tuple[str, str], float]  # (tool, side) -> median seconds


async def one_run(root: Path, cwd: Path, trees: list[tuple[str, Path]], reads: int, writes: int,
                  run: int) -> Medians:
    """Start the servers in the order of `trees`; paired rounds of `remember`, then read-only
    rounds, the calls of each round in all orders in turn."""
    local = desk_api.open(root).with_trailers({"Desk-Client": "bench"})
    async with AsyncExitStack() as stack:
        sessions: dict[str, ClientSession] = {}
        for name, tree in trees:
            env = {**GIT_ENV, "PYTHONPATH": str(tree)}
            params = StdioServerParameters(command=sys.executable, args=["-m", "desk", "--desk", str(root), "serve"],
                                           env=env, cwd=str(cwd))
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(
                ClientSession(read, write, client_info=Implementation(name="bench-ab", version="1")))
            await session.initialize()
            await session.call_tool("recall", {"query": QUERIES[0]})  # warm its recall cache
            sessions[name] = session
        local.recall(QUERIES[0])
        orders = list(itertools.permutations(["in process", *sessions]))
        times: dict[tuple[str, str], list[float]] = {}
        for i in range(writes):
            for side in orders[i % len(orders)]:
                name = f"ab-{run}-{side.replace(' ', '-')}-{i:04d}".lower()
                fields = {"body": f"Fact {i} of run {run} recorded through {side}.", "type": "fact",
                          "description": f"{side} benchmark memory {i}, run {run}", "triggers": [f"topic{i % 97}"]}
                t0 = time.perf_counter()
                if side == "in process":
                    local.remember(name, str(fields.pop("body")), actor="assistant", **fields)  # type: ignore[arg-type]
                else:
                    result = await sessions[side].call_tool("remember", {"name": name, **fields})
                    assert not result.is_error, result.content
                times.setdefault(("remember", side), []).append(time.perf_counter() - t0)
        local.recall(QUERIES[0])  # warm again after the writes, as the servers' next recall is
        for session in sessions.values():
            await session.call_tool("recall", {"query": QUERIES[0]})
        for i in range(reads):
            for tool in ("recall", "now_show"):
                args = {"query": QUERIES[i % 3]} if tool == "recall" else {}
                for side in orders[i % len(orders)]:
                    t0 = time.perf_counter()
                    if side == "in process":
                        getattr(local, tool)(**args)
                    else:
                        result = await sessions[side].call_tool(tool, args)
                        assert not result.is_error, result.content
                    times.setdefault((tool, side), []).append(time.perf_counter() - t0)
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("a", type=Path, help="server A's desk source tree (PYTHONPATH)")
    parser.add_argument("b", type=Path, help="server B's desk source tree (PYTHONPATH)")
    parser.add_argument("--memories", type=sizes, default=[3, 1000],
                        help="desk sizes, comma-separated, each its own desk (default 3,1000)")
    parser.add_argument("--runs", type=int, default=4,
                        help="runs per desk size, alternating which server starts first (default 4)")
    parser.add_argument("--reads", type=int, default=150, help="read-only rounds per run (default 150)")
    parser.add_argument("--writes", type=int, default=30, help="rounds of remember per run, first (default 30)")
    ns = parser.parse_args()
    for tree in (ns.a, ns.b):
        if not (tree / "desk" / "__init__.py").is_file():
            sys.exit(f"{tree} is not a desk source tree (no desk/__init__.py)\nhint: pass a checkout of desk")
    print(describe(sys.argv))
    print(f"A           {ns.a.resolve()}\nB           {ns.b.resolve()}")
    for memories in ns.memories:
        with tempfile.TemporaryDirectory() as tmp:
            root, cwd = Path(tmp) / "desk", Path(tmp) / "cwd"
            cwd.mkdir()
            builder = multiprocessing.get_context("spawn").Process(target=build_desk, args=(root, memories, "full"))
            builder.start()
            builder.join()
            if builder.exitcode != 0:
                sys.exit(f"building the desk failed (exit {builder.exitcode})")
            print(f"\n{memories:,} memories, {ns.writes} rounds of remember then {ns.reads} read-only rounds a run "
                  "(now_show: beyond the in-process call)")
            runs: list[Medians] = []
            for run in range(ns.runs):
                trees = [("A", ns.a), ("B", ns.b)] if run % 2 == 0 else [("B", ns.b), ("A", ns.a)]
                medians = anyio.run(one_run, root, cwd, trees, ns.reads, ns.writes, run)
                runs.append(medians)
                print(f"  run {run + 1}, {trees[0][0]} started first, load {os.getloadavg()[0]:.2f}: "
                      + row(medians))
            overall = {key: statistics.median(m[key] for m in runs) for key in runs[0]}
            print("  median of the runs: " + row(overall))


def row(medians: Medians) -> str:
    fixed = {side: medians[("now_show", side)] - medians[("now_show", "in process")] for side in ("A", "B")}
    parts = []
    for tool in ("remember", "recall"):
        local = medians.get((tool, "in process"))
        if local is None:
            continue
        parts.append(f"{tool} in process {local * 1000:.2f} ms, " + ", ".join(
            f"{side} {medians[(tool, side)] * 1000:.2f} ({medians[(tool, side)] / local:.2f}x)" for side in ("A", "B")))
    return "; ".join(parts) + f"; now_show +{fixed['A'] * 1000:.2f} / +{fixed['B'] * 1000:.2f} ms"


if __name__ == "__main__":
    main()
