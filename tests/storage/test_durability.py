"""Durability shown by what the process does (issue 35): a file desk keeps is written to a temp
file, fsynced, renamed over the old one, and then its folder is fsynced; an archive record is
fsynced before the next one is written.

A spy records the OS calls (`os.open`, `os.write`, `os.fsync`, `os.replace`, `os.unlink`,
`os.close`) and passes each through: the files stay real, and the order is what a power cut
would test.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import desk as desk_lib
from desk.archive.store import append_event
from desk.layout import DeskFolder
from desk.memory.operations import forget, remember

NOW = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)
Event = tuple[Any, ...]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Event]]:
    """The OS calls this process makes while the test runs, in order: (name, path or fd, ...)."""
    seen: list[Event] = []
    real = {name: getattr(os, name) for name in ("open", "write", "fsync", "replace", "unlink", "close")}

    def spy_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real["open"](path, flags, *args, **kwargs)
        seen.append(("open", os.path.realpath(os.fspath(path)), fd))
        return fd

    def spy_write(fd: int, data: Any) -> int:
        seen.append(("write", fd))
        return real["write"](fd, data)

    def spy_replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(("replace", os.path.realpath(os.fspath(src)), os.path.realpath(os.fspath(dst))))
        real["replace"](src, dst, *args, **kwargs)

    def spy_unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(("unlink", os.path.realpath(os.fspath(path))))
        real["unlink"](path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "write", spy_write)
    monkeypatch.setattr(os, "fsync", lambda fd: (seen.append(("fsync", fd)), real["fsync"](fd))[1])
    monkeypatch.setattr(os, "replace", spy_replace)
    monkeypatch.setattr(os, "unlink", spy_unlink)
    monkeypatch.setattr(os, "close", lambda fd: (seen.append(("close", fd)), real["close"](fd))[1])
    yield seen


def _opened(events: list[Event], fd: int, before: int) -> str | None:
    """The path `fd` was opened on, as of event `before` (fds are reused after a close)."""
    for event in reversed(events[:before]):
        if event[0] == "open" and event[2] == fd:
            return str(event[1])
    return None


def _folder_fsynced(events: list[Event], folder: str, after: int) -> bool:
    return any(e[0] == "fsync" and _opened(events, e[1], i) == folder for i, e in enumerate(events) if i > after)


def assert_durably_replaced(events: list[Event], path: Path) -> int:
    """`path` was written whole to a temp file, fsynced, renamed over `path`, then its folder
    fsynced, in that order; returns the rename's position."""
    target = os.path.realpath(path)
    renames = [i for i, e in enumerate(events) if e[0] == "replace" and e[2] == target]
    assert renames, f"{path} was not renamed into place"
    at = renames[-1]
    temp = events[at][1]
    fds = [e[2] for e in events[:at] if e[0] == "open" and e[1] == temp]
    assert fds, f"the temp file of {path} was not opened by this process"
    fd = fds[-1]
    start = max(i for i, e in enumerate(events[:at]) if e[0] == "open" and e[2] == fd)
    mine = [(i, e[0]) for i, e in enumerate(events[start:at], start) if e[1:2] == (fd,)]
    writes = [i for i, name in mine if name == "write"]
    syncs = [i for i, name in mine if name == "fsync"]
    assert writes, f"nothing was written to the temp file of {path}"
    assert syncs and syncs[-1] > writes[-1], f"the temp file of {path} was not fsynced before its rename"
    assert _folder_fsynced(events, os.path.dirname(target), at), f"{path.parent} was not fsynced after the rename"
    return at


def test_remember_writes_the_marker_the_memory_and_the_index_durably(desk: DeskFolder, calls: list[Event]) -> None:
    remember(desk, "alpha", type="fact", description="about alpha", body="Alpha is a fact.", now=NOW)
    memory = assert_durably_replaced(calls, desk.root / "memory/alpha.md")
    index = assert_durably_replaced(calls, desk.root / "MEMORY.md")
    markers = [e[2] for e in calls if e[0] == "replace" and Path(e[2]).name.startswith("desk-pending-")]
    assert len(markers) == 1  # desk's own record of the mutation, durable before any file is written
    assert assert_durably_replaced(calls, Path(markers[0])) < min(memory, index)


def test_now_md_is_written_durably(desk: DeskFolder, calls: list[Event]) -> None:
    desk_lib.open(desk.root).now_append("checking durability")
    assert_durably_replaced(calls, desk.root / "NOW.md")


def test_forgetting_a_memory_makes_the_removal_durable(desk: DeskFolder, calls: list[Event]) -> None:
    remember(desk, "alpha", type="fact", description="about alpha", body="Alpha is a fact.", now=NOW)
    calls.clear()
    forget(desk, "alpha", reason="no longer true")
    target = os.path.realpath(desk.root / "memory/alpha.md")
    gone = [i for i, e in enumerate(calls) if e[0] == "unlink" and e[1] == target]
    assert gone and _folder_fsynced(calls, os.path.dirname(target), gone[-1])
    assert_durably_replaced(calls, desk.root / "MEMORY.md")


def test_each_archive_record_is_fsynced_before_the_next_is_written(desk: DeskFolder, calls: list[Event]) -> None:
    for i in range(3):
        append_event(desk, "inbound", f"message {i}", at=NOW, now=NOW)
    files = [e for e in calls if e[0] == "open" and e[1].endswith(".jsonl")]
    assert len({e[1] for e in files}) == 1
    path = files[0][1]
    order = [e[0] for i, e in enumerate(calls) if e[0] in ("write", "fsync") and _opened(calls, e[1], i) == path]
    assert order == ["write", "fsync"] * 3
    created = next(i for i, e in enumerate(calls) if e in files)
    assert _folder_fsynced(calls, os.path.dirname(path), created)  # the new day file's name is durable too
