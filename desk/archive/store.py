"""The JSONL archive: append-only raw events, one file per UTC day per clone, hash-chained.

The line format (docs/design.md §2) is desk.formats.archive. Writes go through `ArchiveWriter`:
one `os.write` per record with the byte count checked, then `fsync`, under the archive lock. A
file that does not end in a newline (a write torn by a crash) gets one first, in the same write,
so no complete record is ever glued to a fragment.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desk.formats.archive import (
    MAX_RECORD_BYTES,
    ArchiveFile,
    archive_file,
    at_key,
    check_record_size,
    line_hash,
    parse_lines,
    payload_depth_problem,
    redact_event,
    refuse_secret_ids,
    read_tail,
    record_json,
    validate_fields,
)
from desk.errors import DeskError, Finding, UsageError, quoted
from desk.layout import ARCHIVE_DIR, DeskFolder
from desk.storage.atomic import atomic_write, fsync_dir
from desk.storage.lock import desk_lock
from desk.storage.reading import NOFOLLOW, SymlinkError, check_no_link
from desk.text.times import format_time, parse_time, utc_now

__all__ = ["ArchiveEvent", "ArchiveWriter", "append_event", "iter_events",
           "archive_files", "clone_id", "find_event", "read_events"]

CLONE_ID_FILE = "desk-clone-id"
# Its own lock, not the desk lock: appends must not queue behind a memory commit's `git commit`.
# `desk checkpoint` takes both, desk lock first.
ARCHIVE_LOCK = "desk-archive.lock"
MAX_OPEN_FILES = 64


@dataclass(frozen=True, slots=True)
class ArchiveEvent:
    """One archived record and where it sits: desk-relative path, 1-based line, byte offset."""

    record: dict[str, Any]
    path: str
    line: int
    offset: int


_CLONE_IDS: dict[Path, str] = {}  # per process, by git dir: the id never changes once made


def clone_id(desk: DeskFolder) -> str:
    """This clone's id (12 hex chars), made once and kept untracked in the git dir.

    The file also names the git dir's device and inode: a copy of the desk (`cp -a`) notices it
    is not the git dir named and makes an id of its own, so two copies never share one file name.
    """
    cached = _CLONE_IDS.get(desk.git_dir)
    if cached is None:
        cached = _CLONE_IDS[desk.git_dir] = _read_or_make_clone_id(desk.git_dir / CLONE_ID_FILE)
    return cached


def _read_or_make_clone_id(path: Path) -> str:
    st = os.stat(path.parent)
    binding = f"git-dir {st.st_dev}:{st.st_ino}"
    try:
        lines = path.read_text("utf-8", "replace").splitlines()
    except FileNotFoundError:
        lines = []
    if lines and lines[1:2] != [binding]:
        with desk_lock(path.with_name(f"{CLONE_ID_FILE}.lock")):
            current = path.read_text("utf-8", "replace").splitlines() if path.exists() else []
            if len(current) == 1 and re.fullmatch(r"[0-9a-f]{12}", current[0].strip()):
                # Made by desk 0.1 without a binding: bind it to this git dir from now on.
                atomic_write(path, f"{current[0].strip()}\n{binding}\n".encode())
            elif len(current) > 1 and current[1] != binding:  # a copy of another clone's git dir
                path.replace(path.with_name(f"{CLONE_ID_FILE}.copied"))  # kept: says what happened
    if not path.exists():
        # link refuses to replace: two processes racing here agree on whichever id landed first.
        tmp = path.with_name(f"{CLONE_ID_FILE}.{os.getpid()}.tmp")
        with open(tmp, "wb", buffering=0) as file:
            file.write(f"{os.urandom(6).hex()}\n{binding}\n".encode())
            os.fsync(file.fileno())
        try:
            os.link(tmp, path)
            fsync_dir(path.parent)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    value = (path.read_text("utf-8", "replace").splitlines() or [""])[0].strip()
    if not re.fullmatch(r"[0-9a-f]{12}", value):
        raise DeskError(f"{path} does not hold a clone id (12 hex characters): {value[:40]!r}",
                        hint=f"delete {path}; desk makes a new one (this clone's next archive "
                             "files get the new id, nothing already written changes)")
    return value


def archive_lock_path(desk: DeskFolder) -> Path:
    return desk.git_dir / ARCHIVE_LOCK


@dataclass(slots=True)
class _Open:
    """An archive file a writer holds open, and the chain state of its last line."""

    fd: int
    path: str
    prev: str | None  # hash of the file's last line, None for an empty file
    seq: int  # seq of the last parseable record
    ends_with_newline: bool
    created: bool  # this writer made the file (a failed first append removes it again)
    dirty: bool = False


class ArchiveWriter:
    """Holds the archive lock; appends records, one write each; fsyncs each (or at close when batched)."""

    def __init__(self, desk: DeskFolder, *, batch: bool = False) -> None:
        self.desk = desk
        self.batch = batch
        self.clone = clone_id(desk)
        self._files: dict[str, _Open] = {}
        self._new_dirs: set[Path] = set()
        self._lock: Any = None

    def __enter__(self) -> ArchiveWriter:
        self._lock = desk_lock(archive_lock_path(self.desk))
        self._lock.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.flush()
        finally:
            for opened in self._files.values():
                os.close(opened.fd)
            self._files.clear()
            self._lock.__exit__(None, None, None)

    def _unwrite(self, rel: str, opened: _Open, size: int) -> None:
        """Put `rel` back to `size` bytes (removing a file made for this record) and forget it."""
        self._files.pop(rel, None)
        try:
            if size == 0 and opened.created:
                os.unlink(opened.path)
            else:
                os.ftruncate(opened.fd, size)
        finally:
            os.close(opened.fd)

    def flush(self) -> None:
        """fsync every file written since the last flush, and the folder of new files."""
        for opened in self._files.values():
            if opened.dirty:
                os.fsync(opened.fd)
                opened.dirty = False
        for folder in self._new_dirs:
            fsync_dir(folder)
        self._new_dirs.clear()

    def _open(self, rel: str) -> _Open:
        opened = self._files.get(rel)
        if opened is not None:
            return opened
        if len(self._files) >= MAX_OPEN_FILES:  # an import spanning years of days
            self.flush()
            for other in self._files.values():
                os.close(other.fd)
            self._files.clear()
        path = os.path.join(self.desk.root, rel)
        check_no_link(path, str(self.desk.root))  # never append through a link
        created = False
        try:
            try:
                fd = os.open(path, os.O_RDWR | os.O_APPEND | NOFOLLOW)
            except FileNotFoundError:  # the first event of a day: create the file (and folder)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o644)
                self._new_dirs.add(Path(os.path.dirname(path)))
                created = True
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SymlinkError(Path(path), rel) from None
            raise
        opened = self._files[rel] = _Open(fd, path, *read_tail(fd, os.fstat(fd).st_size), created)
        return opened

    def append(self, event: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
        """Write one validated event (fields without id/recorded_at/prev/desk_id) and return the
        record, its keys in sorted order as its line has them."""
        day = event["at"][:10]
        rel = archive_file(day, self.clone)
        opened = self._open(rel)
        recorded = format_time(now, "microsecond")
        seq = opened.seq + 1
        record = {"actor": event["actor"], "at": event["at"], "content": event["content"],
                  "desk_id": self.desk.desk_id,
                  "id": f"{recorded[:4]}{recorded[5:7]}{recorded[8:13]}{recorded[14:16]}"
                        f"{recorded[17:19]}{recorded[20:26]}Z-{self.clone}-{day.replace('-', '')}-{seq:06d}",
                  "kind": event["kind"], "meta": event["meta"], "payload": event["payload"],
                  "prev": opened.prev, "recorded_at": recorded, "session": event["session"]}
        line = record_json(record).encode()
        size = os.fstat(opened.fd).st_size
        if len(line) > MAX_RECORD_BYTES:
            self._unwrite(rel, opened, size)
            check_record_size(line)
        data = line + b"\n" if opened.ends_with_newline else b"\n" + line + b"\n"
        try:
            written = os.write(opened.fd, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"short write: {written} of {len(data)} bytes")
            if not self.batch:
                os.fsync(opened.fd)
                if self._new_dirs:
                    self.flush()
        except OSError as exc:
            # Under the archive lock nobody else appends: take the bytes back, so a failed append
            # leaves the file as it was (the caller was told the event was not recorded).
            self._unwrite(rel, opened, size)
            raise DeskError(f"could not append to {rel}: {exc.strerror or exc}; the event was not "
                            "recorded", hint="free some space or check the disk, then append again") from None
        opened.prev, opened.seq, opened.ends_with_newline = line_hash(line), seq, True
        opened.dirty = self.batch
        return record


AT_AHEAD = dt.timedelta(hours=24)  # how far an event's time may be after now: other machines' clocks


def build_event(kind: str, content: str | None = None, *, payload: dict[str, Any] | None = None,
                session: str | None = None, actor: str | None = None,
                at: str | dt.datetime | None = None, meta: dict[str, str] | None = None,
                redact: bool = True, now: dt.datetime | None = None, at_name: str = "--at") -> dict[str, Any]:
    """The caller's part of a record, validated (UsageError naming the field) and redacted; `at`
    (`at_name` in errors) at most AT_AHEAD after `now`, or it would rank newest for ever."""
    now = now or utc_now()
    moment = now if at is None else parse_time(at, at_name)
    if moment > now + AT_AHEAD:
        shown = quoted(at) if isinstance(at, str) else format_time(moment)
        raise UsageError(f"{at_name} {shown} is more than 24 hours after now ({format_time(now)}): an event "
                         "stamped in the future would rank as the newest for ever",
                         hint=f"give the time the event happened (up to 24 hours ahead is accepted, for a "
                              f"clock that runs ahead), or leave {at_name} out (now)")
    event = {"kind": kind, "content": content, "payload": payload, "session": session,
             "actor": actor, "at": format_time(moment, "microsecond"),
             "meta": dict(meta) if isinstance(meta, dict) else meta or {}}
    problem = validate_fields(event, check_at=False) or payload_depth_problem(payload)  # `at` formatted above
    if problem:
        raise UsageError(problem, hint="fix the field named above (docs/working-desk.md lists the fields)")
    if not redact:
        refuse_secret_ids(event)
    return redact_event(event) if redact else event


def append_event(desk: DeskFolder, kind: str, content: str | None = None, *,
                 payload: dict[str, Any] | None = None, session: str | None = None,
                 actor: str | None = None, at: str | dt.datetime | None = None,
                 meta: dict[str, str] | None = None, redact: bool = True,
                 now: dt.datetime | None = None) -> dict[str, Any]:
    """Append one event to the archive file of its UTC day (`at`, default now) and return the record.

    Secrets are redacted unless `redact=False`; then one the allow-list does not name is refused
    (exit 3): no checkpoint could commit it. Not committed: `desk checkpoint` commits archive growth.
    """
    now = now or utc_now()
    event = build_event(kind, content, payload=payload, session=session, actor=actor, at=at,
                        meta=meta, redact=redact, now=now)
    if not redact:
        refuse_unallowed_secrets(desk, event)
    with ArchiveWriter(desk) as writer:
        return writer.append(event, now)


def refuse_unallowed_secrets(desk: DeskFolder, event: dict[str, Any]) -> None:
    """RejectedError (exit 3) naming the first secret in `event` the allow-list does not name."""
    from desk.errors import RejectedError
    from desk.text.secrets import scan

    text = json.dumps({k: event[k] for k in ("content", "payload", "meta")}, ensure_ascii=False)
    allowed = set(desk.config.secrets.allow) if (found := scan(text)) else set()
    for secret in found:
        if secret.fingerprint not in allowed:
            raise RejectedError(
                f"the event holds a secret ({secret.kind}, {secret.preview}) and --no-redact keeps "
                "it: no checkpoint could commit it, so it is not appended",
                hint=f"let desk redact it (drop --no-redact), or if it is not a secret add "
                     f"\"{secret.fingerprint}\" to secrets.allow in .system/desk.json")


def archive_files(desk: DeskFolder) -> list[ArchiveFile]:
    """The archive files on disk, sorted by day then clone (other files in the folder ignored)."""
    folder = desk.path(ARCHIVE_DIR)
    found = [ArchiveFile.from_name(p.name) for p in folder.iterdir()] if folder.is_dir() else []
    return sorted(f for f in found if f is not None)


def read_events(desk: DeskFolder, rel: str, problems: list[Finding] | None = None) -> list[ArchiveEvent]:
    """Every record of one archive file, in file order. A torn fragment is skipped and reported."""
    found: list[Finding] = []
    events = [ArchiveEvent(rec, rel, line, offset) for line, offset, rec in parse_lines(desk.read(rel), rel, found)]
    if problems is not None:
        problems.extend(found)
    return events


def iter_events(desk: DeskFolder, *, since: str | dt.datetime | None = None,
                until: str | dt.datetime | None = None, kinds: Iterable[str] | None = None,
                session: str | None = None,
                problems: list[Finding] | None = None) -> Iterator[ArchiveEvent]:
    """Archived events with since <= at < until, of `kinds`, in `session`; sorted by (at, id), read a
    UTC day at a time. A torn fragment goes to `problems`; other damage raises InvalidFileError."""
    low = format_time(parse_time(since, "since"), "microsecond") if since is not None else None
    high = format_time(parse_time(until, "until"), "microsecond") if until is not None else None
    wanted = set(kinds) if kinds is not None else None
    by_day: dict[str, list[ArchiveFile]] = {}
    for f in archive_files(desk):
        if not ((low and f.day < low[:10]) or (high and f.day > high[:10])):
            by_day.setdefault(f.day, []).append(f)
    for day in sorted(by_day):
        batch: list[tuple[str, str, ArchiveEvent]] = []
        for f in by_day[day]:
            for event in read_events(desk, f.rel, problems):
                rec = event.record
                key = at_key(str(rec.get("at", "")))
                if (wanted is None or rec.get("kind") in wanted) and (session is None or rec.get("session") == session) \
                        and not ((low and key < low) or (high and key >= high)):
                    batch.append((key, str(rec.get("id", "")), event))
        batch.sort(key=lambda item: (item[0], item[1]))
        yield from (event for _key, _id, event in batch)


def head_hash(data: bytes) -> str | None:
    """The chain hash of a file's last complete line (what a checkpoint trailer records)."""
    end = data.rfind(b"\n")
    if end < 0:
        return None
    return line_hash(data[data.rfind(b"\n", 0, end) + 1:end])


def find_event(desk: DeskFolder, event_id: str) -> ArchiveEvent:
    """The event with `event_id`; its file is named in the id, so only that file is read."""
    m = re.fullmatch(r"\d{8}T\d{12}Z-([0-9a-z]{4,40})-(\d{4})(\d{2})(\d{2})-\d{6,}", event_id.strip())
    if not m:
        raise UsageError(f"{event_id!r} is not an archive event id",
                         hint="event ids look like 20261129T100000000000Z-<clone>-20261129-000001; "
                              "see them with `desk archive list`")
    rel = ArchiveFile(f"{m.group(2)}-{m.group(3)}-{m.group(4)}", m.group(1)).rel
    if desk.path(rel).is_file():
        for event in read_events(desk, rel):
            if event.record.get("id") == event_id.strip():
                return event
    raise DeskError(f"no archive event {event_id}", hint="list events with `desk archive list`")
