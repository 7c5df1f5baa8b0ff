"""A mem0 export (`get_all`'s `{"results": [...]}`, or a list): one memory each, type and triggers
from `metadata.type` and the categories, provenance `mem0:<id>`."""

from __future__ import annotations

from pathlib import Path

from desk.interchange.foreign import read_json, refuse
from desk.interchange.items import MemoryItem, Source, derive_triggers, one_line, tag_list
from desk.interchange.readers.notes import desk_type


def read(path: Path) -> Source:
    if path.is_dir():
        raise refuse(str(path), "a folder; give the mem0 export's JSON file")
    data = read_json(path, path.name)
    items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise refuse(path.name, "expected a list of memories, or an object with `results` (mem0's get_all)")
    source = Source("mem0", str(path))
    for i, item in enumerate(items):
        where = f"{path.name}: memory {i}"
        if not isinstance(item, dict):
            raise refuse(where, "not an object")
        text, ident = item.get("memory"), item.get("id")
        if not isinstance(text, str):
            raise refuse(where, "`memory` (the text) is missing or not a string")
        if not isinstance(ident, (str, int)) or isinstance(ident, bool):
            raise refuse(where, "`id` is missing or not a string")
        raw = item.get("metadata")
        metadata: dict[str, object] = raw if isinstance(raw, dict) else {}
        categories = tag_list(item.get("categories"))
        type_ = desk_type(metadata.get("type"), "")
        for category in categories:
            type_ = type_ or desk_type(category, "")
        description = one_line(text)
        source.memories.append(MemoryItem(
            title=description, body=text, type=type_ or "fact", description=description,
            origin=f"mem0:{ident}", triggers=derive_triggers(categories, description)))
    return source
