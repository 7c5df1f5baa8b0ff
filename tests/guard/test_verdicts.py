"""desk.gate.verdicts: verdicts cached by blob id, reused only when every input is the same.

Reuse is shown by the counters a run reports (`Report.computed`: files the rules ran on,
`Report.reused`: verdicts taken from the cache) and by poisoning the cache: a verdict written
into the SQLite file by hand comes back, so the file was not read again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desk.errors import Finding
from desk.gate import verdicts
from desk.guard.doctor import bypassed_commits, diagnose
from desk.gate.validate import validate_staged
from desk.gate.whole import validate_all
from desk.gate.verdicts import CACHE_FILE
from desk.storage.code_print import import_graph
from desk.storage.derived import registered
from desk.layout import DeskFolder
from desk.text.secrets import fingerprint
from tests.guard_helpers import add_commit, commit, memory_text, reindex_text, sh, write

NOW = dt.datetime(2026, 11, 30, 12, tzinfo=dt.timezone.utc)
GH_TOKEN = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC1234"
ROOT = Path(__file__).resolve().parents[2]


def cache_db(desk: DeskFolder) -> sqlite3.Connection:
    return sqlite3.connect(desk.cache_dir / CACHE_FILE, isolation_level=None)


def forget_states(desk: DeskFolder) -> None:
    """Drop the whole-desk results (and the base a run continues), so the next run goes file by file."""
    with cache_db(desk) as db:
        db.execute("DELETE FROM states")
        db.execute("DELETE FROM bases")


def set_config(desk: DeskFolder, **changes: object) -> None:
    path = desk.root / ".system/desk.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config, indent=2) + "\n")


def allow(desk: DeskFolder, *fingerprints: str) -> None:
    path = desk.root / ".system/desk.json"
    config = json.loads(path.read_text())
    config["secrets"]["allow"] = list(fingerprints)
    path.write_text(json.dumps(config, indent=2) + "\n")


def add_memories(desk: DeskFolder, *names: str) -> None:
    for name in names:
        write(desk.root, f"memory/{name}.md", memory_text(name))
    reindex_text(desk.root)
    assert add_commit(desk.root, "memories", "memory", "MEMORY.md").returncode == 0


def key(report_findings: list[Finding]) -> list[tuple[object, ...]]:
    return [tuple(f) for f in report_findings]


def test_an_unchanged_desk_is_not_checked_again(desk: DeskFolder) -> None:
    add_memories(desk, "alpha", "beta", "gamma")
    first = validate_all(desk, NOW)
    # The hook already checked the memories as they were committed: their verdicts are reused.
    assert first.ok and first.computed + first.reused == first.checked and first.reused >= 3
    again = validate_all(desk, NOW)
    assert again.ok and again.computed == 0 and again.reused == first.checked
    forget_states(desk)  # file by file: every verdict from the cache
    third = validate_all(desk, NOW)
    assert third.computed == 0 and third.reused == first.checked


def test_one_change_costs_one_check(desk: DeskFolder) -> None:
    add_memories(desk, "alpha", "beta", "gamma")
    validate_all(desk, NOW)
    write(desk.root, "memory/beta.md", memory_text("beta", body="A new body, same index line."))
    report = validate_all(desk, NOW)
    assert report.ok and report.computed == 1 and report.reused == report.checked - 1


def test_a_poisoned_verdict_is_believed_so_the_file_was_not_read(desk: DeskFolder) -> None:
    add_memories(desk, "alpha", "beta")
    validate_all(desk, NOW)
    forget_states(desk)
    poison = json.dumps([["memory/alpha.md", 1, "poisoned", "from the cache", "error", ""]])
    with cache_db(desk) as db:
        assert db.execute("UPDATE files SET findings = ? WHERE path = 'memory/alpha.md'",
                          (poison,)).rowcount == 1
    report = validate_all(desk, NOW)
    assert [f.rule for f in report.findings] == ["poisoned"] and report.computed == 0


@pytest.mark.parametrize("damage", ["garbage", "deleted", "bad-row"])
def test_a_broken_cache_is_rebuilt_silently(desk: DeskFolder, damage: str) -> None:
    add_memories(desk, "alpha", "beta")
    write(desk.root, "NOW.md", f"# NOW\n\nuse {GH_TOKEN}\n")
    expected = validate_all(desk, NOW, cached=False)
    validate_all(desk, NOW)
    path = desk.cache_dir / CACHE_FILE
    if damage == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"this is not a database" * 100)
    elif damage == "deleted":
        path.unlink()
    else:
        forget_states(desk)
        with cache_db(desk) as db:
            db.execute("UPDATE files SET findings = '[[not json' WHERE path = 'NOW.md'")
    report = validate_all(desk, NOW)
    assert key(report.findings) == key(expected.findings) and report.checked == expected.checked
    assert report.computed >= 1
    again = validate_all(desk, NOW)
    assert key(again.findings) == key(expected.findings) and again.computed == 0


def test_the_path_is_part_of_the_key(desk: DeskFolder) -> None:
    add_memories(desk, "alpha")
    validate_all(desk, NOW)
    os.rename(desk.root / "memory/alpha.md", desk.root / "memory/omega.md")  # same bytes
    report = validate_all(desk, NOW)
    assert report.computed == 1
    assert "memory/omega.md:2: name-mismatch" in "\n".join(str(f) for f in report.findings)


def test_a_new_rules_version_checks_everything_again(desk: DeskFolder,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    add_memories(desk, "alpha", "beta")
    first = validate_all(desk, NOW)
    monkeypatch.setattr(verdicts, "rules_version", lambda folder=None: "another version of the rules")
    report = validate_all(desk, NOW)
    assert report.computed == first.checked and report.reused == 0
    assert key(report.findings) == key(first.findings)


def test_the_rules_version_covers_every_module_a_verdict_loads() -> None:
    """Every desk module that computing any kind of verdict loads is in the import graph the
    verdict cache's fingerprint is taken from (desk.storage.derived), so editing it gives a new
    rules version; no hand list to keep up."""
    script = r"""
