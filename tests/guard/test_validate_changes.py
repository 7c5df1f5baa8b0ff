"""`validate --all` after a few files changed finds exactly what the whole check finds.

Every run here is held to `validate_all(cached=False)` (every rule on every file, no cache): same
findings, same count of files checked.
"""

from __future__ import annotations

import datetime as dt
import os

from desk.gate.checks import Report
from desk.gate.whole import validate_all
from desk.layout import DeskFolder
from tests.guard_helpers import add_commit, memory_text, reindex_text, sh, write

NOW = dt.datetime(2026, 11, 30, 12, tzinfo=dt.timezone.utc)
GH_TOKEN = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC1234"
NAMES = ("alpha", "beta", "gamma", "delta", "omega")


def checked(desk: DeskFolder, now: dt.datetime = NOW) -> Report:
    """`validate_all` through the cache, asserted equal to the whole check without it."""
    report = validate_all(desk, now)
    whole = validate_all(desk, now, cached=False)
    assert [tuple(f) for f in report.findings] == [tuple(f) for f in whole.findings]
    assert report.checked == whole.checked
    return report


def setup(desk: DeskFolder) -> None:
    for name in NAMES:
        write(desk.root, f"memory/{name}.md", memory_text(name))
    reindex_text(desk.root)
    assert add_commit(desk.root, "memories", "memory", "MEMORY.md").returncode == 0
    first = checked(desk)
    assert first.ok


def test_a_changed_body_is_the_only_file_checked(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/beta.md", memory_text("beta", body="A new body."))
    report = checked(desk)
    assert report.ok and report.computed == 1
    write(desk.root, "memory/gamma.md", memory_text("gamma", body="Another body."))
    report = checked(desk)
    assert report.ok and report.computed == 1 and report.reused == report.checked - 1


def test_findings_of_changed_files_come_and_go(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/beta.md", memory_text("beta", body=f"token {GH_TOKEN}"))
    report = checked(desk)
    assert [f.rule for f in report.errors] == ["secret"]
    write(desk.root, "memory/beta.md", memory_text("beta"))
    report = checked(desk)
    assert report.ok


def test_a_memory_that_stops_parsing_is_one_finding_not_also_a_stale_index(desk: DeskFolder) -> None:
    """Issue 32: the index line of a memory that no longer parses is no second finding (`desk
    reindex` could not fix it); the file's own finding says what to do."""
    setup(desk)
    write(desk.root, "memory/gamma.md", "---\nname: gamma\ntype: nonsense\n---\nbody\n")
    report = checked(desk)
    assert {f.rule for f in report.findings} == {"frontmatter-field"}
    assert {f.path for f in report.findings} == {"memory/gamma.md"}


def test_new_and_deleted_memories_against_the_index(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/zeta.md", memory_text("zeta"))  # untracked, MEMORY.md not regenerated
    report = checked(desk)
    assert {f.rule for f in report.errors} == {"index-stale"}
    reindex_text(desk.root)
    report = checked(desk)
    assert report.ok
    (desk.root / "memory/alpha.md").unlink()
    report = checked(desk)
    assert {f.rule for f in report.errors} == {"index-stale"}
    reindex_text(desk.root)
    assert checked(desk).ok


def test_desks_own_commit(desk: DeskFolder) -> None:
    """`desk remember` changes a memory and MEMORY.md in HEAD and the index: both are redone."""
    from desk.memory.operations import remember

    setup(desk)
    remember(desk, "kappa", type="fact", description="New one", triggers=["x"], body="Body.")
    report = checked(desk)
    assert report.ok and report.computed == 2
    remember(desk, "kappa", type="fact", description="New words", triggers=["x"], body="Body.")
    remember(desk, "beta", type="fact", description="Beta anew", triggers=["x"], body="Beta body.")
    report = checked(desk)
    assert report.ok
    (desk.root / "MEMORY.md").write_text((desk.root / "MEMORY.md").read_text() + "- a line by hand\n")
    report = checked(desk)
    assert [f.rule for f in report.errors] == ["index-stale"]


def test_a_changed_description_is_spliced_where_it_sorts(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/delta.md", memory_text("delta", description="Changed words"))
    report = checked(desk)
    assert report.findings[0].rule == "index-stale"
    reindex_text(desk.root)
    write(desk.root, "memory/aardvark.md", memory_text("aardvark"))
    write(desk.root, "memory/zzz.md", memory_text("zzz"))
    checked(desk)
    reindex_text(desk.root)
    assert checked(desk).ok


def test_staged_and_committed_changes(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/beta.md", memory_text("beta", body="Staged."))
    sh(desk.root, "add", "memory/beta.md")
    report = checked(desk)
    assert report.ok
    assert add_commit(desk.root, "beta", "memory/beta.md").returncode == 0
    assert checked(desk).ok


def test_names_that_differ_in_case(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/Alpha.md", memory_text("Alpha"))
    report = checked(desk)
    assert "memory-name-case" in {f.rule for f in report.findings}


def test_keyed_memories_and_other_files(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/beta.md", memory_text("beta", extra="key: some-key\n"))
    checked(desk)
    write(desk.root, "memory/beta.md", memory_text("beta"))
    checked(desk)
    write(desk.root, "SOUL.md", (desk.root / "SOUL.md").read_text() + f"\n{GH_TOKEN}\n")
    report = checked(desk)
    assert "secret" in {f.rule for f in report.errors}


def test_an_edit_that_keeps_size_and_mtime_is_seen(desk: DeskFolder) -> None:
    """git's racy rule: the listing must not vouch for a file edited within its stat data."""
    setup(desk)
    path = desk.root / "memory/beta.md"
    before = os.stat(path)
    text = path.read_text()
    assert checked(desk).ok
    path.write_text(text.replace("type: fact", "type: fcat"))  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    report = checked(desk)
    assert not report.ok
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert checked(desk).ok
    path.write_text(text.replace("The fact", "The fbct"))  # a body edit, same size, same mtime
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    report = checked(desk)
    assert report.ok and report.computed == 1


def test_the_clock_still_applies_to_the_base_findings(desk: DeskFolder) -> None:
    setup(desk)
    expires = (NOW + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")  # every check passes its own `now`
    write(desk.root, "memory/omega.md", memory_text("omega", extra=f"expires: {expires}\n"))
    reindex_text(desk.root)
    assert checked(desk).ok
    write(desk.root, "memory/beta.md", memory_text("beta", body="Later."))
    later = checked(desk, NOW + dt.timedelta(days=3))
    assert "memory-expired" in {f.rule for f in later.findings}
