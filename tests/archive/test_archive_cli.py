"""`desk archive append|import|list|show|verify` through the CLI."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from desk.archive.store import clone_id
from desk.layout import DeskFolder

from tests.conftest import DeskRunner, git


def _file(desk: DeskFolder, day: str = "2026-11-29") -> Path:
    return desk.path(f".system/archive/{day}.{clone_id(desk)}.jsonl")


def _append(run: DeskRunner, *args: str, input: str | None = None) -> str:
    result = run("archive", "append", *args, input=input)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def test_append_prints_the_id_and_json_the_record(desk: DeskFolder, run: DeskRunner) -> None:
    event_id = _append(run, "--kind", "inbound", "-s", "s1", "-a", "ada", "--meta", "ch=cli",
                       "--at", "2026-11-29T10:00:00Z", "hello")
    result = run("archive", "append", "--kind", "tool", "--payload", '{"exit": 0}', "--json")
    record = json.loads(result.output)
    assert record["payload"] == {"exit": 0} and record["content"] is None
    shown = json.loads(run("archive", "show", event_id, "--json").output)
    assert shown["content"] == "hello" and shown["meta"] == {"ch": "cli"} and shown["line"] == 1
    assert shown["session"] == "s1" and shown["actor"] == "ada"


def test_append_reads_stdin_and_refuses_bad_input(desk: DeskFolder, run: DeskRunner) -> None:
    # A fixed --at: the archive file is named by the event's UTC day, never by today's date.
    event_id = _append(run, "--kind", "inbound", "--at", "2026-11-29T10:00:00Z", "-", input="from stdin\n")
    assert json.loads(run("archive", "show", event_id, "--json").output)["content"] == "from stdin\n"
    before = _file(desk).read_bytes()
    for args in (["--kind", "inbound", "--meta", "novalue", "x"], ["--kind", "inbound"],
                 ["--kind", "inbound", "--payload", "[1", "x"], ["--kind", "In Bound", "x"],
                 ["--kind", "inbound", "--at", "2026-11-29 10:00", "x"]):
        result = run("archive", "append", *args)
        assert result.exit_code == 2, (args, result.output)
    assert _file(desk).read_bytes() == before


def test_no_redact_keeps_the_text(desk: DeskFolder, run: DeskRunner) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    from tests.conftest import allow_secrets

    redacted = _append(run, "--kind", "inbound", f"token {token}")
    assert run("archive", "append", "--kind", "inbound", "--no-redact", f"token {token}").exit_code == 3
    allow_secrets(desk, token)  # --no-redact keeps only what the allow-list names
    kept = _append(run, "--kind", "inbound", "--no-redact", f"token {token}")
    assert token not in run("archive", "show", redacted).output
    assert token in run("archive", "show", kept).output


def test_list_filters_and_limits(desk: DeskFolder, run: DeskRunner) -> None:
    _append(run, "--kind", "inbound", "-s", "a", "--at", "2026-11-28T09:00:00Z", "one")
    _append(run, "--kind", "outbound", "-s", "a", "--at", "2026-11-29T09:00:00Z", "two")
    _append(run, "--kind", "progress", "-s", "b", "--at", "2026-11-29T10:00:00Z", "three")

    def contents(*args: str) -> list[str]:
        return [e["content"] for e in json.loads(run("archive", "list", "--json", *args).output)["events"]]

    assert contents() == ["one", "two", "three"]
    assert contents("--kind", "inbound", "--kind", "progress") == ["one", "three"]
    assert contents("--session", "a") == ["one", "two"]
    assert contents("--since", "2026-11-29") == ["two", "three"]
    assert contents("--limit", "1") == ["three"]
    assert "two" in run("archive", "list").output


def test_show_unknown_id(run: DeskRunner) -> None:
    assert run("archive", "show", "nope").exit_code == 2
    assert run("archive", "show", "20261129T100000000000Z-abcdefabcdef-20261129-000001").exit_code == 1


def _five(run: DeskRunner) -> list[str]:
    return [_append(run, "--kind", "inbound", "--at", f"2026-11-29T10:00:0{i}Z", f"message {i}")
            for i in range(5)]


def _verify(run: DeskRunner) -> tuple[int, list[tuple[int, str, str]]]:
    result = run("archive", "verify", "--json")
    data = json.loads(result.output)
    findings = data["findings"] + data.get("warnings", [])
    return result.exit_code, [(f["line"], f["rule"], f["severity"]) for f in findings]


def test_verify_is_clean_on_a_good_archive(desk: DeskFolder, run: DeskRunner) -> None:
    _five(run)
    assert _verify(run) == (0, [])
    assert "chains intact" in run("archive", "verify").output


def test_verify_names_a_flipped_byte(desk: DeskFolder, run: DeskRunner) -> None:
    _five(run)
    path = _file(desk)
    data = bytearray(path.read_bytes())
    data[data.index(b"message 2") + 8] ^= 0x01  # '2' -> '3'
    path.write_bytes(bytes(data))
    assert _verify(run) == (3, [(3, "archive-chain", "error")])
    assert f"{path.relative_to(desk.root)}:3: archive-chain" in run("archive", "verify").output


def test_verify_names_a_deleted_middle_line(desk: DeskFolder, run: DeskRunner) -> None:
    _five(run)
    path = _file(desk)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2] + lines[3:]))
    assert _verify(run) == (3, [(3, "archive-chain", "error")])


def test_verify_names_a_truncated_tail(desk: DeskFolder, run: DeskRunner) -> None:
    _five(run)
    path = _file(desk)
    path.write_bytes(path.read_bytes()[:-25])
    assert _verify(run) == (0, [(5, "archive-torn", "warning")])


def test_verify_names_committed_records_cut_at_a_line_boundary(desk: DeskFolder, run: DeskRunner) -> None:
    _five(run)
    assert run("checkpoint").exit_code == 0
    path = _file(desk)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]))
    assert _verify(run) == (3, [(4, "archive-append-only", "error")])


def test_verify_names_a_change_to_the_newest_committed_record(desk: DeskFolder, run: DeskRunner) -> None:
    _five(run)
    run("checkpoint")
    path = _file(desk)
    path.write_bytes(path.read_bytes().replace(b"message 4", b"message X"))
    assert _verify(run) == (3, [(5, "archive-append-only", "error")])


def _jsonl(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(json.dumps(x) if not isinstance(x, str) else x for x in lines) + "\n")
    return path


def test_import_keeps_at_and_fills_each_days_file(desk: DeskFolder, run: DeskRunner, tmp_path: Path) -> None:
    src = _jsonl(tmp_path, [
        {"kind": "inbound", "at": "2026-10-01T08:00:00Z", "content": "a", "session": "x"},
        {"kind": "outbound", "at": "2026-10-02T08:00:00+02:00", "content": "b", "id": "old-1"},
        "",
        {"kind": "fact", "at": "2026-10-01T09:00:00Z", "payload": {"k": 1}, "meta": {"src": "log"}},
    ])
    result = run("archive", "import", str(src), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["imported"] == 3 and len(data["files"]) == 2
    events = json.loads(run("archive", "list", "--json").output)["events"]
    assert [e["at"] for e in events] == ["2026-10-01T08:00:00.000000Z", "2026-10-01T09:00:00.000000Z",
                                         "2026-10-02T06:00:00.000000Z"]
    assert events[2]["meta"] == {"desk.source_id": "old-1"}
    assert _file(desk, "2026-10-01").read_bytes().count(b"\n") == 2
    assert _verify(run) == (0, [])
    assert git(desk.root, "ls-files", "--others", "--", ".system/archive").strip()  # not committed


def test_import_of_a_bad_line_changes_nothing(desk: DeskFolder, run: DeskRunner, tmp_path: Path) -> None:
    src = _jsonl(tmp_path, [{"kind": "inbound", "content": "ok"}, {"kind": "inbound", "colour": "red"}])
    result = run("archive", "import", str(src))
    assert result.exit_code == 2 and "history.jsonl:2" in result.output
    src = _jsonl(tmp_path, [{"kind": "inbound", "content": "ok"}, "{not json"])
    assert "history.jsonl:2" in run("archive", "import", str(src)).output
    src = _jsonl(tmp_path, [{"kind": "inbound", "at": "never"}])
    assert "history.jsonl:1: at" in run("archive", "import", str(src)).output
    assert not list(desk.path(".system/archive").glob("*.jsonl"))
    assert run("archive", "import", str(tmp_path / "missing.jsonl")).exit_code == 2


def test_import_progress_lines(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 9.15: progress lines on stderr though stderr is no terminal (CliRunner's is not)."""
    monkeypatch.setenv("DESK_PROGRESS_INTERVAL", "0")  # every update: no wall clock in the test
    src = _jsonl(tmp_path, [{"kind": "inbound", "content": str(i)} for i in range(10)])
    result = run("archive", "import", str(src))
    assert result.exit_code == 0 and "imported 10 events" in result.stdout
    assert f"desk: importing {src.name}: 10/10 events (100%)" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith(f"desk: importing {src.name}: done")
    quiet = run("archive", "import", "--no-progress", str(src))
    assert quiet.exit_code == 0 and "importing" not in quiet.stderr