import datetime as dt, json, sys
from desk.gate.rules import check_message, file_verdict, secret_verdict
memory = b"---\nname: m\ndescription: d\ntype: fact\ntriggers: [t]\nexpires: 2026-01-01T00:00:00Z\n---\nBody.\n"
record = {"id": "x", "desk_id": "d", "at": "2026-11-30T00:00:00Z", "kind": "inbound"}
for path, data, mode, old in [
        ("memory/m.md", memory, "100644", None), ("memory/m.md", b"junk", "100644", None),
        ("memory/Bad.md", memory, "100644", None), ("memory/x.txt", b"x", "100644", None),
        (".system/archive/2026-11-30.c.jsonl", json.dumps(record).encode() + b"\n", "100644", b""),
        (".system/archive/2026-11-30.c.jsonl", None, "100644", b"x\n"),
        (".system/desk.json", b'{"desk_id": "d"}', "100644", b'{"desk_id": "e"}'),
        (".system/desk.json", b"{", "100644", None),
        ("NOW.md", b"token = 'Zx8q2LmP0vR7tYw4nKs'\n", "100644", None), ("journal/a.md", b"\xff", "100644", None),
        ("journal/b.md", b"a\0b", "100644", None), ("journal/c.md", b"", "120000", None),
        ("journal/d", b"", "160000", None), ("MEMORY.md", b"x" * (2 << 20), "100644", None),
        ("USER.md", b"---\nname: A\ntimezone: UTC+8\n---\n", "100644", None),
        ("users/u-0123456789abcdef/prefs/a.b.md", b"---\nkey: a.b\n---\n", "100644", None),
        ("users/x/notes.md", b"x", "100644", None), ("projects/p/memory/m.md", memory, "100644", None),
        (".system/conflicts.json", b'{"schema_version": 2, "cases": []}', "100644", None),
        (".system/adjudications.0123456789ab.jsonl", b"{}\n", "100644", b"")]:
    file_verdict(path, data, desk_id="d", mode=mode, old=old).findings_at((), dt.datetime.now(dt.timezone.utc))
