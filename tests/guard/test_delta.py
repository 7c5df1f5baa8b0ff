"""desk.gate.delta: `validate --all` continuing the last run finds exactly what the whole check finds.

Every run here is held to `validate_all(cached=False)` (every rule on every file, no cache): same
findings, same count of files checked. `Report.continued` says whether the run continued the base
the previous one left, so each test also shows which way it went.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from desk.gate import delta
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
    assert first.ok and not first.continued


def test_a_changed_body_is_the_only_file_checked(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/beta.md", memory_text("beta", body="A new body."))
    report = checked(desk)
    assert report.ok and report.continued and report.computed == 1
    write(desk.root, "memory/gamma.md", memory_text("gamma", body="Another body."))
    report = checked(desk)  # continues the same base: beta and gamma redone
    assert report.ok and report.continued and report.computed == 1 and report.reused == report.checked - 1


def test_findings_of_changed_files_come_and_go(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/beta.md", memory_text("beta", body=f"token {GH_TOKEN}"))
    report = checked(desk)
    assert report.continued and [f.rule for f in report.errors] == ["secret"]
    write(desk.root, "memory/beta.md", memory_text("beta"))
    report = checked(desk)
    assert report.continued and report.ok


def test_a_memory_that_stops_parsing_is_one_finding_not_also_a_stale_index(desk: DeskFolder) -> None:
    """Issue 32: the index line of a memory that no longer parses is no second finding (`desk
    reindex` could not fix it); the file's own finding says what to do."""
    setup(desk)
    write(desk.root, "memory/gamma.md", "---\nname: gamma\ntype: nonsense\n---\nbody\n")
    report = checked(desk)
    assert report.continued and {f.rule for f in report.findings} == {"frontmatter-field"}
    assert {f.path for f in report.findings} == {"memory/gamma.md"}


