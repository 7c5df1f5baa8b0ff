"""A conflict review a person can read (issue 29.2), on cases a real two-clone `desk sync` opened
through a bare remote: `desk conflicts` names candidates by their body's first line, `conflicts
show` gives the diffs, where each came from and a command to paste, `desk resolve` on a terminal
(a real pseudo-terminal) fills itself in and asks why; without one the flags stay required."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from collections.abc import Callable

import pytest
from click.testing import CliRunner

import desk.api as api
from desk.cli.main import cli
from desk.errors import ConflictError
from tests.sync.conftest import Clones, git
from tests.sync.test_sync import NOW, _changed_on_both_sides, _delete_here_change_there, remember


def cli_run(d: api.Desk, *args: str, input: str | None = None) -> tuple[int, str, str]:
    """The CLI in-process, with no terminal (CliRunner's stdin is not one)."""
    result = CliRunner().invoke(cli, ["--desk", str(d.root), *args], input=input)
    return result.exit_code, result.stdout, result.stderr


def on_a_terminal(d: api.Desk, args: list[str], answer: str,
                  meanwhile: Callable[[], None] | None = None) -> tuple[int, str]:
    """`desk ARGS` on a real pseudo-terminal: wait for the question, run `meanwhile`, type `answer`."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: desk on the terminal, never back into pytest
        try:
            os.execv(sys.executable, [sys.executable, "-m", "desk", "--desk", str(d.root), *args])
        finally:
            os._exit(127)
    out, asked = b"", False
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
        if not asked and b"Why" in out:
            asked = True
            if meanwhile is not None:
                meanwhile()
            os.write(fd, answer.encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace").replace("\r\n", "\n")


def opened(b: api.Desk) -> dict:
    """The one case b's sync opened, as `desk conflicts show --json` gives it."""
    result = b.sync(now=NOW).value
    (case_id,) = result.cases
    return b.conflicts_show(case_id).to_json()["case"]


def by_label(case: dict, wanted: str) -> dict:
    return next(c for c in case["candidates"] if c["label"] == wanted)


# -- the defects of issue 29 ------------------------------------------------------------------


def test_show_names_the_file_of_a_case_sync_opened_once(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    code, out, _ = cli_run(b, "conflicts", "show", case["id"])
    assert code == 0
    assert "active memory: memory/foo.md\n" in out and "memory/memory" not in out and ".md.md" not in out
    assert case["active_path"] == "memory/foo.md"


def test_validate_all_is_quiet_right_after_sync_opens_a_case_and_warns_once_the_file_moves(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    report = b.validate("all").to_json()
    assert "conflicts-stale-case" not in json.dumps(report)
    remember(b, "foo", "Edited by hand after the merge.")  # the file no longer holds the kept version
    moved = json.dumps(b.validate("all").to_json())
    assert "conflicts-stale-case" in moved and case["id"] in moved
    with pytest.raises(ConflictError):  # and resolve agrees: stale
        b.resolve(case["id"], case["candidates"][1]["id"], expected_revision=1, event_id="review:x:r1",
                  actor="user", rationale="late")


def test_the_note_of_a_delete_edit_case_says_which_side_deleted(clones: Clones) -> None:
    _a, b = _delete_here_change_there(clones)
    case = opened(b)
    assert "two clones" not in case["note"]
    assert case["note"].startswith("memory/foo.md was deleted by the merged-in commits and changed by this clone")
    assert "the deletion is a candidate" in case["note"]


def test_the_note_of_a_both_sides_case_names_the_sides_of_the_merge(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    note = opened(b)["note"]
    assert "two clones" not in note
    assert "changed by both this clone and the merged-in commits (a merge)" in note


def test_the_note_of_a_rebase_says_rebase_not_two_clones(clones: Clones) -> None:
    """A person's `git pull --rebase`: desk's driver settles the file while git replays this
    clone's commit onto the upstream, and the post-rewrite hook opens the case."""
    _a, b = _changed_on_both_sides(clones)
    pull = subprocess.run(["git", "pull", "--rebase", "origin", "main"], cwd=b.root, capture_output=True, text=True)
    assert pull.returncode == 0, pull.stderr
    (case,) = [c for c in b.conflicts().to_json()["cases"] if c["domain"] == "memory:foo"]
    assert "two clones" not in case["note"] and "(a rebase)" in case["note"]
    assert "the upstream" in case["note"] and "this clone's commit being replayed" in case["note"]


def test_the_note_of_a_rebase_stopped_on_delete_edit_names_both_sides(clones: Clones) -> None:
    """git stops a rebase on modify/delete; `desk sync --continue` opens the case from the
    stopped rebase's sides: the upstream (HEAD) deleted, this clone's replayed commit changed."""
    a, b = _delete_here_change_there(clones)
    replayed = git(b.root, "rev-parse", "HEAD").strip()
    pull = subprocess.run(["git", "pull", "--rebase", "origin", "main"], cwd=b.root, capture_output=True, text=True)
    assert pull.returncode != 0 and b.git.merging.stopped() == "rebase"
    (case_id,) = b.sync(resume=True, now=NOW).value.cases
    case = b.conflicts_show(case_id).to_json()["case"]
    assert case["note"].startswith("memory/foo.md was deleted by the upstream and changed by this clone's "
                                   "commit being replayed (a rebase)")
    kept = by_label(case, "Changed here.")
    assert kept["source"]["changed_in"]["commit"] == replayed
    assert by_label(case, "(deleted)")["source"]["changed_in"]["commit"] == git(a.root, "rev-parse", "HEAD").strip()


# -- desk conflicts: labels --------------------------------------------------------------------


def test_list_names_each_candidate_by_the_first_line_of_its_body(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    code, out, _ = cli_run(b, "conflicts")
    assert code == 0
    lines = [line for line in out.splitlines() if "cand-" in line]
    assert len(lines) == 2
    assert any(line.endswith("A's version.  (the other side)") for line in lines), out
    assert any(line.endswith("B's version.  (in the file)") for line in lines), out
    assert "---" not in out and "name: foo" not in out
    listed = json.loads(cli_run(b, "conflicts", "--json")[1])["cases"][0]
    assert {c["label"] for c in listed["candidates"]} == {"A's version.", "B's version."}
    assert listed["resolve_args"] == {"expected_revision": 1, "event_id": f"review:{case['id']}:r1"}


def test_a_deleted_candidate_shows_as_deleted_never_none_or_blank(clones: Clones) -> None:
    _a, b = _delete_here_change_there(clones)
    case = opened(b)
    _, out, _ = cli_run(b, "conflicts")
    deleted = next(line for line in out.splitlines() if "challenger" in line)
    assert "(deleted)" in deleted and "None" not in out
    _, shown, _ = cli_run(b, "conflicts", "show", case["id"])
    assert f"challenger {by_label(case, '(deleted)')['id']}: (deleted)" in shown
    assert "(deleted): accepting it deletes the file" in shown and "None" not in shown


# -- desk conflicts show: diffs, sources, commands ----------------------------------------------


def test_show_gives_the_diffs_where_each_came_from_and_a_command_to_paste(clones: Clones) -> None:
    a, b = _changed_on_both_sides(clones)
    theirs, ours = git(a.root, "rev-parse", "HEAD").strip(), git(b.root, "rev-parse", "HEAD").strip()
    case = opened(b)
    code, out, _ = cli_run(b, "conflicts", "show", case["id"])
    assert code == 0
    kept, other = by_label(case, "B's version."), by_label(case, "A's version.")
    assert kept["diff"] == ""  # the file holds the kept version
    assert "-B's version.\n+A's version.\n" in other["diff"] and "-B's version.\n+A's version.\n" in case["diffs"][0]["diff"]
    assert "    -B's version.\n    +A's version.\n" in out
    assert f"commit {ours[:12]}" in out and f"commit {theirs[:12]}" in out  # the commit each side was at
    assert kept["source"]["changed_in"]["commit"] == ours and other["source"]["changed_in"]["commit"] == theirs
    for cand in (kept, other):
        assert f"  accept: desk resolve {case['id']} {cand['id']}\n" in out + "\n"
        assert cand["resolve"] == f"desk resolve {case['id']} {cand['id']}"
    assert "ACTOR" not in out and "WHY" not in out and "'" not in out.split("accept: ")[1].split("\n")[0]


def test_a_digest_case_shows_the_facts_clone_and_time(clones: Clones) -> None:
    a = clones[0]
    for text in ("Use Python 3.11.", "Use Python 3.12."):
        a.fact_add(text, kind="decision", importance=5, key="runtime.python", at="2026-09-01T10:00:00Z")
    (case_id,) = a.digest(as_of="2026-11-29T20:00:00Z").value.conflicts
    case = a.conflicts_show(case_id).to_json()["case"]
    events = [e for c in case["candidates"] for e in c["source"]["events"]]
    assert len(events) == 2 and all(e["at"].startswith("2026-09-01T10:00:00") for e in events)
    clone = (a.git_dir / "desk-clone-id").read_text().split()[0]  # the clone that stated both facts
    assert [e["clone"] for e in events] == [clone, clone]
    assert case["active_path"] is None and all(c["diff"] is None for c in case["candidates"])
    _, out, _ = cli_run(a, "conflicts", "show", case_id)
    assert out.count(f"from 1 fact on clone {clone}") == 2
    assert "  -Use Python 3.11.\n  +Use Python 3.12.\n" in out  # the diff between the two candidates


# -- desk resolve: on a terminal and without one ------------------------------------------------


def test_resolve_on_a_terminal_fills_the_case_in_asks_why_and_records_the_user(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    other = by_label(case, "A's version.")
    code, out = on_a_terminal(b, ["resolve", case["id"], other["id"]], "A moved first.")
    assert code == 0, out
    assert "accepting " + other["id"] + ": A's version." in out and "Why" in out
    message = git(b.root, "log", "-1", "--format=%B")
    assert "Desk-Actor: user" in message and f"Desk-Event: review:{case['id']}:r1" in message
    assert "Rationale: A moved first." in message
    assert message.startswith("resolve: memory/foo.md: replaced \"A's version.\"\n")  # the body's line, not its frontmatter
    assert (b.root / "memory/foo.md").read_text().endswith("A's version.\n")
    done = b.conflicts_show(case["id"]).to_json()["case"]
    assert done["status"] == "resolved" and done["resolution"]["actor"] == "user"


def test_resolve_on_a_terminal_accepts_a_deletion(clones: Clones) -> None:
    _a, b = _delete_here_change_there(clones)
    case = opened(b)
    code, out = on_a_terminal(b, ["resolve", case["id"], by_label(case, "(deleted)")["id"]], "Stale.")
    assert code == 0, out
    assert "memory/foo.md is deleted, as chosen" in out
    assert not (b.root / "memory/foo.md").exists() and "[foo]" not in (b.root / "MEMORY.md").read_text()
    assert git(b.root, "log", "-1", "--format=%s").strip() == "resolve: memory/foo.md: deleted"


def test_resolve_on_a_terminal_refuses_a_case_decided_while_it_asked(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    kept, other = by_label(case, "B's version."), by_label(case, "A's version.")

    def someone_else_decides() -> None:
        b.resolve(case["id"], kept["id"], expected_revision=1, event_id="review:elsewhere",
                  actor="grace@example.org", rationale="Keep it.")

    before = git(b.root, "rev-parse", "HEAD")
    code, out = on_a_terminal(b, ["resolve", case["id"], other["id"]], "Too late.", someone_else_decides)
    assert code == 4, out
    assert f"stale: case {case['id']} is resolved" in out
    assert git(b.root, "rev-list", "--count", f"{before.strip()}..HEAD").strip() == "1"  # only the other decision
    assert (b.root / "memory/foo.md").read_text().endswith("B's version.\n")


def test_resolve_on_a_terminal_names_the_candidates_when_one_is_wrong(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    code, out = on_a_terminal(b, ["resolve", case["id"], "cand-000000000000"], "never asked")
    assert code == 2 and "is not a candidate" in out and "Why" not in out
    assert all(c["id"] in out for c in case["candidates"])


def test_resolve_without_a_terminal_needs_the_flags_and_the_old_form_still_works(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    other = by_label(case, "A's version.")
    head = git(b.root, "rev-parse", "HEAD")
    code, _, err = cli_run(b, "resolve", case["id"], other["id"], input="a rationale\n")
    assert code == 2 and "--expected-revision, --event-id, --actor, --rationale" in err
    code, _, err = cli_run(b, "resolve", case["id"], other["id"], "--rationale", "why")
    assert code == 2 and "--expected-revision, --event-id, --actor" in err and "--rationale" not in err.split("needs")[1]
    assert git(b.root, "rev-parse", "HEAD") == head  # nothing written
    code, out, err = cli_run(b, "resolve", case["id"], other["id"], "--expected-revision", "1", "--event-id",
                             "review:scripted", "--actor", "ada@example.org", "--rationale", "Scripted.", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["status"] == "resolved" and data["path"] == "memory/foo.md" and data["deleted"] is False
    assert "Desk-Actor: ada@example.org" in git(b.root, "log", "-1", "--format=%B")


def test_resolve_without_a_terminal_still_checks_the_revision(clones: Clones) -> None:
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    code, _, err = cli_run(b, "resolve", case["id"], case["candidates"][1]["id"], "--expected-revision", "2",
                           "--event-id", "review:old", "--actor", "ada@example.org", "--rationale", "Old view.")
    assert code == 4 and "is at revision 1, not 2" in err


def test_show_survives_a_case_naming_a_commit_this_clone_lacks_and_hostile_text(clones: Clones) -> None:
    """A queue merged from elsewhere may name a commit this clone never fetched, and a body may
    hold direction controls and newlines: show still answers, on one line per candidate."""
    _a, b = _changed_on_both_sides(clones)
    case = opened(b)
    queue = json.loads((b.root / ".system/conflicts.json").read_text())
    (stored,) = [c for c in queue["cases"] if c["id"] == case["id"]]
    stored["candidates"][1]["commit"] = "0" * 40
    stored["candidates"][1]["content"] = "\n\n\u202eevil\u202c line\r\nsecond line\n"
    (b.root / ".system/conflicts.json").write_text(json.dumps(queue, indent=2) + "\n")
    code, out, err = cli_run(b, "conflicts", "show", case["id"])
    assert code == 0, err
    assert f"commit {'0' * 12}" in out and "\u202e" not in out and "<U+202E>evil<U+202C> line" in out
    _, listed, _ = cli_run(b, "conflicts")
    assert "<U+202E>evil<U+202C> line  (the other side)" in listed and "second line" not in listed