secret_verdict("NOW.md", "password = 'Zx8q2LmP0vR7tYw4nKs'")
check_message("x\n\nDesk-Actor: assistant\n", {"SOUL.md"})
print(json.dumps(sorted(m for m in sys.modules if m.startswith("desk"))))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    loaded = set(json.loads(out))
    packages = {m for m in loaded if (ROOT / Path(*m.split("."))).is_dir()}
    graph, _ = import_graph(registered(CACHE_FILE).builders)
    assert loaded - packages <= set(graph)


def test_the_allow_list_and_the_clock_apply_to_cached_verdicts(desk: DeskFolder) -> None:
    """Neither is part of the key: a verdict carries each secret's fingerprint and a memory's
    expiry, so allowing a secret or the passing of time never checks a file again."""
    expires = (NOW + dt.timedelta(hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")  # between NOW and NOW + 2 days
    text = memory_text("temp", extra=f"expires: {expires}\n")
    write(desk.root, "memory/temp.md", text)
    write(desk.root, "NOW.md", f"# NOW\n\nuse {GH_TOKEN}\n")
    reindex_text(desk.root)
    before = validate_all(desk, NOW)
    assert {f.rule for f in before.findings} == {"secret"}
    later = validate_all(desk, NOW + dt.timedelta(days=2))
    assert {f.rule for f in later.findings} == {"secret", "memory-expired"}
    assert later.computed == 0
    allow(desk, fingerprint(GH_TOKEN))
    allowed = validate_all(desk, NOW)
    assert allowed.ok and not allowed.findings
    assert allowed.computed == 1  # desk.json itself; NOW.md was not scanned again
    allow(desk)
    again = validate_all(desk, NOW)
    assert {f.rule for f in again.findings} == {"secret"} and again.computed == 1


def test_another_desk_id_checks_everything_again(desk: DeskFolder) -> None:
    add_memories(desk, "alpha")
    first = validate_all(desk, NOW)
    set_config(desk, desk_id="desk-someone-else")
    report = validate_all(desk, NOW)
    assert report.computed == first.checked and report.reused == 0
    assert [f.rule for f in report.findings] == ["config"]


def bad_corpus(desk: DeskFolder) -> None:
    """Every kind of broken desk file, committed without the hooks or left in the work tree."""
    from desk.archive.store import append_event

    add_memories(desk, "alpha", "report-style")
    append_event(desk, "inbound", "hello")
    append_event(desk, "outbound", "hi there")
    archive = sh(desk.root, "ls-files", "--others", ".system/archive").stdout.split()[0]
    assert add_commit(desk.root, "archive", archive).returncode == 0
    files: dict[str, str | bytes] = {
        "memory/colour.md": memory_text("colour", extra="colour: red\n"),
        "memory/mismatch.md": memory_text("other"),
        "memory/nofront.md": "no frontmatter here\n",
        "memory/empty.md": memory_text("empty", body=" "),
        "memory/Report-style.md": memory_text("report-style", body="Other body."),
        "memory/notes.txt": "x\n",
        "memory/old.md": memory_text("old", triggers="", extra="expires: 2020-01-01T00:00:00Z\n"),
        "memory/keys.md": memory_text("keys", body="The maps key is AI" + "zaSy0123456789abcdefABCDEFghijk_lmnop."),
        "memory/big.md": memory_text("big", body="x" * (1 << 20)),
        "journal/2026-11-30.md": "token = \"Zx8q2LmP0vR7tYw4nKs\"\n",
        "journal/blob.md": b"line\n\x00\x01",
        "journal/latin.md": "ok\ncaf\xe9\n".encode("latin-1"),
        "journal/huge.md": "x" * (1 << 20) + "\n",
        "NOW.md": f"# NOW\n\nuse {GH_TOKEN} for the API\n",
        "notes/anything.bin": b"\x00\x01",
    }
    for rel, data in files.items():
        write(desk.root, rel, data)
    os.symlink("../AGENTS.md", desk.root / "journal" / "link.md")
    lines = (desk.root / archive).read_bytes().splitlines(keepends=True)
    (desk.root / archive).write_bytes(lines[0].replace(b"hello", b"HELLO") + lines[1])
    half = ["memory/colour.md", "memory/mismatch.md", "memory/nofront.md", "journal/blob.md",
            "journal/link.md", "NOW.md"]
    sh(desk.root, "add", "--", *half)
    assert commit(desk.root, "bypass", "--no-verify").returncode == 0
    (desk.root / "memory/alpha.md").unlink()  # deleted in the work tree, not committed
    set_config(desk, colour="red")  # unknown key in the work tree's desk.json


def test_validate_all_finds_the_same_with_and_without_the_cache(desk: DeskFolder) -> None:
    bad_corpus(desk)
    plain = validate_all(desk, NOW, cached=False)
    rules = {f.rule for f in plain.findings}
    assert {"frontmatter-field", "name-mismatch", "frontmatter-missing", "body-empty", "memory-name",
            "memory-name-case", "memory-path", "memory-expired", "memory-no-triggers", "secret",
            "file-size", "binary", "encoding", "symlink", "archive-append-only", "config",
            "index-stale"} <= rules, rules
    runs = [validate_all(desk, NOW)]  # cold: fills the cache
    runs.append(validate_all(desk, NOW))  # warm: the whole desk's result
    forget_states(desk)
    runs.append(validate_all(desk, NOW))  # warm, file by file
    for run in runs:
        assert key(run.findings) == key(plain.findings)
        assert run.checked == plain.checked
    assert runs[0].computed > 0 and runs[1].computed == runs[2].computed == 0


def test_staged_verdicts_are_cached_too(desk: DeskFolder) -> None:
    write(desk.root, "memory/iota.md", memory_text("iota"))
    reindex_text(desk.root)
    sh(desk.root, "add", "memory/iota.md", "MEMORY.md")
    first, _ = validate_staged(desk)
    assert first.ok and first.computed == 2 and first.reused == 0
    again, _ = validate_staged(desk)
    assert again.ok and again.computed == 0 and again.reused == 2
    assert commit(desk.root, "iota").returncode == 0
    report = validate_all(desk, NOW)  # the hook left its verdicts for the whole-desk check
    assert report.ok and report.computed < report.checked


def test_the_hook_leaves_its_verdicts_in_the_wal_and_they_are_read_back(desk: DeskFolder) -> None:
    """The hook process ends with os._exit and leaves the cache's connection open (no checkpoint
    and its fsyncs on every commit): what it wrote stays in the WAL, and the next connection
    reads it from there."""
    validate_all(desk, NOW)  # every committed file's verdict cached, the WAL checkpointed on close
    wal = desk.cache_dir / (CACHE_FILE + "-wal")
    assert not wal.exists()
    write(desk.root, "memory/kappa.md", memory_text("kappa"))
    reindex_text(desk.root)
    assert add_commit(desk.root, "kappa", "memory/kappa.md", "MEMORY.md").returncode == 0
    assert wal.exists() and wal.stat().st_size > 0  # the hook's rows, not checkpointed
    report = validate_all(desk, NOW)
    assert report.ok and report.computed == 0 and report.reused == report.checked


def test_what_a_commit_broke_is_cached_by_commit(desk: DeskFolder) -> None:
    write(desk.root, "NOW.md", f"# NOW\n\nuse {GH_TOKEN}\n")
    sh(desk.root, "add", "NOW.md")
    assert commit(desk.root, "bypass", "--no-verify").returncode == 0
    found = bypassed_commits(desk, 10)
    assert [f.rule for _, _, f in found] == ["secret"] and found[0][1] == "bypass"
    with cache_db(desk) as db:
        poison = json.dumps([["NOW.md", 9, "poisoned", "from the cache", "error", ""]])
        assert db.execute("UPDATE commits SET findings = ? WHERE sha = ?",
                          (poison, found[0][0])).rowcount == 1
    assert [f.rule for _, _, f in bypassed_commits(desk, 10)] == ["poisoned"]
    with cache_db(desk) as db:
        db.execute("DELETE FROM commits")
    allow(desk, fingerprint(GH_TOKEN))  # the allow-list as it stands now applies to history
    assert bypassed_commits(desk, 10) == []
    allow(desk)
    assert [f.rule for _, _, f in bypassed_commits(desk, 10)] == ["secret"]


def age_folders(root: Path, seconds: float = 60) -> None:
    """Set every folder's mtime `seconds` into the past (older than doctor's racy window)."""
    old = time.time() - seconds
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir() and ".git" not in p.parts)]:
        os.utime(folder, (old, old))


