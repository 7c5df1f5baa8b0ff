"""`desk edit NAME`: a person edits one memory in their editor; desk validates and commits it.

The editor works on a copy without the desk lock (the assistant may write meanwhile); the commit
is made under the lock, only if no one changed the memory since, with the text exactly as saved.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from desk.errors import ConflictError, DeskError, Finding, InvalidFileError, RejectedError, UsageError
from desk.gate.rules import check_file
from desk.gate.validate import validate_writes
from desk.layout import INDEX_FILE, DeskFolder
from desk.formats.memory_file import MEMORY_SCHEMA, SCHEMA_KEY, parse_memory, require_name
from desk.formats.memory_index import IndexEntry, memory_path
from desk.gate.mirror import head_mirror
from desk.storage.git import blob_sha
from desk.text.times import format_time, utc_now
from desk.transaction import commit_message, transaction

# Block style, as desk writes memories; `created`/`updated`/`schema` are stamped on save (`stamp_times`).
TEMPLATE = """---
name: {name}
description: One line (at most 150 characters) shown in MEMORY.md
type: fact
triggers:
- {name}
---
The fact itself, in a few sentences.
"""
# The template's stand-in text: a new memory that still holds one is refused (the person only appended).
PLACEHOLDERS = ("One line (at most 150 characters) shown in MEMORY.md", "The fact itself, in a few sentences.")


@dataclass
class EditResult:
    status: str  # created | updated | unchanged | not-created (a new name's template saved as it was)
    name: str
    path: str
    commit: str | None = None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def editor_command(env: dict[str, str] | None = None) -> str:
    """$VISUAL, else $EDITOR, else `vi` or `nano` on PATH (as git does); UsageError when there is none."""
    import shutil

    env = dict(os.environ) if env is None else env
    for key in ("VISUAL", "EDITOR"):
        if env.get(key, "").strip():
            return env[key]
    found = next((e for e in ("vi", "nano") if shutil.which(e, path=env.get("PATH"))), None)
    if found is None:
        raise UsageError("no editor: $VISUAL and $EDITOR are unset and neither vi nor nano is on PATH",
                         hint="set one, e.g. `export EDITOR=nano`, or change the memory with "
                              "`desk set`/`desk remember`")
    return found


def run_editor(editor: str, path: Path) -> None:
    """Run the editor like git does: through the shell, so `code --wait` works."""
    proc = subprocess.run(["sh", "-c", f'{editor} "$@"', editor, str(path)])
    if proc.returncode != 0:
        raise DeskError(f"the editor ({editor}) exited with status {proc.returncode}; nothing changed",
                        hint="check that $VISUAL/$EDITOR runs on its own (e.g. `$EDITOR some.md`), "
                             "then run `desk edit` again")


def edit_memory(desk: DeskFolder, name: str, *, actor: str = "user",
                ask: Callable[[str], bool] = lambda findings: False,
                editor: str | None = None) -> EditResult:
    """Edit memory `name` (a new one from a template), validate it, commit it; when the text breaks
    a rule, `ask(findings_text)`: True edits again, False aborts (RejectedError)."""
    require_name(name)
    editor = editor or editor_command()
    path = memory_path(name)
    if desk.git.worktree.dirty([path]):
        raise ConflictError(f"{path} has uncommitted changes; desk will not edit over them",
                            hint=f"commit or discard them first (`git -C {desk.root} diff -- {path}`)")
    original = desk.git.objects.blob_at("HEAD", path) if desk.git.refs.head() else None
    start = original if original is not None else TEMPLATE.format(name=name).encode()
    scratch = desk.git_dir / "desk-edit" / f"{name}.md"
    scratch.parent.mkdir(exist_ok=True)
    scratch.write_bytes(start)
    message = commit_message(f"edit: {name}", {"Desk-Op": "edit", "Desk-Memory": name, "Desk-Actor": actor})
    try:
        while True:
            run_editor(editor, scratch)
            data = scratch.read_bytes()
            if data == start:
                return EditResult("unchanged" if original is not None else "not-created", name, path)
            data = stamp_times(data, format_time(utc_now()), new=original is None)
            findings = _check(desk, path, name, data, message) + (_placeholders(path, data) if original is None else [])
            errors = [f for f in findings if f.severity == "error"]
            if not errors:
                break
            if not ask("\n".join(str(f) for f in findings)):
                raise RejectedError(f"edit of {path} aborted; nothing changed",
                                    hint=f"`desk edit {name}` starts again from the committed file")
        with transaction(desk) as tx:
            tx.require_clean([path, INDEX_FILE])
            now_committed = desk.git.objects.blob_at("HEAD", path) if desk.git.refs.head() else None
            if now_committed != original:
                keep = desk.git_dir / "desk-edit" / f"{name}.rejected.md"
                os.replace(scratch, keep)
                raise ConflictError(f"{path} was changed by someone else while you edited it",
                                    hint=f"your text is kept in {keep}; run `desk edit {name}` again")
            writes = _writes(desk, path, name, data)
            sha = tx.commit(writes, message)
    finally:
        scratch.unlink(missing_ok=True)
    return EditResult("updated" if original is not None else "created", name, path, sha)


def stamp_times(data: bytes, now: str, *, new: bool) -> bytes:
    """`data` with `updated:` set to `now` (and `created:` for a new memory without one) and
    `schema:` at MEMORY_SCHEMA, every other line as typed (no closed frontmatter: unchanged)."""
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        return data
    close = lines.index("---", 1)
    head = lines[1:close]

    def put(key: str, replace: bool) -> None:
        at = next((i for i, line in enumerate(head) if line.startswith(key + ":")), None)
        if at is None:
            head.append(f"{key}: {now}")
        elif replace:
            head[at] = f"{key}: {now}"

    if new:
        put("created", replace=False)
    put("updated", replace=True)
    # Saved by desk, so at desk's format version; a newer version's line stays for the rules to refuse.
    at = next((i for i, line in enumerate(head) if line.startswith(SCHEMA_KEY + ":")), None)
    declared = head[at][len(SCHEMA_KEY) + 1:].strip() if at is not None else ""
    if at is None:
        head.append(f"{SCHEMA_KEY}: {MEMORY_SCHEMA}")
    elif declared.isascii() and declared.isdigit() and int(declared) < MEMORY_SCHEMA:
        head[at] = f"{SCHEMA_KEY}: {MEMORY_SCHEMA}"
    return "\n".join(["---", *head, *lines[close:]]).encode("utf-8", "surrogateescape")


def _writes(desk: DeskFolder, path: str, name: str, data: bytes) -> dict[str, bytes | None]:
    """The memory and its MEMORY.md from the HEAD mirror; InvalidFileError when it does not parse."""
    entry = IndexEntry.of(parse_memory(data, path, name))
    with head_mirror(desk) as mirror:
        index = mirror.render_index({name: entry})
        committed = mirror.index_blob
    writes: dict[str, bytes | None] = {path: data}
    if committed != blob_sha(index):
        writes[INDEX_FILE] = index
    return writes


def _placeholders(path: str, data: bytes) -> list[Finding]:
    """A finding for each line of a new memory that still holds one of the template's PLACEHOLDERS."""
    lines = data.decode("utf-8", "replace").split("\n")
    return [Finding(path, n, "template", f'still holds the template\'s placeholder "{p}": replace it with '
                    "your own text") for n, line in enumerate(lines, 1) for p in PLACEHOLDERS if p in line]


def _check(desk: DeskFolder, path: str, name: str, data: bytes, message: str) -> list[Finding]:
    """Every finding for the saved text: the memory rules, then the whole commit's rules."""
    try:
        writes = _writes(desk, path, name, data)
    except InvalidFileError:
        return check_file(path, data, desk_id=desk.config.desk_id,
                          allow=desk.config.secrets.allow, now=utc_now())
    return validate_writes(desk, writes, message).findings
