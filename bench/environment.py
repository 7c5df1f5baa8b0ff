"""What a benchmark ran on, printed as its first lines so a figure can be traced and reproduced.

    from environment import describe      # bench/ is on sys.path when a bench script runs
    print(describe(sys.argv))

The date (UTC), the interpreter, which desk was imported (an editable install runs the tree's
code; a non-editable one runs what `pip install .` copied, and its start-up differs by the
editable finder's ~15 ms), the tree's commit, the cores and the load average. Nothing here puts the
repository on sys.path: a bench imports whatever desk its interpreter has.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from pathlib import Path


def install_kind() -> str:
    """How the imported desk is installed: editable, non-editable, or found on sys.path only."""
    import desk

    try:
        dist = importlib.metadata.distribution("desk")
    except importlib.metadata.PackageNotFoundError:
        return f"not installed (imported from {Path(desk.__file__).parent})"
    direct = dist.read_text("direct_url.json")
    editable = bool(direct and json.loads(direct).get("dir_info", {}).get("editable"))
    kind = "editable install" if editable else "non-editable install"
    source = json.loads(direct).get("url", "") if direct else ""
    origin = f" of {source}" if source and not editable else ""
    return f"{kind} {dist.version}{origin} (imported from {Path(desk.__file__).parent})"


def tree_commit() -> str:
    """The commit of the repository holding this bench script (what the figures were taken on)."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=Path(__file__).parent, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out + (" (with uncommitted changes)" if dirty else "")


def describe(argv: list[str]) -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"date        {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"command     {Path(sys.executable)} {' '.join(argv)}",
        f"python      {platform.python_version()} ({platform.python_implementation()})",
        f"desk        {install_kind()}",
        f"bench/ at   {tree_commit()} (the scripts; a non-editable install runs the code it copied)",
        f"machine     {os.cpu_count()} cores, load average {load} (1, 5, 15 min)",
    ]
    return "\n".join(lines)
