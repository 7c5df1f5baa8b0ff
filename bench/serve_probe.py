"""Run `desk ... serve` with time stamps of each desk call (and optionally cProfile): for bench_serve.py.

  python bench/serve_probe.py --stamps OUT.json [--profile OUT.prof] -- --desk PATH serve

The server is the installed desk's own CLI (`python -m desk ARGS`), unchanged: this wrapper only
wraps the `Desk` methods the benchmarked tools call (`recall`, `remember`, `now_show`) to note
when each call starts and ends on the monotonic clock (`time.perf_counter`, the same clock in
every process on Linux, so the bench can set them against its own send and receive times), and
writes them to OUT.json when the server exits (the client hung up). With `--profile`, cProfile
runs over the whole server process (the event loop's thread: the SDK's JSON-RPC handling, the
tool layer and the desk calls; not the SDK's stdio worker threads) and its stats go to OUT.prof
(read them with `python -m pstats OUT.prof`).
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import json
import runpy
import sys
import time
from collections.abc import Callable
from typing import Any

TIMED = ("recall", "remember", "now_show")


def stamp(stamps: dict[str, list[tuple[float, float]]], name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            stamps[name].append((start, time.perf_counter()))
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--stamps", required=True, help="where to write the desk calls' time stamps (JSON)")
    parser.add_argument("--profile", help="also run the server under cProfile and write its stats here")
    parser.add_argument("desk_args", nargs=argparse.REMAINDER, help="-- then desk's own arguments")
    ns = parser.parse_args()
    args = ns.desk_args[1:] if ns.desk_args[:1] == ["--"] else ns.desk_args
    from desk.api import Desk

    stamps: dict[str, list[tuple[float, float]]] = {name: [] for name in TIMED}
    for name in TIMED:
        setattr(Desk, name, stamp(stamps, name, getattr(Desk, name)))

    def write_stamps() -> None:
        with open(ns.stamps, "w") as out:
            json.dump(stamps, out)
    atexit.register(write_stamps)
    sys.argv = ["desk", *args]
    profile = cProfile.Profile() if ns.profile else None
    if profile is not None:
        profile.enable()
    try:
        runpy.run_module("desk", run_name="__main__")
    except SystemExit:
        pass
    finally:
        if profile is not None:
            profile.disable()
            profile.dump_stats(ns.profile)


if __name__ == "__main__":
    main()
