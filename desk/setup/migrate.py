"""`desk migrate`: upgrade an older desk's versioned files in one commit, saying what changed.

Readers accept the previous schema and never rewrite; migrate upgrades desk.json's
`schema_version`, the conflict queue, the memory files' `schema:` line and `.gitattributes`'
missing lines at once. A newer desk is refused; nothing is downgraded.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from desk.errors import InvalidFileError
from desk.formats.hook_files import attributes_with_missing, missing_attributes
from desk.layout import (CONFIG_PATH, CONFLICTS_FILE, DESK_SCHEMA as SCHEMA_VERSION, GITATTRIBUTES, MEMORY_DIR,
                         PROJECTS_DIR, DeskFolder, memory_name, project_file)
from desk.formats.memory_file import MEMORY_SCHEMA, SCHEMA_KEY, stamp_schema
from desk.formats.queue import QUEUE_VERSION, parse_queue, queue_version, render_queue
from desk.transaction import commit_message, transaction

@dataclass
class MigrationResult:
    """What `desk migrate` did or, with `--dry-run`, would do (its `--json` shape)."""

    status: str  # migrated | unchanged | planned (dry run)
    from_version: int
    to_version: int
    changes: list[dict[str, str]] = field(default_factory=list)  # {path, change}
    commit: str | None = None
    memory_files: int = 0  # memory files stamped `schema: MEMORY_SCHEMA` (or, planned, to stamp)

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def migrate(desk: DeskFolder, *, dry_run: bool = False) -> MigrationResult:
    """Upgrade every versioned file of the desk to the current schema; one commit (none if current)."""
    with transaction(desk) as tx:
        config_bytes = desk.read(CONFIG_PATH)
        try:
            config = json.loads(config_bytes)
            version = config.get("schema_version", 1)
        except (ValueError, AttributeError):
            raise InvalidFileError([], hint=f"{CONFIG_PATH} is not a JSON object: `desk validate --all` "
                                            "says what is wrong") from None
        writes: dict[str, bytes | None] = {}
        changes: list[dict[str, str]] = []
        data = desk.read_if_present(CONFLICTS_FILE)  # never through a symlink
        if data is not None:
            old = queue_version(data)
            if old != QUEUE_VERSION:
                cases = parse_queue(data)  # a broken queue stops the migration, naming path:line
                writes[CONFLICTS_FILE] = render_queue(cases)
                changes.append({"path": CONFLICTS_FILE,
                                "change": f"queue schema {old} -> {QUEUE_VERSION}: every case gains "
                                          f"`resolution` (null for the {len(cases)} undecided cases)"})
        stamped = _stamped_memories(desk)
        writes.update(stamped)
        changes += [{"path": folder, "change": f"{count} memory file{'s' if count != 1 else ''} stamped "
                     f"`{SCHEMA_KEY}: {MEMORY_SCHEMA}` (memory file format 1 -> {MEMORY_SCHEMA}; no other line changed)"}
                    for folder, count in sorted(Counter(path.rsplit("/", 1)[0] + "/" for path in stamped).items())]
        attributes = desk.read_if_present(GITATTRIBUTES)
        if attributes is not None and b"merge=desk-" in attributes:  # a person's own file is theirs
            text = attributes.decode("utf-8", "replace")
            upgraded = attributes_with_missing(text)
            if upgraded is not None:
                writes[GITATTRIBUTES] = upgraded
                missing = missing_attributes(text)
                merges = [p for p, a in missing if a.startswith("merge=")]
                pins = [p for p, a in missing if a == "-text"]
                said = ([f"merge lines added for {', '.join(merges)} (run `desk hooks install` in every "
                         "clone to define the new drivers)"] if merges else [])
                said += [f"-text pinned on {', '.join(pins)} (no end-of-line conversion of desk's files)"] if pins else []
                changes.append({"path": GITATTRIBUTES, "change": "; ".join(said)})
        if version != SCHEMA_VERSION:
            config["schema_version"] = SCHEMA_VERSION
            writes[CONFIG_PATH] = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode()
            changes.append({"path": CONFIG_PATH, "change": f"schema_version {version} -> {SCHEMA_VERSION}"})
        result = MigrationResult("planned" if writes and dry_run else "unchanged", version, SCHEMA_VERSION,
                                 changes, memory_files=len(stamped))
        if not writes or dry_run:
            return result
        tx.require_clean(sorted(writes))
        body = "\n".join(f"{c['path']}: {c['change']}" for c in changes)
        subject = (f"migrate: desk schema {version} -> {SCHEMA_VERSION}" if version != SCHEMA_VERSION
                   else f"migrate: desk schema {SCHEMA_VERSION} ({', '.join(c['path'] for c in changes)})")
        result.commit = tx.commit(writes, commit_message(
            subject, {"Desk-Op": "migrate", "Desk-Schema": str(SCHEMA_VERSION)}, body))
        result.status = "migrated"
    return result


_CURRENT = f"\n{SCHEMA_KEY}: {MEMORY_SCHEMA}\n".encode()  # how desk writes the last line of a frontmatter


def _stamped_memories(desk: DeskFolder) -> dict[str, bytes]:
    """`{path: stamped bytes}` for every committed memory file not yet at MEMORY_SCHEMA (the caller's
    `require_clean` makes sure the work tree holds them); one that does not parse stops it."""
    head = desk.git.refs.head()
    if head is None:
        return {}
    blobs = {path: blob for path, blob in desk.git.worktree.ls_tree(head, MEMORY_DIR).items()
             if memory_name(path) is not None}
    blobs.update({path: blob for path, blob in desk.git.worktree.ls_tree(head, PROJECTS_DIR, recursive=True).items()
                  if (project_file(path) or ("", "", None))[0] == "memory"})
    data = desk.git.objects.read_blobs(blobs.values())
    out = {}
    for path in sorted(blobs):
        old = data[blobs[path]]
        close = old.find(b"\n---\n", 3)
        if old.startswith(b"---\n") and close >= 0 and old[:close + 1].endswith(_CURRENT):
            continue  # desk wrote it: its frontmatter ends in the current `schema:` line
        try:
            new = stamp_schema(old, path)
        except InvalidFileError as exc:
            raise InvalidFileError(exc.findings, hint=exc.hint or (
                "fix the file (`desk validate --all` lists every problem), commit it, and run "
                "`desk migrate` again; nothing was changed")) from None
        if new != old:
            out[path] = new
    return out