def test_doctor_lists_only_folders_that_changed(desk: DeskFolder) -> None:
    """A folder is listed again only when its mtime moved; a temporary file is then found."""
    from desk.guard.doctor import _temp_files

    age_folders(desk.root)
    assert _temp_files(desk) == []
    journal = desk.root / "journal"
    before = journal.stat()
    stray = journal / ".desk-tmp-abc"
    stray.write_bytes(b"half a write")
    # Put journal/'s mtime back: the kept look says it holds no temporary file, so doctor does not
    # list it again (nothing else could hide a file this way: creating one moves the mtime).
    os.utime(journal, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _temp_files(desk) == []
    os.utime(journal)  # what creating the file really did
    assert _temp_files(desk) == [stray]
    old = time.time() - 3600
    os.utime(stray, (old, old))
    report = diagnose(desk)
    assert [(p.check, p.path) for p in report.problems] == [("temp-file", "journal/.desk-tmp-abc")]


def test_the_keyed_state_reads_the_memories_their_cached_verdicts_name(desk: DeskFolder) -> None:
    """`validate --all` finds the memories that can hold a key or evidence by their verdicts (each
    records whether its file has a `key:` or `evidence:` line), not by searching every file: the
    flag is cached with the verdict, and a verdict whose flag is cleared by hand hides its file from
    the keyed-state rules, so no other search found it."""
    add_memories(desk, "plain")
    digest = "source: digest\nkey: storage.db\n"
    write(desk.root, "memory/store-a.md", memory_text("store-a", extra=digest))
    write(desk.root, "memory/store-b.md", memory_text("store-b", extra=digest))
    reindex_text(desk.root)
    sh(desk.root, "add", "-A")
    assert commit(desk.root, "two holders of one key", "--no-verify").returncode == 0  # tracked, unchanged
    report = validate_all(desk, NOW)
    assert {(f.path, f.rule) for f in report.findings} == {
        ("memory/store-a.md", "keyed-duplicate"), ("memory/store-b.md", "keyed-duplicate")}
    with cache_db(desk) as db:
        flags = dict(db.execute("SELECT path, keyed FROM files WHERE path LIKE 'memory/%.md'").fetchall())
    assert flags == {"memory/store-a.md": 1, "memory/store-b.md": 1, "memory/plain.md": 0}
    forget_states(desk)
    with cache_db(desk) as db:
        db.execute("UPDATE files SET keyed = 0 WHERE path = 'memory/store-b.md'")
    report = validate_all(desk, NOW)
    assert report.computed == 0 and report.findings == []  # store-a alone holds the key now
    forget_states(desk)
    with cache_db(desk) as db:
        db.execute("UPDATE files SET keyed = 1 WHERE path = 'memory/store-b.md'")
    assert len(validate_all(desk, NOW).findings) == 2


def test_a_cache_an_older_desk_made_is_made_anew(desk: DeskFolder) -> None:
    """A verdict cache written by an older desk (no code fingerprint recorded; here the format
    before verdicts recorded `keyed`) is emptied at the next open, not written into in vain."""
    add_memories(desk, "alpha")
    validate_all(desk, NOW)
    path = desk.cache_dir / CACHE_FILE
    with cache_db(desk) as db:
        db.execute("ALTER TABLE files DROP COLUMN keyed")
        db.execute("DROP TABLE desk_code")
    report = validate_all(desk, NOW)
    assert report.ok and report.computed >= 1  # nothing was reused from the old file
    with cache_db(desk) as db:
        assert db.execute("SELECT count(*) FROM files WHERE keyed = 0").fetchone()[0] >= 1
    assert path.exists()
