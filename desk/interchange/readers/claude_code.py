"""Claude Code: a project folder `~/.claude/projects/<project>/`, its `memory/` folder, or one
`<session>.jsonl` transcript (docs/import-export.md). Topic files become memories, transcripts
records; CLAUDE.md files are a person's instructions: proposed for AGENTS.md, never written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from desk.interchange.foreign import json_line, read_note, read_text, refuse, shown_name
from desk.interchange.items import MemoryItem, Proposal, RecordItem, Source, derive_triggers, one_line
from desk.interchange.readers.notes import bullets, note_memory, section_type
from desk.vocabulary import MEMORY_TYPES

# Claude Code's four memory types and desk's six, both ways (docs/import-export.md).
FROM_CLAUDE = {"user": "preference", "feedback": "convention", "project": "fact", "reference": "reference"}
TO_CLAUDE = {"preference": "user", "convention": "feedback", "pitfall": "feedback", "decision": "project",
             "fact": "project", "reference": "reference"}
DESK_TYPE_KEY = "desk_type"  # written by `desk export claude-code` where the mapping loses desk's type
_INDEX_LINK = re.compile(r"^\[[^\]]*\]\(([^)]+\.md)\)")
ROLES = {"user": ("inbound", "user"), "assistant": ("outbound", "assistant")}


def read(root: Path) -> Source:
    if root.is_file() and root.suffix == ".jsonl":
        source = Source("claude-code", str(root))  # one session's transcript (a hook's `transcript_path`)
        _session(root, root.name, source)
        return source
    if not root.is_dir():
        raise refuse(str(root), "not a folder or a session transcript; give a Claude Code project folder, "
                                "its memory/ folder or one <session>.jsonl",
                     hint="e.g. ~/.claude/projects/<project>/ or ~/.claude/projects/<project>/memory/")
    source = Source("claude-code", str(root))
    memory_dir: Path | None = root / "memory" if (root / "memory").is_dir() else root
    if (root / "memory").is_symlink():
        _skip(source, root / "memory", root)  # a linked folder may lead anywhere: not read
        memory_dir = None
    for path in sorted(memory_dir.glob("*.md")) if memory_dir is not None else ():
        rel = shown_name(path, root)
        if path.name in ("CLAUDE.md", "CLAUDE.local.md"):
            continue  # a person's instructions (below), never a memory
        if path.is_symlink():
            _skip(source, path, root)
        elif path.name == "MEMORY.md":
            _index_bullets(read_text(path, rel), rel, source)
        else:
            source.memories.append(_memory(path, rel))
    for rel in ("CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md"):
        if (root / rel).is_symlink():
            _skip(source, root / rel, root)
        elif (root / rel).is_file():
            read_text(root / rel, rel)
            source.proposals.append(Proposal("AGENTS.md", f"claude-code:{rel}",
                                             "a person's instructions: merge into AGENTS.md by hand if wanted"))
    for path in sorted(root.glob("*.jsonl")):
        if path.is_symlink():
            _skip(source, path, root)
        else:
            _session(path, shown_name(path, root), source)
    return source


def _skip(source: Source, path: Path, root: Path) -> None:
    """A symlink in the source is listed as skipped, never followed (as the markdown reader does):
    it may lead out of the folder given, to a file the person did not mean to import."""
    source.skipped.append(f"{shown_name(path, root)}: a symlink (not followed)")


def _memory(path: Path, rel: str) -> MemoryItem:
    note = read_note(path, rel)
    meta = note.meta
    wanted = meta.get(DESK_TYPE_KEY)
    claude_type = meta.get("type")
    if isinstance(wanted, str) and wanted in MEMORY_TYPES:
        type_ = wanted
    elif isinstance(claude_type, str) and claude_type in FROM_CLAUDE:
        type_ = FROM_CLAUDE[claude_type]
    else:
        type_ = claude_type if isinstance(claude_type, str) and claude_type in MEMORY_TYPES else "fact"
    title = meta["name"] if isinstance(meta.get("name"), str) and meta["name"].strip() else shown_name(Path(path.stem))
    return note_memory(note, f"claude-code:{rel}", type_, title)


def _index_bullets(text: str, rel: str, source: Source) -> None:
    """MEMORY.md lines that hold a fact themselves (not a link to a topic file) become memories."""
    for bullet in bullets(text):
        if _INDEX_LINK.match(bullet.text):
            continue
        description = one_line(bullet.text)
        source.memories.append(MemoryItem(
            title=description, body=bullet.text, type=section_type(bullet.section),
            description=description, origin=f"claude-code:{rel}:{bullet.line}",
            triggers=derive_triggers([], description)))


def _session(path: Path, rel: str, source: Source) -> None:
    text = read_text(path, rel, None)
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        obj = json_line(line, f"{rel}:{number}")
        if not isinstance(obj, dict):
            raise refuse(f"{rel}:{number}", "each line must be a JSON object")
        if obj.get("type") not in ROLES or obj.get("isMeta"):
            continue
        content = _text(obj.get("message"))
        if not content:
            continue  # tool calls and results only: not conversation
        session = obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else shown_name(Path(path.stem))
        uuid = obj.get("uuid") if isinstance(obj.get("uuid"), str) else str(number)
        at = obj.get("timestamp")
        if not isinstance(at, str):
            raise refuse(f"{rel}:{number}", "a user or assistant line without a `timestamp` string")
        kind, actor = ROLES[obj["type"]]
        source.records.append(RecordItem(kind, content, f"claude-code:{session}:{uuid}", f"{rel}:{number}",
                                         session=session, actor=actor, at=at))


def _text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return "\n\n".join(b["text"].strip() for b in content
                           if isinstance(b, dict) and b.get("type") == "text"
                           and isinstance(b.get("text"), str) and b["text"].strip())
    return ""