def test_verify_catches_a_rewrite_committed_past_the_hook(desk: DeskFolder, run: DeskRunner) -> None:
    _five(run)
    run("checkpoint")
    _append(run, "--kind", "inbound", "--at", "2026-11-29T10:00:09Z", "later")
    run("checkpoint")
    path = _file(desk)
    rel = str(path.relative_to(desk.root))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:4]))  # drop the last two records, then commit past the hook
    git(desk.root, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-q",
        "--no-verify", "-m", "rewrite", "--", rel)
    code, findings = _verify(run)
    assert code == 3 and findings == [(5, "archive-append-only", "error")]


def _from_now(hours: float) -> str:
    """The real now moved by `hours`, as --at takes it: the CLI checks against the real clock, so
    the test's times come from it (never a literal date that will one day be the past)."""
    from desk.text.times import format_time, utc_now

    return format_time(utc_now() + dt.timedelta(hours=hours))


def test_an_event_time_more_than_a_day_ahead_is_refused_naming_at(desk: DeskFolder, run: DeskRunner) -> None:
    """`--at 2999-01-01T00:00:00Z` was accepted: that event would stay the newest for recency
    ranking for ever. Up to 24 hours ahead is accepted (another machine's clock); beyond, exit 2
    naming `--at` and the value, with a hint, and nothing appended. `fact add --at` too."""
    ahead = _append(run, "--kind", "inbound", "--at", _from_now(23), "a clock that runs ahead")
    assert json.loads(run("archive", "show", ahead, "--json").output)["content"] == "a clock that runs ahead"
    before = {p.name: p.read_bytes() for p in desk.path(".system/archive").glob("*.jsonl")}
    for at in ("2999-01-01T00:00:00Z", _from_now(25), "2999-01-01"):
        result = run("archive", "append", "--kind", "inbound", "--at", at, "from the future")
        assert result.exit_code == 2, (at, result.output)
        assert result.output.startswith(f"desk: error: --at '{at}' is more than 24 hours after now"), result.output
        assert "\nhint: " in result.output
        fact = run("fact", "add", "Use WAL.", "--kind", "decision", "--importance", "3", "--at", at)
        assert fact.exit_code == 2 and f"--at '{at}' is more than 24 hours after now" in fact.output, fact.output
    assert {p.name: p.read_bytes() for p in desk.path(".system/archive").glob("*.jsonl")} == before


