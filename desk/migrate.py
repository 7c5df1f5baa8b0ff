"""`desk migrate`: upgrade an older desk's schema in one commit, saying what changed.

Readers accept the previous schema, and reading never rewrites a file: a v1 desk works as it is,
and each file is saved at the current version by the next write that changes it anyway (the next
digest or resolve writes `.system/conflicts.json` v2). `desk migrate` upgrades every versioned
file at once, in one commit: `.system/desk.json`'s `schema_version` and the conflict queue, and
adds to `.gitattributes` the merge lines a desk made before the scopes lacks (a clone's drivers
themselves live in .git/config: `desk hooks install` defines them). A desk newer than this desk is
refused; nothing is ever downgraded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from desk.errors import DeskError, InvalidFileError
from desk.guard.hook_files import attributes_with_missing, missing_attributes
from desk.layout import CONFIG_PATH, CONFLICTS_FILE, DESK_SCHEMA as SCHEMA_VERSION, DeskFolder, newer_schema
from desk.review.queue import QUEUE_VERSION, parse_queue, queue_version, render_queue
from desk.transaction import commit_message, transaction

GITATTRIBUTES = ".gitattributes"


@dataclass
class MigrationResult:
    """What `desk migrate` did or, with `--dry-run`, would do (its `--json` shape)."""

    status: str  # migrated | unchanged | planned (dry run)
    from_version: int
    to_version: int
    changes: list[dict[str, str]] = field(default_factory=list)  # {path, change}
    commit: str | None = None

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
        newer = newer_schema(version)
        if newer:
            raise DeskError(newer, hint="upgrade desk (`pip install -U desk`); nothing was changed")
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
        attributes = desk.read_if_present(GITATTRIBUTES)
        if attributes is not None and b"merge=desk-" in attributes:  # a person's own file is theirs
            text = attributes.decode("utf-8", "replace")
            upgraded = attributes_with_missing(text)
            if upgraded is not None:
                writes[GITATTRIBUTES] = upgraded
                changes.append({"path": GITATTRIBUTES, "change": "merge lines added for "
                                + ", ".join(p for p, _ in missing_attributes(text))
                                + " (run `desk hooks install` in every clone to define the new drivers)"})
        if version != SCHEMA_VERSION:
            config["schema_version"] = SCHEMA_VERSION
            writes[CONFIG_PATH] = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode()
            changes.append({"path": CONFIG_PATH, "change": f"schema_version {version} -> {SCHEMA_VERSION}"})
        result = MigrationResult("unchanged", version, SCHEMA_VERSION, changes)
        if not writes:
            return result
        if dry_run:
            result.status = "planned"
            return result
        tx.require_clean(sorted(writes))
        body = "\n".join(f"{c['path']}: {c['change']}" for c in changes)
        subject = (f"migrate: desk schema {version} -> {SCHEMA_VERSION}" if version != SCHEMA_VERSION
                   else f"migrate: desk schema {SCHEMA_VERSION} ({', '.join(c['path'] for c in changes)})")
        result.commit = tx.commit(writes, commit_message(
            subject,
            {"Desk-Op": "migrate", "Desk-Schema": str(SCHEMA_VERSION)}, body))
        result.status = "migrated"
    return result
