"""The records desk's own code relies on behaving as declared: a memory's `schema` is shown but not
compared, `MemoryMeta.replace` keeps the rest, and a DeskFolder compares by its root and stays
mutable (`Desk.with_trailers` sets trailers on a copy)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.formats.memory_file import MemoryFile, MemoryMeta

T = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)


def test_a_memory_s_schema_is_shown_but_not_compared_and_replace_keeps_the_rest() -> None:
    meta = MemoryMeta("a", "d", "fact", ["t"], created=T, schema=2)
    assert meta == MemoryMeta("a", "d", "fact", ["t"], created=T)  # another schema, the same memory
    assert "schema=2" in repr(meta)
    changed = meta.replace(description="e", evidence=["x"])
    assert (changed.description, changed.evidence, changed.triggers, changed.created, changed.schema) == \
        ("e", ["x"], ["t"], T, 2)
    assert meta.description == "d"  # unchanged
    with pytest.raises(TypeError):
        meta.replace(colour="red")
    assert MemoryMeta("a", "d", "fact").triggers == [] and MemoryMeta("a", "d", "fact").triggers is not \
        MemoryMeta("a", "d", "fact").triggers  # a fresh list each, as default_factory made
    memory, was = MemoryFile(meta, "Body.\n"), MemoryFile(meta, "Body.\n")
    assert memory == was and memory != MemoryFile(meta, "Other.\n") and repr(memory).startswith("MemoryFile(meta=")
    with pytest.raises(TypeError):
        hash(memory)  # a list inside, as the frozen dataclass was
    with pytest.raises(AttributeError):
        memory.body = "x"  # type: ignore[misc]


def test_a_desk_folder_compares_by_its_root_and_stays_mutable(tmp_path: Path) -> None:
    ours = DeskFolder(tmp_path, {"Desk-Client": "x"}, "cwd")
    assert repr(ours) == f"DeskFolder(root={tmp_path!r}, found_by='cwd')"
    assert ours == DeskFolder(tmp_path) and ours != DeskFolder(tmp_path / "other")
    assert DeskFolder(tmp_path).trailers == {} and DeskFolder(tmp_path).found_by == "explicit"
    with pytest.raises(TypeError):
        hash(ours)  # mutable and compared: unhashable, as the dataclass was
    ours.trailers = {"Desk-Client": "y"}  # Desk.with_trailers sets it on a copy
    assert ours.trailers == {"Desk-Client": "y"}
    assert DeskFolder(root=tmp_path, found_by="env").found_by == "env"
