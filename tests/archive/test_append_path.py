"""The append hot path writes exactly what the plain algorithm of docs/working-desk.md writes.

`append_event` and `import_events` were tuned for speed (one encoder, one time format per append,
validation that encodes only what can fail); these tests recompute every line the slow, obvious
way (json.dumps with sorted keys, sha256 of the previous line, redaction of every string) and
compare bytes, then check the chain and that redaction still happens.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from desk.archive.importing import import_events
from desk.archive.store import CLONE_ID_FILE, _CLONE_IDS, append_event, archive_files
from desk.archive.verify import verify_archive
from desk.formats.archive import check_archive_change
from desk.errors import UsageError
from desk.layout import DeskFolder
from desk.text.secrets import redact
from tests.conftest import allow_secrets

NOW = dt.datetime(2026, 11, 29, 10, 0, 0, tzinfo=dt.timezone.utc)
CLONE = "0123456789ab"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2" * 9
TEXTS = [None, "", "hello", "报告用中文，保持简短", "emoji 🎉 é \u00a0 nbsp", 'quotes " and \\ backslash',
         "line\nbreak\ttab\x01control", f"my key is {AWS} ok", f"token {GITHUB}",
         'password = "Zx81kLm0pQr7sT2u"', "plain words " * 30]


@pytest.fixture
def fixed_desk(desk: DeskFolder) -> DeskFolder:
    """A desk with a known clone id, so expected ids can be computed."""
    _CLONE_IDS.clear()
    (desk.git_dir / CLONE_ID_FILE).write_text(CLONE + "\n")
    allow_secrets(desk, *(t for t in TEXTS if t))  # kept as they are in the unredacted appends
    yield desk
    _CLONE_IDS.clear()


def _fmt(when: dt.datetime) -> str:
    t = when.astimezone(dt.timezone.utc)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
            f".{t.microsecond:06d}Z")


def _scrub(value: Any, kinds: list[str]) -> Any:
    if isinstance(value, str):
        text, found = redact(value)
        kinds.extend(found)
        return text
    if isinstance(value, dict):
        return {k: _scrub(v, kinds) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, kinds) for v in value]
    return value


class Reference:
    """The archive format computed plainly, file by file: what every line must be."""

    def __init__(self, desk_id: str) -> None:
        self.desk_id = desk_id
        self.files: dict[str, list[bytes]] = {}

    def add(self, fields: dict[str, Any], at: dt.datetime, now: dt.datetime, redacted: bool) -> dict[str, Any]:
        event = {"kind": fields["kind"], "content": fields.get("content"), "payload": fields.get("payload"),
                 "session": fields.get("session"), "actor": fields.get("actor"), "at": _fmt(at),
                 "meta": dict(fields.get("meta") or {})}
        if redacted:
            kinds: list[str] = []
            event = {**event, "content": _scrub(event["content"], kinds),
                     "payload": _scrub(event["payload"], kinds),
                     "meta": {k: _scrub(v, kinds) for k, v in event["meta"].items()}}
            if kinds:
                event["meta"]["desk.redacted"] = ",".join(sorted(set(kinds)))
        day = event["at"][:10]
        lines = self.files.setdefault(day, [])
        recorded = _fmt(now)
        compact = recorded.replace("-", "").replace(":", "").replace(".", "")
        record = {**event, "desk_id": self.desk_id, "recorded_at": recorded,
                  "prev": "sha256:" + hashlib.sha256(lines[-1]).hexdigest() if lines else None,
                  "id": f"{compact}-{CLONE}-{day.replace('-', '')}-{len(lines) + 1:06d}"}
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode())
        return record

    def check(self, desk: DeskFolder) -> None:
        on_disk = {f.day: desk.path(f.rel).read_bytes() for f in archive_files(desk)}
        assert on_disk == {day: b"".join(line + b"\n" for line in lines) for day, lines in self.files.items()}


def _events(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        fields: dict[str, Any] = {"kind": rng.choice(["inbound", "outbound", "tool", "fact", "user_input"]),
                                  "content": rng.choice(TEXTS)}
        if rng.random() < 0.5:
            fields["session"] = rng.choice(["s1", "会话", "a b"])
        if rng.random() < 0.5:
            fields["actor"] = rng.choice(["ada", "assistant"])
        if rng.random() < 0.3:
            fields["payload"] = {"z": [1, 2.5, True, None, {"b": rng.choice(TEXTS)}], "a": rng.choice(TEXTS)}
        if rng.random() < 0.3:
            fields["meta"] = {"zz": "1", "aa": rng.choice(TEXTS) or "x", "é": "ü"}
        if rng.random() < 0.4:
            fields["at"] = NOW - dt.timedelta(hours=rng.randint(0, 100), microseconds=rng.randint(0, 10**6))
        out.append(fields)
    return out


def test_appends_are_byte_identical_to_the_plain_algorithm(fixed_desk: DeskFolder) -> None:
    ref = Reference(fixed_desk.desk_id)
    for i, fields in enumerate(_events(1, 300)):
        now = NOW + dt.timedelta(microseconds=i * 1_234_567)
        redacted = i % 7 != 0
        at = fields.get("at")
        # the three spellings of `at` a caller may use: a datetime, an ISO string with an offset, none
        given: Any = at
        if at is not None and i % 2:
            given = at.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30))).isoformat()
        record = append_event(fixed_desk, fields["kind"], fields.get("content"), payload=fields.get("payload"),
                              session=fields.get("session"), actor=fields.get("actor"), at=given,
                              meta=fields.get("meta"), redact=redacted, now=now)
        expected = ref.add(fields, at or now, now, redacted)
        assert record == expected
        assert list(record) == sorted(record)  # the record comes back in its line's key order
    ref.check(fixed_desk)
    report = verify_archive(fixed_desk)
    assert report.ok and report.findings == []


def test_an_import_is_byte_identical_to_the_plain_algorithm(fixed_desk: DeskFolder, tmp_path: Path) -> None:
    ref = Reference(fixed_desk.desk_id)
    fields_list = _events(2, 400)
    source = tmp_path / "history.jsonl"
    with source.open("w", encoding="utf-8") as handle:
        for i, fields in enumerate(fields_list):
            fields.setdefault("at", NOW - dt.timedelta(days=i % 9, seconds=i))
            line = {**fields, "at": _fmt(fields["at"])}
            if i % 5 == 0:
                line["id"] = f"other-{i}"
                fields["meta"] = {**(fields.get("meta") or {}), "desk.source_id": f"other-{i}"}
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    now = NOW + dt.timedelta(days=1)
    result = import_events(fixed_desk, source, now=now)
    for fields in fields_list:
        ref.add(fields, fields["at"], now, True)
    ref.check(fixed_desk)
    assert result.imported == 400
    # further appends continue every day's chain where the import left it
    for i in range(20):
        at = NOW - dt.timedelta(days=i % 9)
        append_event(fixed_desk, "inbound", f"after {i}", at=at, now=now)
        ref.add({"kind": "inbound", "content": f"after {i}"}, at, now, True)
    ref.check(fixed_desk)
    for f in archive_files(fixed_desk):
        assert check_archive_change(f.rel, None, fixed_desk.path(f.rel).read_bytes(), fixed_desk.desk_id) == []


def test_redaction_still_covers_content_payload_and_meta(desk: DeskFolder) -> None:
    rec = append_event(desk, "inbound", f"key {AWS}", payload={"deep": [{"x": f"t {GITHUB}"}], "n": 3},
                       meta={"note": f"again {AWS}"}, now=NOW)
    raw = b"".join(desk.path(f.rel).read_bytes() for f in archive_files(desk))
    assert AWS.encode() not in raw and GITHUB.encode() not in raw
    assert rec["content"] == "key [REDACTED:aws-access-key-id]"
    assert rec["payload"] == {"deep": [{"x": "t [REDACTED:github-token]"}], "n": 3}
    assert rec["meta"] == {"note": "again [REDACTED:aws-access-key-id]",
                           "desk.redacted": "aws-access-key-id,github-token"}
    plain = append_event(desk, "inbound", "nothing secret here", meta={"k": "v"}, now=NOW)
    assert plain["meta"] == {"k": "v"}  # no desk.redacted when nothing was found


def test_at_and_recorded_at_follow_each_now(desk: DeskFolder) -> None:
    later = NOW + dt.timedelta(seconds=1, microseconds=5)
    a = append_event(desk, "inbound", "a", now=NOW)
    b = append_event(desk, "inbound", "b", now=later)
    c = append_event(desk, "inbound", "c", now=dt.datetime(2026, 11, 29, 10, 0, tzinfo=dt.timezone.utc))
    assert (a["at"], a["recorded_at"]) == ("2026-11-29T10:00:00.000000Z",) * 2
    assert (b["at"], b["recorded_at"]) == ("2026-11-29T10:00:01.000005Z",) * 2
    assert (c["at"], c["recorded_at"]) == ("2026-11-29T10:00:00.000000Z",) * 2
    d = append_event(desk, "inbound", "d", at="2026-11-28", now=later)
    assert (d["at"], d["recorded_at"]) == ("2026-11-28T00:00:00.000000Z", "2026-11-29T10:00:01.000005Z")


@pytest.mark.parametrize("fields, problem", [
    ({"meta": {"k\udc80": "v"}}, "meta: holds characters that are not valid UTF-8"),
    ({"meta": {"k": "v\ud800"}}, "meta: holds characters that are not valid UTF-8"),
    ({"payload": {"a": [{"b": "\udfff"}]}}, "payload: holds characters that are not valid UTF-8"),
    ({"session": "s\ud800"}, "session: holds characters that are not valid UTF-8"),
    ({"actor": "\ud800"}, "actor: holds characters that are not valid UTF-8"),
    ({"session": 5}, "session: must be a string or null"),
])
def test_fields_that_cannot_be_written_are_refused_before_the_lock(desk: DeskFolder, fields: dict,
                                                                   problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        append_event(desk, "inbound", "hello", now=NOW, **fields)
    assert archive_files(desk) == []


def _tail_state(path: Path) -> tuple[str | None, int]:
    """(prev, seq) the next record must carry, read from the file the slow way."""
    import os

    from desk.formats.archive import read_tail

    fd = os.open(path, os.O_RDONLY)
    try:
        prev, seq, _ = read_tail(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return prev, seq + 1


def _append_checked(desk: DeskFolder, path: Path, text: str) -> dict[str, Any]:
    expected = _tail_state(path) if path.exists() else (None, 1)
    record = append_event(desk, "inbound", text, at="2026-11-29T09:00:00Z", now=NOW)
    assert (record["prev"], int(record["id"].rsplit("-", 1)[1])) == expected
    return record


def _other_process_appends(root: str, count: int) -> None:
    for i in range(count):
        append_event(DeskFolder(Path(root)), "inbound", f"from the other process {i}", at="2026-11-29T09:00:00Z")


def test_the_chain_continues_from_the_files_real_end_whoever_wrote_it(fixed_desk: DeskFolder) -> None:
    """This process remembers the line it wrote last; any other change to the file's end (another
    process's appends, a shortened or rewritten tail) makes the next append read the tail again."""
    import multiprocessing

    desk = fixed_desk
    path = desk.path(f".system/archive/2026-11-29.{CLONE}.jsonl")
    for i in range(3):
        _append_checked(desk, path, f"mine {i}")
    child = multiprocessing.get_context("fork").Process(target=_other_process_appends, args=(str(desk.root), 2))
    child.start()
    child.join()
    assert child.exitcode == 0
    _append_checked(desk, path, "after the other process")  # seq 6, prev = the child's last line
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]))  # an older version of the file (a checkout, a restore)
    _append_checked(desk, path, "after the file shrank")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]) + lines[-2][:-1] + lines[-1])  # the last line glued to the one before
    _append_checked(desk, path, "after a glued tail")
    path.write_bytes(lines[-1])  # only our last line is left, now the file's first line
    _append_checked(desk, path, "after a file of one line")
    path.write_bytes(b"")
    _append_checked(desk, path, "into an emptied file")
    assert path.read_bytes().count(b"\n") == 1
    path.write_bytes(b'{"glued":' + path.read_bytes())  # bytes before what was the first line
    _append_checked(desk, path, "after bytes glued before the first line")


def test_an_import_read_line_by_line_numbers_lines_as_the_file_does(desk: DeskFolder, tmp_path: Path) -> None:
    source = tmp_path / "crlf.jsonl"
    good = json.dumps({"kind": "inbound", "content": "ok", "at": "2026-11-28T09:00:00Z"}).encode()
    source.write_bytes(good + b"\r\n\r\n" + good + b"\r\n   \n" + b'{"kind": "inbound", "colour": 1}\r\n' + good)
    with pytest.raises(UsageError, match=r"crlf\.jsonl:5: unknown field\(s\) colour"):
        import_events(desk, source, now=NOW)
    assert archive_files(desk) == []
    source.write_bytes(good + b"\r\n\r\n" + good + b"\r\n   \n" + good)  # no newline at the end
    assert import_events(desk, source, now=NOW).imported == 3
