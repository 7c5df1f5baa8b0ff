"""`desk export FORMAT DEST`: the desk's memories in other tools' formats (docs/import-export.md).

Read-only on the desk; nothing a person wrote in DEST is lost (an index's foreign lines are kept,
workspace files copied only where DEST has none); each format imports back `unchanged`.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from desk.errors import UsageError
from desk.interchange.readers.claude_code import DESK_TYPE_KEY, FROM_CLAUDE, TO_CLAUDE
from desk.interchange.readers.openclaw import BLOCK, BLOCK_BEGIN, BLOCK_END
from desk.layout import AGENTS_FILE, MEMORY_PREFIX, SOUL_FILE, USER_FILE, DeskFolder
from desk.formats.memory_file import MemoryFile, parse_memory
from desk.formats.memory_index import memory_path
from desk.gate.entries import entries_in_worktree
from desk.storage import frontmatter
from desk.storage.atomic import atomic_write
from desk.vocabulary import EXPORT_FORMATS

OPENCLAW_DIR = "memory/desk"
_LINK = re.compile(r"\]\(([^)]+\.md)\)")


@dataclass
class ExportReport:
    format: str
    dest: str
    memories: int = 0
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"status": "exported", **asdict(self)}


def export_desk(desk: DeskFolder, fmt: str, dest: Path) -> ExportReport:
    """Write the desk's memories to `dest` in format `fmt`."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    root = desk.root.resolve()
    where = dest.resolve()  # follows every link on the way, so a link into the desk is caught too
    if where == root or root in where.parents:  # it would overwrite the desk's own files
        raise UsageError(f"{dest}: inside the desk ({root}); desk export writes outside it",
                         hint="give a folder (or, for jsonl, a file) outside the desk, e.g. ~/desk-export")
    report = ExportReport(fmt, str(dest))
    memories = []
    for name in sorted(entries_in_worktree(desk)):
        path = memory_path(name)
        try:
            memories.append(parse_memory(desk.read(path), path, name))  # never through a link
        except Exception as exc:  # noqa: BLE001 - a broken file is reported, the export goes on
            report.skipped.append(f"{path}: {exc}")
    report.memories = len(memories)
    if fmt == "jsonl":
        if dest.is_dir():
            raise UsageError(f"{dest}: a folder; jsonl export writes one file", hint="give a file path")
        _put(dest, dest.name, _jsonl(desk, memories), report)
        return report
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest}: not a folder", hint=f"{fmt} export writes a folder of files")
    if fmt == "markdown":
        for memory in memories:
            _put(dest / f"{memory.name}.md", f"{memory.name}.md", memory.render(schema=None), report)
    elif fmt == "claude-code":
        _claude_code(dest, memories, report)
    else:
        _openclaw(desk, dest, memories, report)
    return report


def _put(path: Path, rel: str, data: bytes, report: ExportReport) -> None:
    """Write `data` at `path` unless it already holds exactly that; never through a symlink."""
    if path.is_symlink():
        raise UsageError(f"{path}: a symlink; desk export does not write through links",
                         hint="remove the link or export to another folder")
    if path.is_file() and path.read_bytes() == data:
        report.unchanged.append(rel)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
    report.written.append(rel)


def claude_file(memory: MemoryFile) -> bytes:
    """One memory as a Claude Code auto-memory topic file."""
    meta = memory.meta
    out: dict[str, Any] = {"name": meta.name, "description": meta.description, "type": TO_CLAUDE[meta.type]}
    if FROM_CLAUDE[TO_CLAUDE[meta.type]] != meta.type:
        out[DESK_TYPE_KEY] = meta.type
    out["triggers"] = list(meta.triggers)  # even empty: an import must not derive others
    if meta.importance is not None:
        out["importance"] = meta.importance
    return frontmatter.render(out, memory.body)


def claude_file_name(memory: MemoryFile, taken: set[str]) -> str:
    """`<name>.md`, or the Claude Code topic file the memory was imported from (origin
    `claude-code:memory/<file>.md`), so exporting back into that folder updates the file in place."""
    origin = memory.meta.origin or ""
    if origin.startswith("claude-code:") and origin.endswith(".md"):
        base = origin.rsplit("/", 1)[-1].removeprefix("claude-code:")
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.md", base) and base not in ("MEMORY.md", "CLAUDE.md") \
                and base not in taken:
            return base
    return f"{memory.name}.md"


def _claude_code(dest: Path, memories: list[MemoryFile], report: ExportReport) -> None:
    written: set[str] = set()
    lines = []
    for memory in memories:
        file = claude_file_name(memory, written)
        _put(dest / file, file, claude_file(memory), report)
        written.add(file)
        lines.append(f"- [{memory.name}]({file}) — {memory.meta.description}")
    index = dest / "MEMORY.md"
    if index.is_file() and not index.is_symlink():
        for line in index.read_text("utf-8", "replace").splitlines():
            link = _LINK.search(line)
            if link and link.group(1) not in written and (dest / link.group(1)).is_file():
                lines.append(line)  # a topic file desk did not write: its line stays
    header = "# Memory index (written by `desk export claude-code`; one line a topic file)\n\n"
    _put(index, "MEMORY.md", (header + "\n".join(lines) + "\n").encode(), report)


def _openclaw(desk: DeskFolder, dest: Path, memories: list[MemoryFile], report: ExportReport) -> None:
    for memory in memories:
        _put(dest / OPENCLAW_DIR / f"{memory.name}.md", f"{OPENCLAW_DIR}/{memory.name}.md",
             memory.render(schema=None), report)
    block = [BLOCK_BEGIN, "## From desk", ""]
    block += [f"- {m.meta.description} ({OPENCLAW_DIR}/{m.name}.md)" for m in memories]
    block += ["", BLOCK_END]
    index = dest / "MEMORY.md"
    old = index.read_text("utf-8", "replace") if index.is_file() and not index.is_symlink() else "# MEMORY.md\n"
    kept = BLOCK.sub("", old)
    _put(index, "MEMORY.md", (kept.rstrip("\n") + "\n\n" + "\n".join(block) + "\n").encode(), report)
    from desk.storage.reading import SymlinkError

    for name in (AGENTS_FILE, SOUL_FILE, USER_FILE):
        if (dest / name).exists():
            report.skipped.append(f"{name}: the workspace has its own; not overwritten")
            continue
        try:
            data = desk.read_if_present(name)  # never through a link: a link is skipped and reported
        except SymlinkError as exc:
            report.skipped.append(f"{name}: {exc.message}")
            continue
        if data is not None:
            _put(dest / name, name, data, report)


def _jsonl(desk: DeskFolder, memories: list[MemoryFile]) -> bytes:
    """A line a memory: fields, body, path and the commits that touched it (one `git log`)."""
    history: dict[str, list[dict[str, object]]] = {}
    for commit in desk.git.history.log([MEMORY_PREFIX]):
        for path in commit.paths:
            history.setdefault(path, []).append(
                {"commit": commit.sha, "date": commit.date, "subject": commit.subject,
                 "trailers": commit.trailers})
    lines = []
    for memory in memories:
        path = memory_path(memory.name)
        lines.append(json.dumps({"name": memory.name, "path": path, "meta": memory.meta.to_json(),
                                 "body": memory.body, "history": history.get(path, [])},
                                ensure_ascii=False, sort_keys=True))
    return ("\n".join(lines) + "\n").encode() if lines else b""
