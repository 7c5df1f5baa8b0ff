"""atomic_write: the new bytes or the old ones, never half; no temporary file left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from desk.storage.atomic import TEMP_PREFIX, atomic_write, write_derived


def test_atomic_write_replaces_the_file_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "note.md"
    atomic_write(target, b"first\n")
    atomic_write(target, b"second\r\n\x00\xff")
    assert target.read_bytes() == b"second\r\n\x00\xff"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["note.md"]


def test_a_failed_write_keeps_the_old_bytes_and_removes_its_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # os.replace of a file onto a directory fails after the temporary file is written
    (target / "inside").write_bytes(b"kept")
    with pytest.raises(OSError):
        atomic_write(target, b"new")
    assert (target / "inside").read_bytes() == b"kept"
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]


def test_temporary_files_never_follow_or_reuse_an_existing_name(tmp_path: Path) -> None:
    """Names carry TEMP_PREFIX (doctor finds leftovers by it) and are created exclusively: a
    symlink planted under the prefix is never written through."""
    outside = tmp_path / "outside"
    outside.write_bytes(b"untouched")
    folder = tmp_path / "desk"
    folder.mkdir()
    for i in range(50):
        os.symlink(outside, folder / f"{TEMP_PREFIX}{i:012x}")
    for i in range(20):
        atomic_write(folder / "f", str(i).encode())
    assert outside.read_bytes() == b"untouched"
    assert (folder / "f").read_bytes() == b"19"
    assert len(list(folder.iterdir())) == 51


def test_a_derived_file_is_replaced_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "record"
    target.write_bytes(b"old")
    assert write_derived(target, b"new\n\0bytes") is True
    assert target.read_bytes() == b"new\n\0bytes" and sorted(tmp_path.iterdir()) == [target]


def test_a_derived_file_that_cannot_be_written_is_not_kept_and_raises_nothing(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    assert write_derived(tmp_path / "missing" / "record", b"data") is False  # no such folder
    assert write_derived(tmp_path / "a-file" / "record", b"data") is False  # ENOTDIR
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_every_temporary_file_renamed_into_place_is_atomic_writes() -> None:
    """One atomic write (STYLE.md): no module but desk.storage.atomic writes a temporary file and
    renames it over another (`os.replace(tmp, path)`, `tmp.replace(path)`), so every such write
    names its file on a full disk and leaves no temporary file behind. desk.archive.store links its
    clone id into place instead (a link refuses to replace, which is the point there)."""
    import ast

    desk = Path(__file__).resolve().parents[2] / "desk"
    offenders = []
    for path in sorted(desk.rglob("*.py")):
        if path == desk / "storage" / "atomic.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "replace" and node.args):
                continue
            source = node.args[0] if ast.unparse(node.func.value) == "os" else node.func.value
            if "tmp" in ast.unparse(source).lower():
                offenders.append(f"{path.relative_to(desk)}:{node.lineno}")
    assert offenders == []
