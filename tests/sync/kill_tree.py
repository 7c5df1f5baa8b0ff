"""Kill a desk command and every process it started, from inside git, at a named point.

Run by git as a test's reference-transaction hook (`kill_tree.py ref STATE`, the ref updates on
stdin), smudge filter (`kill_tree.py smudge PATH`, the file's content on stdin and stdout) or
before a merge driver (`kill_tree.py driver NAME`). When $DESK_TEST_KILL names this point
(`ref:STATE:REF`, `smudge:PATH` or `driver:NAME`), it finds the desk
process (its ancestor whose parent is $DESK_TEST_KILL_BELOW, the test) and SIGKILLs it with every
descendant, git and itself included: what a power cut, a stopped container or a kill of the
whole tree leaves. Everything is stopped first, so no process sees another die and reacts.

At a smudge point git has just opened PATH for the file it is checking out; the file is made
empty here before the kill, as git leaves it when killed between its open and its write.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])


def kill_the_tree() -> None:
    below = int(os.environ["DESK_TEST_KILL_BELOW"])
    top = os.getpid()
    while parent(top) != below:
        top = parent(top)
        if top <= 1:
            raise SystemExit("no desk process above this one")
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                children.setdefault(parent(int(entry.name)), []).append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    tree, todo = [], [top]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    others = [pid for pid in tree if pid != os.getpid()]
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    for pid in others:
        os.kill(pid, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    wanted = os.environ.get("DESK_TEST_KILL", "")
    mode = sys.argv[1]
    if mode == "ref":
        refs = [line.split()[-1] for line in sys.stdin.read().splitlines() if line.strip()]
        if any(wanted == f"ref:{sys.argv[2]}:{ref}" for ref in refs):
            kill_the_tree()
    elif mode == "driver":  # wrapped around a merge driver: git has written its .merge_file_* files
        if wanted == f"driver:{sys.argv[2]}":
            kill_the_tree()
    elif mode == "smudge":
        data = sys.stdin.buffer.read()
        if wanted == f"smudge:{sys.argv[2]}":
            Path(sys.argv[2]).write_bytes(b"")
            kill_the_tree()
        sys.stdout.buffer.write(data)


if __name__ == "__main__":
    main()