def test_new_and_deleted_memories_against_the_index(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/zeta.md", memory_text("zeta"))  # untracked, MEMORY.md not regenerated
    report = checked(desk)
    assert report.continued and {f.rule for f in report.errors} == {"index-stale"}
    reindex_text(desk.root)  # MEMORY.md changed: spliced from the base's rendered index
    report = checked(desk)
    assert report.ok and report.continued
    (desk.root / "memory/alpha.md").unlink()
    report = checked(desk)
    assert report.continued and {f.rule for f in report.errors} == {"index-stale"}
    reindex_text(desk.root)
    assert checked(desk).ok


def test_desks_own_commit_is_continued(desk: DeskFolder) -> None:
    """`desk remember` changes a memory and MEMORY.md in HEAD and the index: both are redone."""
    from desk.memory.operations import remember

    setup(desk)
    remember(desk, "kappa", type="fact", description="New one", triggers=["x"], body="Body.")
    report = checked(desk)
    assert report.ok and report.continued and report.computed == 2
    remember(desk, "kappa", type="fact", description="New words", triggers=["x"], body="Body.")
    remember(desk, "beta", type="fact", description="Beta anew", triggers=["x"], body="Beta body.")
    report = checked(desk)
    assert report.ok and report.continued
    (desk.root / "MEMORY.md").write_text((desk.root / "MEMORY.md").read_text() + "- a line by hand\n")
    report = checked(desk)
    assert report.continued and [f.rule for f in report.errors] == ["index-stale"]


def test_a_changed_description_is_spliced_where_it_sorts(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/delta.md", memory_text("delta", description="Changed words"))
    report = checked(desk)
    assert report.continued and report.findings[0].rule == "index-stale"
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
    assert report.ok and report.continued
    assert add_commit(desk.root, "beta", "memory/beta.md").returncode == 0
    assert checked(desk).ok


def test_names_that_differ_in_case_run_the_whole_check(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/Alpha.md", memory_text("Alpha"))
    report = checked(desk)
    assert not report.continued and "memory-name-case" in {f.rule for f in report.findings}


def test_keyed_memories_and_other_files_run_the_whole_check(desk: DeskFolder) -> None:
    setup(desk)
    write(desk.root, "memory/beta.md", memory_text("beta", extra="key: some-key\n"))
    assert not checked(desk).continued
    write(desk.root, "memory/beta.md", memory_text("beta"))
    checked(desk)
    write(desk.root, "SOUL.md", (desk.root / "SOUL.md").read_text() + f"\n{GH_TOKEN}\n")
    report = checked(desk)
    assert not report.continued and "secret" in {f.rule for f in report.errors}


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
    assert not report.ok and report.continued
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert checked(desk).ok
    path.write_text(text.replace("The fact", "The fbct"))  # a body edit, same size, same mtime
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    report = checked(desk)
    assert report.ok and report.continued and report.computed == 1


def test_the_clock_still_applies_to_the_base_findings(desk: DeskFolder) -> None:
    setup(desk)
    expires = (NOW + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")  # every check passes its own `now`
    write(desk.root, "memory/omega.md", memory_text("omega", extra=f"expires: {expires}\n"))
    reindex_text(desk.root)
    assert checked(desk).ok
    write(desk.root, "memory/beta.md", memory_text("beta", body="Later."))
    later = checked(desk, NOW + dt.timedelta(days=3))
    assert later.continued and "memory-expired" in {f.rule for f in later.findings}


def test_a_damaged_base_is_a_whole_check(desk: DeskFolder) -> None:
    import sqlite3

    setup(desk)
    with sqlite3.connect(desk.cache_dir / "verdicts.sqlite", isolation_level=None) as db:
        db.execute("UPDATE bases SET rest = '{broken'")
    write(desk.root, "memory/beta.md", memory_text("beta", body="New."))
    assert not checked(desk).continued


records = st.lists(st.tuples(st.text("ab\t/H? ", min_size=1, max_size=6), st.sampled_from("HC?R"),
                             st.sampled_from(["1" * 4, "2" * 4])), max_size=12)


def listing(entries: list[tuple[str, str, str]]) -> bytes:
    """As git lists: untracked files first, then the index's paths in order (each record once)."""
    out = b""
    for path, tag, blob in sorted(set(entries), key=lambda e: (e[1] != "?", e)):
        out += (f"? {path}" if tag == "?" else f"{tag} 100644 {blob} 0\t{path}").encode() + b"\0"
    return b"\0" + out


@settings(max_examples=500, deadline=None)
@given(records, records)
def test_differing_paths_names_every_path_whose_records_changed(old: list[tuple[str, str, str]],
                                                                new: list[tuple[str, str, str]]) -> None:
    """Paths holding tabs, `H ` and `? ` included: a record's bytes never hide another's change."""
    def by_path(entries: list[tuple[str, str, str]]) -> dict[str, set[tuple[str, str]]]:
        found: dict[str, set[tuple[str, str]]] = {}
        for path, tag, blob in entries:
            found.setdefault(path, set()).add((tag, "" if tag == "?" else blob))  # `?` has no blob
        return found

    a, b = by_path(old), by_path(new)
    changed = {p for p in a.keys() | b.keys() if a.get(p) != b.get(p)}
    found = delta.differing_paths(listing(old), listing(new))
    assert found is not None and changed <= found


def test_differing_paths_of_a_large_listing_is_small() -> None:
    entries = [(f"memory/m{i:05d}.md", "H", "1111") for i in range(5000)]
    edited = [*entries[:2500], (entries[2500][0], "C", "1111"), *entries[2500:]]
    assert delta.differing_paths(listing(entries), listing(edited)) == {"memory/m02500.md"}
    assert delta.differing_paths(listing(entries), listing(entries[::2])) is None  # too many


def test_case_clash_reads_the_listing(tmp_path: Path) -> None:
    from desk.storage.git import WorkTreeListing

    found = WorkTreeListing(b"H 100644 1111 0\tmemory/Alpha.md\0? memory/new.md\0")
    assert delta.case_clash(found, ["memory/alpha.md"])
    assert not delta.case_clash(found, ["memory/new.md", "memory/beta.md"])
    assert delta.case_clash(found, ["memory/NEW.md"])
    assert delta.case_clash(found, ["memory/é.md"])  # not ASCII: the whole check decides
