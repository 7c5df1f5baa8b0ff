"""The archive's library surface: append, read, the chain, torn writes, concurrent writers."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
from pathlib import Path

import pytest

from desk.archive.store import append_event, archive_files, clone_id, iter_events
from desk.formats.archive import check_archive_change, line_hash
from desk.layout import DeskFolder
from desk.errors import Finding, UsageError

NOW = dt.datetime(2026, 11, 29, 10, 0, 0, tzinfo=dt.timezone.utc)


def _file(desk: DeskFolder, day: str = "2026-11-29") -> Path:
    return desk.path(f".system/archive/{day}.{clone_id(desk)}.jsonl")


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def test_append_writes_one_chained_line_per_event(desk: DeskFolder) -> None:
    first = append_event(desk, "inbound", "hello", session="s1", actor="user", now=NOW)
    second = append_event(desk, "outbound", "hi", session="s1", payload={"n": 1},
                          meta={"channel": "cli"}, now=NOW + dt.timedelta(seconds=1))
    lines = _lines(_file(desk))
    assert len(lines) == 2
    records = [json.loads(line) for line in lines]
    assert records[0] == first and records[1] == second
    assert first["prev"] is None
    assert second["prev"] == line_hash(lines[0])
    assert first["desk_id"] == desk.config.desk_id
    assert first["at"] == "2026-11-29T10:00:00.000000Z"
    assert first["id"] < second["id"]
    # compact, sorted keys, UTF-8 not escaped
    assert lines[0] == json.dumps(first, sort_keys=True, separators=(",", ":"),
                                  ensure_ascii=False).encode()
    # appends are not committed (and a new file is ignored by `git status` until desk commits it)
    assert desk.git.worktree.dirty([".system/archive"]) == []
    assert desk.git.worktree.start_changed_in_worktree(".system/archive").result() != []


def test_at_goes_to_the_file_of_its_utc_day(desk: DeskFolder) -> None:
    rec = append_event(desk, "fact", "older", at="2026-03-01T23:30:00-02:00", now=NOW)
    assert rec["at"] == "2026-03-02T01:30:00.000000Z"
    assert _file(desk, "2026-03-02").exists()
    assert rec["recorded_at"] == "2026-11-29T10:00:00.000000Z"


def test_non_ascii_content_is_kept(desk: DeskFolder) -> None:
    append_event(desk, "inbound", "报告用中文", now=NOW)
    assert "报告用中文".encode() in _file(desk).read_bytes()


@pytest.mark.parametrize("kwargs", [
    {"kind": "Bad Kind"}, {"kind": "inbound", "meta": {"k": 1}}, {"kind": "inbound", "at": "yesterday"},
    {"kind": "inbound", "at": "2026-11-29T10:00:00"}, {"kind": "inbound", "payload": [1, 2]},
])
def test_bad_fields_are_refused_and_nothing_is_written(desk: DeskFolder, kwargs: dict) -> None:
    kind = kwargs.pop("kind")
    with pytest.raises(UsageError):
        append_event(desk, kind, "x", now=NOW, **kwargs)
    assert archive_files(desk) == []


def test_iter_events_sorts_across_files_and_filters(desk: DeskFolder) -> None:
    append_event(desk, "inbound", "b", session="s1", at="2026-11-29T09:00:00Z", now=NOW)
    append_event(desk, "fact", "a", session="s2", at="2026-11-28T09:00:00Z", now=NOW)
    append_event(desk, "outbound", "c", session="s1", at="2026-11-29T08:00:00Z", now=NOW)
    events = list(iter_events(desk))
    assert [e.record["content"] for e in events] == ["a", "c", "b"]
    assert events[1].line == 2 and events[1].path.endswith(".jsonl")
    assert events[1].offset == len(_lines(_file(desk))[0]) + 1
    assert [e.record["content"] for e in iter_events(desk, kinds=["inbound", "outbound"])] == ["c", "b"]
    assert [e.record["content"] for e in iter_events(desk, session="s2")] == ["a"]
    assert [e.record["content"] for e in iter_events(desk, since="2026-11-29")] == ["c", "b"]
    assert [e.record["content"] for e in iter_events(desk, until="2026-11-29T08:30:00Z")] == ["a", "c"]


def test_seconds_and_microsecond_times_sort_together(desk: DeskFolder) -> None:
    path = _file(desk)
    append_event(desk, "x", "late", at="2026-11-29T12:00:00.500000Z", now=NOW)
    append_event(desk, "x", "early", at="2026-11-29T12:00:00Z", now=NOW)
    assert path.exists()
    assert [e.record["content"] for e in iter_events(desk)] == ["early", "late"]


def _append_many(root: str, worker: int, count: int) -> None:
    desk = DeskFolder(Path(root))
    for i in range(count):
        append_event(desk, "progress", f"worker {worker} item {i}", session=f"w{worker}")


def test_eight_processes_appending_lose_nothing_and_keep_one_chain(desk: DeskFolder) -> None:
    clone_id(desk)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(desk.root), w, 25)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    events = list(iter_events(desk))
    assert sorted(e.record["content"] for e in events) == sorted(
        f"worker {w} item {i}" for w in range(8) for i in range(25))
    assert len({e.record["id"] for e in events}) == 200
    for afile in archive_files(desk):
        data = desk.path(afile.rel).read_bytes()
        assert check_archive_change(afile.rel, None, data, desk.config.desk_id) == []


def test_a_torn_write_of_any_length_loses_no_complete_record(desk: DeskFolder) -> None:
    path = _file(desk)
    append_event(desk, "inbound", "one", now=NOW)
    append_event(desk, "inbound", "two", now=NOW)
    good = path.read_bytes()
    append_event(desk, "inbound", "torn", now=NOW)  # the record a crash will tear
    record = path.read_bytes()[len(good):]
    rel = f".system/archive/{path.name}"
    for length in range(1, len(record)):
        path.write_bytes(good + record[:length])  # the crash left only `length` bytes of it
        append_event(desk, "inbound", "next", now=NOW)
        contents = [e.record["content"] for e in iter_events(desk)]
        whole = length == len(record) - 1  # only its newline was lost: the record is complete
        assert contents == ["one", "two"] + (["torn"] if whole else []) + ["next"], length
        findings = check_archive_change(rel, None, path.read_bytes(), desk.config.desk_id)
        assert [f for f in findings if f.severity == "error"] == [], (length, findings)
        assert [(f.line, f.rule) for f in findings] == ([] if whole else [(3, "archive-torn")])
        assert check_archive_change(rel, good, path.read_bytes(), desk.config.desk_id) == findings
        torn = good + record[:length]  # committed with its torn tail: the fragment is re-checked
        assert check_archive_change(rel, torn, path.read_bytes(), desk.config.desk_id) == findings


def test_reader_reports_an_unterminated_fragment(desk: DeskFolder) -> None:
    path = _file(desk)
    append_event(desk, "inbound", "one", now=NOW)
    with path.open("ab") as fh:
        fh.write(b'{"actor":nu')
    problems: list[Finding] = []
    assert [e.record["content"] for e in iter_events(desk, problems=problems)] == ["one"]
    assert [(p.line, p.rule) for p in problems] == [(2, "archive-torn")]


def _three(desk: DeskFolder) -> tuple[Path, bytes, list[bytes]]:
    for text in ("one", "two", "three", "four"):
        append_event(desk, "inbound", text, now=NOW)
    path = _file(desk)
    return path, path.read_bytes(), _lines(path)


def _errors(desk: DeskFolder, path: Path, old: bytes | None, new: bytes) -> list[tuple[int, str]]:
    found = check_archive_change(f".system/archive/{path.name}", old, new, desk.config.desk_id)
    return [(f.line, f.rule) for f in found if f.severity == "error"]


def test_check_names_a_flipped_byte_at_its_record(desk: DeskFolder) -> None:
    path, data, lines = _three(desk)
    flipped = data.replace(b'"two"', b'"twO"')
    assert _errors(desk, path, None, flipped) == [(2, "archive-chain")]
    broken = data.replace(b'"two"', b'"two\x00')  # not JSON any more
    assert _errors(desk, path, None, broken)[0] == (2, "archive-record")


def test_check_names_a_deleted_middle_line(desk: DeskFolder) -> None:
    path, data, lines = _three(desk)
    new = b"".join(line + b"\n" for i, line in enumerate(lines) if i != 1)
    assert _errors(desk, path, None, new) == [(2, "archive-chain")]


def test_check_names_a_truncated_tail(desk: DeskFolder) -> None:
    path, data, lines = _three(desk)
    found = check_archive_change(f".system/archive/{path.name}", None, data[:-10], desk.config.desk_id)
    assert [(f.line, f.rule) for f in found] == [(4, "archive-torn")]
    assert _errors(desk, path, data, data[:-10]) == [(4, "archive-append-only")]
    cut = b"".join(line + b"\n" for line in lines[:2])
    assert _errors(desk, path, data, cut) == [(3, "archive-append-only")]


def test_check_accepts_a_pure_append_and_rejects_rewrites(desk: DeskFolder) -> None:
    path, data, lines = _three(desk)
    old = b"".join(line + b"\n" for line in lines[:2])
    assert _errors(desk, path, old, data) == []
    assert _errors(desk, path, data, data.replace(b'"one"', b'"uno"')) == [(1, "archive-append-only")]
    other = check_archive_change(f".system/archive/{path.name}", None, data, "desk-other")
    assert {(f.line, f.rule) for f in other} == {(n, "archive-record") for n in range(1, 5)}
    assert _errors(desk, path, None, data + b"[1]\n") == [(5, "archive-record")]
    assert check_archive_change(".system/archive/notes.txt", None, b"", "d")[0].rule == "archive-record"


def test_check_rejects_a_record_in_the_wrong_days_file(desk: DeskFolder) -> None:
    path, data, lines = _three(desk)
    other_day = (NOW + dt.timedelta(days=1)).strftime("%Y-%m-%d")  # records are at NOW, fixed
    found = _errors(desk, path.with_name(path.name.replace(NOW.strftime("%Y-%m-%d"), other_day)), None, data)
    assert found and all(rule == "archive-record" for _line, rule in found)


@pytest.mark.parametrize("at", [
    "2026-11-29T10:00:00.000000Z\n",     # Python's `$` matches before a final newline
    "2026-11-29T25:00:00.000000Z",       # shaped like a time, but not one
    "2026-11-29T10:00:00.000000z",
    "2026-11-29T12:00:00.000000+02:00",  # records are compared as strings: one spelling only
    "2026-11-29T10:00:00.000Z",
])
def test_check_refuses_times_not_spelled_as_the_archive_stores_them(desk: DeskFolder, at: str) -> None:
    path, data, lines = _three(desk)
    last = json.loads(lines[-1])
    forged = json.dumps({**last, "at": at}, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    new = b"".join(line + b"\n" for line in lines[:-1]) + forged.encode() + b"\n"
    assert _errors(desk, path, None, new) == [(4, "archive-record")]


def test_secrets_are_redacted_unless_asked_not_to(desk: DeskFolder) -> None:
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    rec = append_event(desk, "inbound", f"my key is {key}", payload={"nested": [key]},
                       meta={"note": key}, now=NOW)
    raw = _file(desk).read_bytes()
    assert key.encode() not in raw
    assert "[REDACTED:" in rec["content"] and "[REDACTED:" in rec["payload"]["nested"][0]
    assert rec["meta"]["desk.redacted"]
    from desk.errors import RejectedError
    from tests.conftest import allow_secrets

    with pytest.raises(RejectedError, match="no checkpoint could commit it"):
        append_event(desk, "inbound", f"my key is {key}", redact=False, now=NOW)
    allow_secrets(desk, key)
    kept = append_event(desk, "inbound", f"my key is {key}", redact=False, now=NOW)
    assert kept["content"].endswith(key) and key.encode() in _file(desk).read_bytes()


def test_clone_id_is_made_once_and_kept_untracked(desk: DeskFolder) -> None:
    first = clone_id(desk)
    assert first == clone_id(DeskFolder(desk.root)) and len(first) == 12
    assert (desk.git_dir / "desk-clone-id").read_text().splitlines()[0] == first


def test_a_copied_desk_makes_a_clone_id_of_its_own(desk: DeskFolder, tmp_path: Path) -> None:
    """`cp -a` carries .git/desk-clone-id along; two copies must not append under one id."""
    import shutil
    import subprocess

    from desk.archive.store import _CLONE_IDS, append_event

    append_event(desk, "inbound", "before the copy")
    original = clone_id(desk)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(desk.root), str(copy)], check=True)
    _CLONE_IDS.clear()  # as a new process would start
    copied = DeskFolder(copy)
    assert clone_id(copied) != original
    assert clone_id(DeskFolder(desk.root)) == original  # the original keeps its id
    append_event(copied, "inbound", "in the copy")
    assert any(p.name.endswith(f".{clone_id(copied)}.jsonl") for p in (copy / ".system/archive").iterdir())
    assert (copied.git_dir / "desk-clone-id.copied").exists()
    _CLONE_IDS.clear()
    shutil.rmtree(copy)


def test_an_unbound_clone_id_is_kept_and_bound(desk: DeskFolder) -> None:
    from desk.archive.store import _CLONE_IDS

    _CLONE_IDS.clear()
    (desk.git_dir / "desk-clone-id").write_text("0123456789ab\n")  # as desk 0.1 wrote it
    assert clone_id(desk) == "0123456789ab"
    assert (desk.git_dir / "desk-clone-id").read_text().startswith("0123456789ab\ngit-dir ")
    _CLONE_IDS.clear()


def test_a_malformed_clone_id_is_refused_not_used(desk: DeskFolder) -> None:
    from desk.archive.store import _CLONE_IDS, append_event
    from desk.errors import DeskError

    _CLONE_IDS.clear()
    (desk.git_dir / "desk-clone-id").write_text("")
    with pytest.raises(DeskError, match="does not hold a clone id"):
        append_event(desk, "inbound", "hello")
    assert not any((desk.root / ".system/archive").glob("*.jsonl"))
    _CLONE_IDS.clear()


@pytest.mark.parametrize("fields, problem", [
    ({"content": "x \ud800"}, "content: holds characters that are not valid UTF-8"),
    ({"meta": ["a", "b"]}, "meta: must map strings to strings"),
    ({"at": 123}, "is not an ISO 8601 time"),
    ({"at": "0001-01-01T00:00:00+05:00"}, "outside the range"),
])
def test_malformed_event_fields_are_usage_errors(desk: DeskFolder, fields: dict, problem: str) -> None:
    from desk.archive.store import append_event
    from desk.errors import UsageError

    args = {"content": "hello", **fields}
    content = args.pop("content")
    with pytest.raises(UsageError, match=problem):
        append_event(desk, "inbound", content, **args)
    assert not any((desk.root / ".system/archive").glob("*.jsonl"))


def test_records_carry_the_committed_desk_id_not_an_edit_in_the_work_tree(desk: DeskFolder) -> None:
    """An uncommitted edit of desk.json's desk_id used to stamp records that every checkpoint and
    digest then refused for good (issue 15.8)."""
    from desk.archive.checkpoint import checkpoint

    committed = json.loads((desk.root / ".system/desk.json").read_text())["desk_id"]
    config = desk.root / ".system/desk.json"
    edited = json.loads(config.read_text())
    edited["desk_id"] = "desk-edited-by-hand"
    config.write_text(json.dumps(edited))
    fresh = DeskFolder(desk.root)  # a new process: nothing cached in memory
    (fresh.git_dir / "desk-id").unlink(missing_ok=True)  # nor on disk
    record = append_event(fresh, "inbound", "hello")
    assert record["desk_id"] == committed
    assert (fresh.git_dir / "desk-id").read_text().strip() == committed
    checkpoint(DeskFolder(desk.root))  # accepted: no record of another desk
    assert [e.record["content"] for e in iter_events(DeskFolder(desk.root))] == ["hello"]


def test_a_payload_nested_too_deeply_is_refused_not_an_internal_error(desk: DeskFolder, tmp_path: Path) -> None:
    """A payload 500 levels deep overflowed the redaction's recursion (an internal RecursionError),
    and a JSONL line thousands deep overflowed `desk archive import`'s decoder: both are refused
    naming the field or the line, with nothing appended. 64 levels are enough for any tool's output."""
    import desk as desk_api
    from desk.formats.archive import MAX_PAYLOAD_DEPTH

    def nested(depth: int) -> dict:
        value: dict = {}
        for _ in range(depth - 1):
            value = {"a": value}
        return value

    assert append_event(desk, "tool", payload=nested(MAX_PAYLOAD_DEPTH))["payload"] is not None
    before = sorted((p.read_bytes() for p in desk.path(".system/archive").glob("*.jsonl")))
    for depth in (MAX_PAYLOAD_DEPTH + 1, 500):
        with pytest.raises(UsageError, match=f"^payload: nested deeper than {MAX_PAYLOAD_DEPTH} levels"):
            append_event(desk, "tool", payload=nested(depth))
    source = tmp_path / "deep.jsonl"
    source.write_text('{"kind": "tool", "at": "2026-11-01T00:00:00Z", "payload": ' + "[" * 5000 + "]" * 5000 + "}\n")
    with pytest.raises(UsageError, match="deep.jsonl:1: JSON nested too deeply"):
        desk_api.open(desk.root).archive_import(source)
    assert sorted(p.read_bytes() for p in desk.path(".system/archive").glob("*.jsonl")) == before


def test_a_cli_payload_nested_too_deeply_is_a_usage_error(desk: DeskFolder) -> None:
    """`--payload` thousands of levels deep overflowed the JSON decoder (an internal error)."""
    from tests.conftest import DeskRunner

    result = DeskRunner(desk.root)("archive", "append", "-k", "tool", "--payload", "[" * 5000 + "]" * 5000, "x")
    assert result.exit_code == 2 and "nested too deeply" in result.output, result.output
    assert not list(desk.path(".system/archive").glob("*.jsonl"))
