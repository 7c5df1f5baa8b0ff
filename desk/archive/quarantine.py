"""Moving uncommitted archive records that block every checkpoint aside (`desk doctor --repair`).

The file's uncommitted growth is copied byte for byte to `.system/quarantine/<file>.<time>.jsonl`,
the file cut back to HEAD's bytes, each valid record appended again (new id, its old one in
`meta["desk.restored_from"]`), and both files committed in one `Desk-Op: quarantine` commit.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from desk.formats.archive import ArchiveFile, check_lines, record_problem
from desk.archive.checkpoint import archive_trailer_lines
from desk.archive.store import ArchiveWriter
from desk.errors import DeskError, Finding
from desk.layout import ARCHIVE_DIR, DeskFolder
from desk.storage.atomic import atomic_write
from desk.text.times import format_time, utc_now
from desk.transaction import Transaction, commit_message

QUARANTINE_DIR = ".system/quarantine"
RESTORED_FROM = "desk.restored_from"


@dataclass(frozen=True)
class Quarantined:
    """What one repair did: the file set aside, the records moved there, and those appended again."""

    archive: str
    quarantine: str
    moved: int
    restored: int


def blocking_records(desk: DeskFolder, rel: str) -> bool:
    """Whether the uncommitted growth of the archive file `rel` holds a record a checkpoint refuses."""
    committed, data = _committed_and_current(desk, rel)
    if committed is None or data is None:
        return False
    return any(f.severity == "error" for f in _findings(desk, rel, committed, data))


def quarantine(desk: DeskFolder, rel: str) -> Quarantined | None:
    """Set the growth of `rel` aside and append its valid records again; None when nothing blocks.

    Call it under the desk lock (doctor holds it); the archive lock is taken here, by the writer
    that appends the valid records again.
    """
    with ArchiveWriter(desk, batch=True) as writer:
        committed, data = _committed_and_current(desk, rel)
        if committed is None or data is None:
            return None
        if not any(f.severity == "error" for f in _findings(desk, rel, committed, data)):
            return None
        growth = data[len(committed):]
        stamp = format_time(utc_now(), "microsecond").replace(":", "").replace("-", "").replace(".", "")
        name = rel.rsplit("/", 1)[-1].removesuffix(".jsonl")
        aside = f"{QUARANTINE_DIR}/{name}.{stamp}.jsonl"
        atomic_write(desk.path(aside), growth)  # durable before anything is cut
        os.truncate(desk.path(rel), len(committed))
        afile = ArchiveFile.from_name(rel.rsplit("/", 1)[-1])
        day = afile.day if afile else ""
        moved = restored = 0
        events = []
        for line in growth.split(b"\n"):
            if not line.strip():
                continue
            moved += 1
            try:
                record = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue
            if record_problem(record, desk.desk_id, day) is not None:
                continue
            meta = {**record["meta"], RESTORED_FROM: record["id"]}
            events.append({"kind": record["kind"], "content": record["content"], "payload": record["payload"],
                           "session": record["session"], "actor": record["actor"], "at": record["at"],
                           "meta": meta})
        clock = utc_now()
        for event in events:
            writer.append(event, clock)
            restored += 1
        writer.flush()
        # One commit holds both: the records set aside, and the file without them (a checkpoint
        # of this file), so the quarantine travels with the desk and a reviewer sees it.
        final = desk.read(rel)
        message = commit_message(f"quarantine: {moved} archive record(s) of {rel} set aside",
                                 {"Desk-Op": "quarantine", "Desk-Actor": "user",
                                  "Desk-Quarantine": aside, "Desk-Restored": str(restored)})
        message += "\n".join(archive_trailer_lines({rel: final})) + "\n"
        Transaction(desk).commit({aside: growth, rel: final}, message)
    return Quarantined(rel, aside, moved, restored)


def _committed_and_current(desk: DeskFolder, rel: str) -> tuple[bytes | None, bytes | None]:
    """HEAD's bytes of `rel` (b"" when new) and the work tree's; (None, None) when they are not a
    committed prefix and its growth (a rewrite of committed history needs a person)."""
    data = desk.read_if_present(rel)
    if data is None or not rel.startswith(f"{ARCHIVE_DIR}/"):
        return None, None
    committed = (desk.git.objects.blob_at("HEAD", rel) if desk.git.refs.head() else None) or b""
    if committed and not committed.endswith(b"\n"):
        return None, None  # a committed torn tail: `desk archive verify` and a person first
    if not data.startswith(committed) or len(data) == len(committed):
        return None, None
    return committed, data


def _findings(desk: DeskFolder, rel: str, committed: bytes, data: bytes) -> list[Finding]:
    afile = ArchiveFile.from_name(rel.rsplit("/", 1)[-1])
    if afile is None:
        raise DeskError(f"{rel} is not an archive file name")
    return check_lines(rel, data, len(committed), desk.desk_id, afile.day)