def test_import_of_an_event_more_than_a_day_ahead_names_the_line_and_imports_nothing(
        desk: DeskFolder, run: DeskRunner, tmp_path: Path) -> None:
    for far in ("2999-01-01T00:00:00Z", _from_now(25)):
        src = _jsonl(tmp_path, [{"kind": "inbound", "at": _from_now(-1), "content": "ok"},
                                {"kind": "inbound", "at": _from_now(23), "content": "skewed clock"},
                                {"kind": "inbound", "at": far, "content": "from the future"}])
        result = run("archive", "import", str(src))
        assert result.exit_code == 2, result.output
        assert f"history.jsonl:3: at '{far}' is more than 24 hours after now" in result.output
        assert "nothing was imported" in result.output
        assert not list(desk.path(".system/archive").glob("*.jsonl"))
    src = _jsonl(tmp_path, [{"kind": "inbound", "at": _from_now(23), "content": "skewed clock"}])
    assert run("archive", "import", str(src)).exit_code == 0


def _count(desk: DeskFolder) -> int:
    return sum(p.read_bytes().count(b"\n") for p in desk.path(".system/archive").glob("*.jsonl"))


def test_an_import_run_again_appends_only_what_is_not_archived(desk: DeskFolder, run: DeskRunner,
                                                               tmp_path: Path) -> None:
    """Issue 27.8: a re-run of an interrupted `desk archive import` appended every record again
    (117,447 + 150,000 = 267,447). An event the archive holds (by its id, or by what it says and
    when) is skipped and counted; the same message twice at one moment in the input is kept twice."""
    with_ids = [{"kind": "inbound", "at": f"2026-10-0{1 + i % 3}T08:00:{i:02d}Z", "content": f"m{i}",
                 "id": f"src-{i}"} for i in range(20)]
    without = [{"kind": "outbound", "at": f"2026-10-02T09:00:{i:02d}Z", "content": f"r{i}", "session": "s"}
               for i in range(10)]
    twice = [{"kind": "inbound", "at": "2026-10-03T10:00:00Z", "content": "ok"}] * 2
    everything = with_ids + without + twice
    # The first run stopped part-way: its first events landed (in file order), the rest did not.
    first = json.loads(run("archive", "import", str(_jsonl(tmp_path, with_ids[:7] + without[:4] + twice[:1])),
                           "--json").output)
    assert first["imported"] == 12 and first["already_archived"] == 0
    again = run("archive", "import", str(_jsonl(tmp_path, everything)), "--json")
    assert again.exit_code == 0, again.output
    data = json.loads(again.output)
    assert (data["imported"], data["already_archived"]) == (len(everything) - 12, 12)
    assert _count(desk) == len(everything)
    contents = sorted(e["content"] for e in json.loads(run("archive", "list", "--json").output)["events"])
    assert contents == sorted(e["content"] for e in everything)  # each once; "ok" twice, as in the input
    human = run("archive", "import", str(_jsonl(tmp_path, everything)))
    assert human.output.strip() == f"imported 0 events into 0 files; {len(everything)} events already archived, skipped"
    assert _count(desk) == len(everything) and _verify(run) == (0, [])
    # An export of the archive itself (its own ids), and the same events under other ids but
    # with the same content and time: nothing new.
    exported = json.loads(run("archive", "list", "--json").output)["events"]
    own = [{k: e[k] for k in ("id", "kind", "at", "content", "session") if e.get(k) is not None} for e in exported]
    assert json.loads(run("archive", "import", str(_jsonl(tmp_path, own)), "--json").output)["imported"] == 0
    renamed = [{**e, "id": f"other-{n}"} for n, e in enumerate(own)]
    assert json.loads(run("archive", "import", str(_jsonl(tmp_path, renamed)), "--json").output)["imported"] == 0
    # Something new among them is appended, alone.
    more = own + [{"kind": "inbound", "at": "2026-10-03T11:00:00Z", "content": "new"}]
    assert json.loads(run("archive", "import", str(_jsonl(tmp_path, more)), "--json").output)["imported"] == 1
    assert _count(desk) == len(everything) + 1


