"""desk's own `desk export jsonl` file, read back so the export round-trips."""

from __future__ import annotations

from pathlib import Path

from desk.interchange.foreign import json_line, read_text, refuse
from desk.interchange.items import MemoryItem, Source
from desk.formats.memory_file import MemoryMeta, MetaErrors


def read(path: Path) -> Source:
    if path.is_dir():
        raise refuse(str(path), "a folder; give the .jsonl file `desk export jsonl` wrote")
    rel = path.name
    source = Source("jsonl", str(path))
    for number, line in enumerate(read_text(path, rel, None).split("\n"), 1):
        if not line.strip():
            continue
        where = f"{rel}:{number}"
        obj = json_line(line, where)
        if not isinstance(obj, dict) or not isinstance(obj.get("meta"), dict) or not isinstance(obj.get("body"), str):
            raise refuse(where, "expected an object with `meta` (an object) and `body` (a string)")
        try:
            meta = MemoryMeta.validate(obj["meta"])
        except MetaErrors as exc:
            raise refuse(where, f"meta: {exc}") from None
        source.memories.append(MemoryItem(
            title=meta.name, body=obj["body"], type=meta.type, description=meta.description,
            origin=f"jsonl:{rel}:{number}", triggers=list(meta.triggers), importance=meta.importance,
            name=meta.name))
    return source
