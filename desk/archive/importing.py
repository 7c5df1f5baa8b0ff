"""`desk archive import FILE.jsonl`: many events at once (history, another harness's log).

The whole input is validated first (a bad line named `FILE:line`, nothing written); then one
archive lock, one write per record, fsync every FSYNC_EVERY records. Each event lands in the file
of its UTC day; one the archive holds already (desk.archive.present) is skipped and counted.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desk.archive.present import SOURCE_ID_META, split_present
from desk.archive.store import ArchiveWriter, build_event, refuse_unallowed_secrets
from desk.errors import UsageError
from desk.layout import DeskFolder
from desk.text.times import utc_now

FSYNC_EVERY = 5000
# Fields of a desk record that the importing desk recomputes (its own chain, id and desk).
RECOMPUTED = ("id", "desk_id", "recorded_at", "prev")
ACCEPTED = {"kind", "at", "content", "payload", "session", "actor", "meta", *RECOMPUTED}


@dataclass
class ImportResult:
    source: str
    imported: int = 0
    skipped: int = 0  # events the archive held already (desk.archive.present)
    files: list[str] = field(default_factory=list)
    first_id: str | None = None
    last_id: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"status": "imported", "source": self.source, "imported": self.imported,
                "already_archived": self.skipped, "files": self.files, "first_id": self.first_id, "last_id": self.last_id}


IMPORT_HINT = ("fix that line and import the file again: nothing was imported (each line is one JSON "
               "object; docs/working-desk.md lists the fields)")

def parse_import(lines: Iterable[bytes], source: str, *, redact: bool = True,
                 now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Validated events from JSONL lines (bytes split on b"\\n"); a UsageError names `source:line`
    and the field."""
    now = now or utc_now()
    events = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise UsageError(f"{source}:{number}: not valid JSON ({exc})", hint=IMPORT_HINT) from None
        except RecursionError:  # Python's decoder recurses: `[[[[...` thousands deep
            raise UsageError(f"{source}:{number}: JSON nested too deeply", hint=IMPORT_HINT) from None
        if not isinstance(obj, dict):
            raise UsageError(f"{source}:{number}: each line must be a JSON object", hint=IMPORT_HINT)
        unknown = sorted(obj.keys() - ACCEPTED)
        if unknown:
            raise UsageError(f"{source}:{number}: unknown field(s) {', '.join(unknown)}; "
                             f"accepted: {', '.join(sorted(ACCEPTED))}", hint=IMPORT_HINT)
        meta = obj.get("meta") or {}
        if isinstance(obj.get("id"), str) and isinstance(meta, dict):
            meta = {**meta, SOURCE_ID_META: obj["id"]}
        try:
            events.append(build_event(str(obj.get("kind") or ""), obj.get("content"), payload=obj.get("payload"),
                                      session=obj.get("session"), actor=obj.get("actor"),
                                      at=obj.get("at"), meta=meta, redact=redact, now=now, at_name="at"))
        except UsageError as exc:
            raise UsageError(f"{source}:{number}: {exc.message}", hint=IMPORT_HINT) from None
    return events


def import_events(desk: DeskFolder, path: Path, *, redact: bool = True, now: dt.datetime | None = None,
                  progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Append every event of the JSONL file `path` (not committed: `desk checkpoint`);
    `progress(done, total)` after each fsync'd batch."""
    now = now or utc_now()
    try:
        # Line by line, so the file's bytes are never held beside the parsed events (100,000
        # events: ~45 MB less at the peak).
        with path.open("rb") as handle:
            events = parse_import(handle, str(path), redact=redact, now=now)
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}",
                         hint="give the path of a readable JSONL file, one event per line") from None
    if not redact:  # all parsed before anything is written: a refusal leaves the archive as it was
        for event in events:
            refuse_unallowed_secrets(desk, event)
    return append_events(desk, events, str(path), now=now, progress=progress, skip_present=True)


def append_events(desk: DeskFolder, events: list[dict[str, Any]], source: str, *,
                  now: dt.datetime | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  skip_present: bool = False) -> ImportResult:
    """Append validated events (`build_event`) under one archive lock, fsync'd in batches; with
    `skip_present`, only those the archive does not hold yet (desk.archive.present)."""
    now = now or utc_now()
    result = ImportResult(source)
    files: set[str] = set()
    with ArchiveWriter(desk, batch=True) as writer:
        if skip_present:  # under the lock: a concurrent run of the same import finds these present
            events, result.skipped = split_present(desk, events)
        for n, event in enumerate(events, 1):
            record = writer.append(event, now)
            files.add(event["at"][:10])
            result.first_id = result.first_id or record["id"]
            result.last_id = record["id"]
            if n % FSYNC_EVERY == 0:
                writer.flush()
                if progress:
                    progress(n, len(events))
        writer.flush()
        if progress:
            progress(len(events), len(events))
        result.files = sorted(f"{day}.{writer.clone}.jsonl" for day in files)
    result.imported = len(events)
    return result