@pytest.mark.slow
def test_an_import_killed_part_way_and_run_again_holds_each_event_once(desk: DeskFolder, tmp_path: Path) -> None:
    """The real thing: `desk archive import` killed (SIGKILL) once its first records are on disk,
    then run again to the end: every input event is in the archive exactly once."""
    import os
    import signal
    import subprocess
    import sys

    events = [{"kind": "inbound", "at": f"2026-10-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
               "content": f"event {i} " + "x" * 200, **({"id": f"e{i}"} if i % 2 else {})} for i in range(20_000)]
    src = _jsonl(tmp_path, events)
    argv = [sys.executable, "-m", "desk", "--desk", str(desk.root), "archive", "import", "--no-progress", str(src)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    folder = desk.path(".system/archive")
    while proc.poll() is None and not any(p.stat().st_size > 0 for p in folder.glob("*.jsonl")):
        pass  # until the first records are written (no clock: the file itself says so)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    landed = _count(desk)
    assert 0 < landed < len(events), "the import was not stopped part-way: the test proves nothing"
    done = subprocess.run(argv[:-2] + ["--json", str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["imported"] + data["already_archived"] == len(events)
    assert data["already_archived"] <= landed
    listed = subprocess.run(argv[:6] + ["list", "--json"], capture_output=True, text=True, check=True)
    contents = [e["content"] for e in json.loads(listed.stdout)["events"]]
    assert sorted(contents) == sorted(e["content"] for e in events)
