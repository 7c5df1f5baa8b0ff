"""The merge drivers as pure functions: hostile and edge inputs, never conflict markers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from desk.digest.conflicts import render_queue
from desk.formats.memory_index import render_sorted
from desk.sync.drivers import driver_for, merge_file, read_pending


def index(*names: str) -> bytes:
    return render_sorted([f"- [{n}](memory/{n}.md) — {n} desc" for n in sorted(names)])


def test_index_merge_is_keyed_by_name_and_sorted() -> None:
    merged = merge_file("index", "MEMORY.md", index("a", "c"), index("a", "b", "c"), index("c", "d")).data
    assert merged == index("b", "c", "d")  # a deleted there, b added here, d added there


def test_index_merge_keeps_a_line_deleted_on_one_side_and_changed_on_the_other() -> None:
    base = index("a")
    changed = base.replace(b"a desc", b"a new desc")
    assert b"a new desc" in (merge_file("index", "MEMORY.md", base, index(), changed).data or b"")


def test_memory_clash_keeps_ours_and_records_both_versions() -> None:
    result = merge_file("memory", "memory/x.md", b"base\n", b"ours\n", b"theirs\n<<<<<<< not a marker\n")
    assert result.data == b"ours\n"
    (case,) = result.pending
    assert case["versions"] == {"ours": "ours\n", "theirs": "theirs\n<<<<<<< not a marker\n"}
    assert case["domain"] == "memory:x"


def test_now_merges_by_section() -> None:
    base = b"# Now\n\n## Doing\n\nx\n\n## Next\n\ny\n"
    ours = base.replace(b"x\n", b"x2\n")
    theirs = base.replace(b"y\n", b"y2\n")
    result = merge_file("now", "NOW.md", base, ours, theirs)
    assert result.data is not None and b"x2" in result.data and b"y2" in result.data and not result.pending
    clash = merge_file("now", "NOW.md", base, ours, base.replace(b"x\n", b"x3\n"))
    assert clash.data is not None and b"x2" in clash.data and clash.pending[0]["domain"] == "now:doing"


def test_conflict_queue_union_prefers_closed_then_later_revision() -> None:
    from desk.digest.conflicts import candidate_id, make_case

    def case(name: str, status: str = "open", revision: int = 1) -> dict[str, object]:
        domain = f"key:{name}"
        made = make_case("desk-x", domain, name, [{
            "id": candidate_id(domain, "v"), "role": "challenger", "content": "V.", "kind": "decision",
            "importance": 5, "evidence": ["f"], "latest": "2026-09-01T00:00:00Z"}], ["f"], None,
            revision=revision, opened="2026-11-29T00:00:00Z")
        if status == "resolved":  # as desk resolve closes a case
            made.update(status="resolved", closed="2026-11-30T00:00:00Z", resolution={
                "event": "e", "candidate": candidate_id(domain, "v"), "outcome": "replaced", "actor": "ada",
                "rationale": "r", "at": "2026-11-30T00:00:00Z", "before": None, "after": None})
        return made

    ours = render_queue([case("a"), case("b", "resolved")])
    theirs = render_queue([case("a", "resolved"), case("b"), case("c")])
    merged = json.loads(merge_file("conflicts", ".system/conflicts.json", None, ours, theirs).data or b"")
    assert {c["key"]: c["status"] for c in merged["cases"]} == {"a": "resolved", "b": "resolved", "c": "open"}
    broken = merge_file("conflicts", ".system/conflicts.json", None, b"{not json", theirs)
    assert not broken.ok


def test_append_merge_takes_the_longer_only_for_a_pure_append() -> None:
    assert merge_file("append", "f.jsonl", b"1\n", b"1\n2\n", b"1\n").data == b"1\n2\n"
    assert not merge_file("append", "f.jsonl", b"1\n", b"1\n2\n", b"1\n3\n").ok


def test_derived_views_are_kept_and_marked_for_regeneration() -> None:
    result = merge_file("derived", "conversations/2026-11-29/s1.md", b"b", b"o", b"t")
    assert result.data == b"o" and result.pending == [{"type": "regenerate", "path": "conversations/2026-11-29/s1.md"}]


def test_driver_for_matches_the_gitattributes_table() -> None:
    assert driver_for("MEMORY.md") == "index"
    assert driver_for("memory/x.md") == "memory"
    assert driver_for("memory/sub/x.md") is None
    assert driver_for("conversations/2026-11-29/s.md") == "derived"
    assert driver_for(".system/archive/2026-11-29.abcdefabcdef.jsonl") == "append"
    assert driver_for("SOUL.md") is None and driver_for("notes/MEMORY.md") is None


def test_the_entry_point_writes_ours_and_records_pending(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    files = {}
    for side, data in (("base", b"base\n"), ("ours", b"ours\n"), ("theirs", b"theirs\n")):
        files[side] = tmp_path / side
        files[side].write_bytes(data)
    proc = subprocess.run([sys.executable, "-P", "-m", "desk.cli.merge", "memory", str(files["base"]), str(files["ours"]),
                           str(files["theirs"]), "memory/x.md"], cwd=tmp_path / "r", capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert files["ours"].read_bytes() == b"ours\n"
    assert read_pending(tmp_path / "r" / ".git")[0]["path"] == "memory/x.md"
    bad = subprocess.run([sys.executable, "-m", "desk.cli.merge", "nosuch", "a", "b", "c", "d"],
                         cwd=tmp_path / "r", capture_output=True, text=True)
    assert bad.returncode == 2


def _pref(value: str, updated: str, revision: int) -> bytes:
    return (f"---\nkey: editor.indent\nvalue: {value}\nrevision: {revision}\nsource: user\n"
            f"created: 2026-08-01T00:00:00Z\nupdated: {updated}\nuser_scope: owner\n"
            "desk_id: desk-0123456789abcdef0123456789abcdef\nformat: 1\n---\n").encode()


def test_pref_merge_keeps_the_later_update_whichever_side_is_ours() -> None:
    path = "prefs/editor.indent.md"
    base = _pref("tabs", "2026-08-01T00:00:00Z", 1)
    later, earlier = _pref("spaces", "2026-08-03T00:00:00Z", 2), _pref("two", "2026-08-02T00:00:00Z", 2)
    assert merge_file("pref", path, base, later, earlier).data == later
    assert merge_file("pref", path, base, earlier, later).data == later
    same_time = _pref("four", "2026-08-03T00:00:00Z", 3)  # same `updated`: the higher revision
    assert merge_file("pref", path, base, later, same_time).data == same_time
    assert merge_file("pref", path, base, same_time, later).data == same_time
    twin = _pref("zz", "2026-08-03T00:00:00Z", 2)  # and then the bytes: still symmetric
    assert merge_file("pref", path, base, later, twin).data == merge_file("pref", path, base, twin, later).data
    assert merge_file("pref", path, base, None, later).data == later  # a deletion loses to a change
    assert merge_file("pref", path, base, later, b"not a preference\n").ok is False
    assert driver_for("users/u-0123456789abcdef/prefs/editor.indent.md") == "pref"
    assert driver_for("projects/billing/memory/x.md") == "memory"
    assert driver_for("projects/billing/MEMORY.md") == "index"
    assert driver_for("users/u-0123456789abcdef/PREFERENCES.md") == "generated"


def test_preferences_md_merges_by_key_like_the_index() -> None:
    from desk.formats.scope_files import INDEX_HEADER

    def projection(*lines: str) -> bytes:
        body = list(lines) or ["_No active preferences._"]
        return ("\n".join(["# Preferences", "", INDEX_HEADER.rstrip("\n"), "", *body]) + "\n").encode()

    base = projection("- `a.x`: 1", "- `c.z`: 3")
    ours = projection("- `a.x`: 1", "- `b.y`: 2", "- `c.z`: 3")  # b.y added here
    theirs = projection("- `c.z`: 4")  # a.x deleted, c.z changed there
    merged = merge_file("generated", "PREFERENCES.md", base, ours, theirs).data
    assert merged == projection("- `b.y`: 2", "- `c.z`: 4")
    assert merge_file("generated", "PREFERENCES.md", base, projection(), projection()).data == projection()
    changed = projection("- `a.x`: 9", "- `c.z`: 3")  # changed there, deleted here: kept
    assert b"`a.x`: 9" in (merge_file("generated", "PREFERENCES.md", base, projection("- `c.z`: 3"), changed).data or b"")
