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
from desk.errors import DeskError
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
    return _blocking(desk, rel) is not None


def quarantine(desk: DeskFolder, rel: str) -> Quarantined | None:
    """Set the growth of `rel` aside and append its valid records again; None when nothing blocks.
    Call it under the desk lock; the writer takes the archive lock."""
    with ArchiveWriter(desk, batch=True) as writer:
        found = _blocking(desk, rel)
        if found is None:
            return None
        committed, data, day = found
        growth = data[len(committed):]
        stamp = format_time(utc_now(), "microsecond").replace(":", "").replace("-", "").replace(".", "")
        name = rel.rsplit("/", 1)[-1].removesuffix(".jsonl")
        aside = f"{QUARANTINE_DIR}/{name}.{stamp}.jsonl"
        atomic_write(desk.path(aside), growth)  # durable before anything is cut
        os.truncate(desk.path(rel), len(committed))
        lines = [line for line in growth.split(b"\n") if line.strip()]
        events = []
        for line in lines:
            try:
                record = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue
            if record_problem(record, desk.desk_id, day) is None:
                events.append({**{k: record[k] for k in ("kind", "content", "payload", "session", "actor", "at")},
                               "meta": {**record["meta"], RESTORED_FROM: record["id"]}})
        clock = utc_now()
        for event in events:
            writer.append(event, clock)
        writer.flush()
        # One commit holds the records set aside and the file without them (a checkpoint of it).
        final = desk.read(rel)
        message = commit_message(f"quarantine: {len(lines)} archive record(s) of {rel} set aside",
                                 {"Desk-Op": "quarantine", "Desk-Actor": "user",
                                  "Desk-Quarantine": aside, "Desk-Restored": str(len(events))})
        message += "\n".join(archive_trailer_lines({rel: final})) + "\n"
        Transaction(desk).commit({aside: growth, rel: final}, message)
    return Quarantined(rel, aside, len(lines), len(events))


def _blocking(desk: DeskFolder, rel: str) -> tuple[bytes, bytes, str] | None:
    """(HEAD's bytes of `rel`, b"" when new; the work tree's; its day) when the work tree's are
    HEAD's and a growth that holds a record a checkpoint refuses (a rewrite needs a person)."""
    data = desk.read_if_present(rel)
    if data is None or not rel.startswith(f"{ARCHIVE_DIR}/"):
        return None
    committed = (desk.git.objects.blob_at("HEAD", rel) if desk.git.refs.head() else None) or b""
    if committed and not committed.endswith(b"\n"):
        return None  # a committed torn tail: `desk archive verify` and a person first
    if not data.startswith(committed) or len(data) == len(committed):
        return None
    afile = ArchiveFile.from_name(rel.rsplit("/", 1)[-1])
    if afile is None:
        raise DeskError(f"{rel} is not an archive file name")
    findings = check_lines(rel, data, len(committed), desk.desk_id, afile.day)
    return (committed, data, afile.day) if any(f.severity == "error" for f in findings) else None
