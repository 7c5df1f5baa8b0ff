"""The records on the pre-commit hook's path are plain classes (issue 17.4: importing `dataclasses`
costs the hook ~6 ms): each behaves as the `@dataclass` it replaced, checked against that
dataclass declared here (construction, defaults, equality and hashing, repr, immutability,
`__match_args__`, `MemoryMeta.replace`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from desk.layout import DeskFolder
from desk.formats.memory_file import MemoryFile, MemoryMeta
from desk.formats.memory_index import IndexEntry
from desk.storage.frontmatter import Document
from desk.text.secrets import SecretFinding

T = dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc)


@dataclasses.dataclass(frozen=True)
class MemoryMetaWas:
    name: str
    description: str
    type: str
    triggers: list[str] = dataclasses.field(default_factory=list)
    importance: int | None = None
    source: str | None = None
    source_event: str | None = None
    origin: str | None = None
    evidence: list[str] = dataclasses.field(default_factory=list)
    key: str | None = None
    project: str | None = None
    expires: dt.datetime | None = None
    created: dt.datetime | None = None
    updated: dt.datetime | None = None
    schema: int | None = dataclasses.field(default=None, compare=False)


@dataclasses.dataclass(frozen=True)
class IndexEntryWas:
    name: str
    type: str
    description: str
    expires: str | None
    body_key: str
    triggers: tuple[str, ...] = ()
    updated: str | None = None
    body_tokens: int = 0
    importance: int | None = None
    source: str | None = None
    source_event: str | None = None
    updated_field: str | None = None
    injected_tokens: int = 0


@dataclasses.dataclass(frozen=True)
class DocumentWas:
    meta: dict[str, Any]
    body: str
    key_lines: dict[str, int]
    body_line: int


@dataclasses.dataclass(frozen=True)
class SecretFindingWas:
    kind: str
    line: int
    start: int
    end: int
    fingerprint: str
    preview: str


@dataclasses.dataclass
class DeskFolderWas:
    root: Path
    trailers: dict[str, str] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    found_by: str = dataclasses.field(default="explicit", compare=False)


def same_record(ours: object, was: object) -> None:
    """`ours` holds what `was` holds and shows it the same way (the class name aside)."""
    assert repr(ours).split("(", 1)[1] == repr(was).split("(", 1)[1]
    assert type(ours).__match_args__ == type(was).__match_args__  # type: ignore[attr-defined]
    for name in type(was).__match_args__:  # type: ignore[attr-defined]
        assert getattr(ours, name) == getattr(was, name), name


def pairs(cls: type, was: type, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    return cls(*args, **kwargs), was(*args, **kwargs)


CASES: list[tuple[type, type, tuple[Any, ...], dict[str, Any], dict[str, Any]]] = [
    # (class, its dataclass, args, kwargs, a change that makes another value)
    (MemoryMeta, MemoryMetaWas, ("a", "d", "fact"), {}, {"description": "e"}),
    (MemoryMeta, MemoryMetaWas, ("a", "d", "fact", ["t"], 3, "user", "e1", "import:x", ["e1"], "k", "p", T, T, T, 2),
     {}, {"triggers": ["u"]}),
    (MemoryMeta, MemoryMetaWas, (), {"name": "a", "description": "d", "type": "fact", "schema": 2, "created": T},
     {"updated": T}),
    (IndexEntry, IndexEntryWas, ("a", "fact", "d", None, "key"), {}, {"body_tokens": 3}),
    (IndexEntry, IndexEntryWas, ("a", "fact", "d", "2026-12-01T00:00:00Z", "key", ("t", "u"), "x", 4, 5, "user",
                                 "e", "y", 6), {}, {"triggers": ("t",)}),
    (Document, DocumentWas, ({"name": "a"}, "Body.\n", {"name": 2}, 4), {}, {"body_line": 5}),
    (SecretFinding, SecretFindingWas, ("aws", 1, 0, 20, "f" * 64, "AKIA****"), {}, {"line": 2}),
]


@pytest.mark.parametrize(("cls", "was", "args", "kwargs", "change"), CASES)
def test_a_plain_record_is_what_its_frozen_dataclass_was(cls: type, was: type, args: tuple[Any, ...],
                                                         kwargs: dict[str, Any], change: dict[str, Any]) -> None:
    ours, theirs = pairs(cls, was, *args, **kwargs)
    same_record(ours, theirs)
    again = cls(*args, **kwargs)
    assert ours == again and not ours != again and ours is not again
    fields = {f.name: getattr(theirs, f.name) for f in dataclasses.fields(theirs)}
    other = cls(**{**fields, **change})
    assert ours != other and (ours == other) == (theirs == was(**{**fields, **change}))
    assert ours != theirs and ours.__eq__(theirs) is NotImplemented  # another class: never equal
    try:
        expected: int | None = hash(theirs)
    except TypeError:  # a list or dict inside: unhashable, as the dataclass was
        expected = None
        with pytest.raises(TypeError):
            hash(ours)
    if expected is not None:
        assert hash(ours) == expected == hash(again)
    name = next(iter(fields))
    with pytest.raises(AttributeError):
        setattr(ours, name, "x")
    with pytest.raises(AttributeError):
        delattr(ours, name)
    with pytest.raises(AttributeError):
        ours.not_a_field = 1
    assert getattr(ours, name) == fields[name]
    with pytest.raises(TypeError):
        cls(*args, **kwargs, no_such_field=1)


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
    was = DeskFolderWas(tmp_path, {"Desk-Client": "x"}, "cwd")
    assert repr(ours).split("(", 1)[1] == repr(was).split("(", 1)[1]
    assert ours == DeskFolder(tmp_path) and ours != DeskFolder(tmp_path / "other")
    assert DeskFolder(tmp_path).trailers == {} and DeskFolder(tmp_path).found_by == "explicit"
    with pytest.raises(TypeError):
        hash(ours)  # mutable and compared: unhashable, as the dataclass was
    ours.trailers = {"Desk-Client": "y"}  # Desk.with_trailers sets it on a copy
    assert ours.trailers == {"Desk-Client": "y"}
    assert DeskFolder(root=tmp_path, found_by="env").found_by == "env"
