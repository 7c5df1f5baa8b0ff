"""Any folder of Markdown notes (basic-memory, Obsidian, Letta): one memory a note, desk's own
fields taken as they are (a `desk export markdown` folder imports back unchanged); hidden folders
are skipped."""

from __future__ import annotations

import re
from pathlib import Path

from desk.interchange.foreign import read_note, refuse, shown_name
from desk.interchange.items import Source
from desk.interchange.readers.notes import desk_type, note_memory

MAX_NOTES = 100_000


def read(root: Path) -> Source:
    if root.is_file() and root.suffix == ".md":
        paths, base = [root], root.parent
    elif root.is_dir():
        paths, base = sorted(root.rglob("*.md")), root
    else:
        raise refuse(str(root), "not a Markdown file or a folder of notes")
    source = Source("markdown", str(root))
    for path in paths:
        parts = path.relative_to(base).parts
        if any(part.startswith(".") for part in parts):
            continue
        if path.is_symlink():
            source.skipped.append(f"{shown_name(path, base)}: a symlink (not followed)")
            continue
        if len(source.memories) >= MAX_NOTES:
            raise refuse(str(root), f"more than {MAX_NOTES} notes; import a smaller folder at a time")
        rel = shown_name(path, base)
        note = read_note(path, rel)
        title = next((note.meta[k] for k in ("title", "name", "label")
                      if isinstance(note.meta.get(k), str) and note.meta[k].strip()), None)
        if title is None:
            heading = re.search(r"^#\s+(.+)$", note.body, re.MULTILINE)
            title = heading.group(1).strip() if heading else shown_name(Path(path.stem))
        source.memories.append(note_memory(note, f"markdown:{rel}", desk_type(note.meta.get("type")), title))
    return source
