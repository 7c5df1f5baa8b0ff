"""A person who uses git directly (issue 32): `git rebase -i`, `git pull --rebase`, `git pull`
through desk's installed drivers and hooks behave as git would, with cases only for real clashes."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

import pytest

import desk.api as api
from tests.sync.conftest import Clones, git

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def edit(d: api.Desk, path: str, old: str, new: str, message: str) -> None:
    """A person's hand edit, committed with plain `git commit` (through desk's hooks)."""
    file = d.root / path
    text = file.read_text()
    assert old in text, (old, text)
    file.write_text(text.replace(old, new, 1))
    git(d.root, "commit", "-qam", message)


def subjects(d: api.Desk) -> list[str]:
    return git(d.root, "log", "--format=%s").splitlines()


def cases(d: api.Desk) -> list[dict[str, object]]:
    return list(d.conflicts().to_json()["cases"])


def test_rebase_i_dropping_a_commit_replays_a_persons_own_edits_with_no_case(tmp_path: Path, identity: None) -> None:
    """The issue's scenario: a body edit and then a description edit committed by hand, and an
    earlier commit (desk's, adding a trigger) dropped with `git rebase -i`. git replays both edits
    cleanly; so does desk's driver (field by field, line by line): no case, no `sync: settle`
    commit. The driver used to keep the upstream's whole file and open a case for each."""
    d = api.init(tmp_path / "d")
    d.remember("report-style", "Use tables.\nKeep it short.\nCite sources.\n", type="convention",
               description="How reports look", triggers=["report"], now=NOW)
    d.set("report-style", add_triggers=["summary"], now=NOW)  # the commit to drop
    edit(d, "memory/report-style.md", "Keep it short.", "Keep it very short.", "body")
    edit(d, "memory/report-style.md", "description: How reports look", "description: How reports should look", "desc")
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i '/set: report-style/d'"}
    rebase = subprocess.run(["git", "rebase", "-i", "HEAD~3"], cwd=d.root, env=env, capture_output=True, text=True)
    assert rebase.returncode == 0, rebase.stderr
    text = (d.root / "memory/report-style.md").read_text()
    assert "How reports should look" in text and "Keep it very short." in text and "summary" not in text
    assert subjects(d)[:3] == ["desc", "body", "remember: report-style"]
    assert cases(d) == [] and d.validate("all").exit_code == 0
    assert git(d.root, "status", "--porcelain") == ""


def test_pull_rebase_keeps_this_clones_version_in_the_file(clones: Clones) -> None:
    """Under `git pull --rebase` git's sides are swapped: this clone's commit being replayed is
    THEIRS. desk keeps it in the file (as docs/sync.md says), and the upstream's is the candidate."""
    a, b = clones[0], clones[1]
    a.remember("foo", "Original.", type="fact", description="foo", triggers=["foo"], now=NOW)
    a.sync()
    git(b.root, "pull", "-q", "--rebase", "origin", "main")
    edit(a, "memory/foo.md", "Original.", "From a.", "a's edit")
    a.sync()
    edit(b, "memory/foo.md", "Original.", "From b.", "b's edit")
    pull = subprocess.run(["git", "pull", "--rebase", "origin", "main"], cwd=b.root, capture_output=True, text=True)
    assert pull.returncode == 0, pull.stderr
    assert "From b." in (b.root / "memory/foo.md").read_text()
    (case,) = [c for c in cases(b) if c["domain"] == "memory:foo"]
    roles = {c["role"]: c["content"] for c in case["candidates"]}  # type: ignore[union-attr]
    assert "From b." in roles["incumbent"] and "From a." in roles["challenger"]
    assert "keeps this clone's commit being replayed's version" in str(case["note"])
    assert "desk: a memory changed differently on both sides: conflict case" in pull.stderr


@pytest.mark.parametrize("how", ["--no-rebase", "--rebase"])
def test_different_fields_and_lines_from_two_clones_merge_without_a_case(clones: Clones, how: str) -> None:
    """A `git pull` (merge or rebase) of one memory changed in its description on one clone and its
    body on the other merges both, as git's own merge would: no case, no `sync: settle` commit."""
    a, b = clones[0], clones[1]
    a.remember("foo", "One.\nTwo.\nThree.\n", type="fact", description="foo", triggers=["foo"], now=NOW)
    a.sync()
    b.sync()
    edit(a, "memory/foo.md", "description: foo", "description: the foo", "a: description")
    a.sync()
    edit(b, "memory/foo.md", "Three.", "Three!", "b: body")
    git(b.root, "pull", "-q", how, "origin", "main")
    text = (b.root / "memory/foo.md").read_text()
    assert "description: the foo" in text and "Three!" in text
    assert cases(b) == [] and not any(s.startswith("sync: settle") for s in subjects(b))


def test_now_items_appended_on_two_clones_are_both_kept(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    a.now_append("write the report", section="doing")
    b.now_append("call the bank", section="doing")
    b.now_append("book the train", section="doing")
    a.sync()
    result = b.sync(now=NOW).value
    doing = b.now_show(section="doing").to_json()
    assert result.cases == []
    text = (b.root / "NOW.md").read_text()
    assert text.index("call the bank") < text.index("book the train") < text.index("write the report"), doing


def test_the_same_now_item_changed_two_ways_is_a_case_named_as_such(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    a.now_append("write the report", section="doing")
    a.sync()
    b.sync()
    edit(a, "NOW.md", "- write the report", "- write the report today", "a")
    edit(b, "NOW.md", "- write the report", "- write the report tomorrow", "b")
    a.sync()
    synced = b.sync(now=NOW)
    assert len(synced.value.cases) == 1
    assert "a NOW.md item changed differently on both sides" in synced.text()


def mistake(d: api.Desk, what: str, day: int) -> None:
    from desk.notes.mistakes import add_mistake

    add_mistake(d, what=what, context="c", cause="c", avoid="a", now=dt.datetime(2026, 11, day, tzinfo=dt.timezone.utc))


def test_mistakes_added_on_two_clones_are_all_kept_in_date_order(clones: Clones) -> None:
    """Both clones add M-0001: desk sync keeps both, by date, the merged-in one renumbered."""
    a, b = clones[0], clones[1]
    mistake(a, "pushed without the tests", 20)
    mistake(b, "answered in English", 10)
    mistake(b, "guessed a date", 25)
    a.sync()
    result = b.sync(now=NOW).value
    assert result.cases == []
    entries = [(m["id"], m["what"]) for m in b.mistake_list().to_json()["mistakes"]]
    assert entries == [("M-0001", "answered in English"), ("M-0003", "pushed without the tests"),
                       ("M-0002", "guessed a date")]


def test_a_plain_git_pull_keeps_both_clones_mistakes_in_date_order(clones: Clones) -> None:
    """MISTAKES.md has a driver of its own (`desk-mistakes`): a person's `git pull` merges it."""
    a, b = clones[0], clones[1]
    mistake(a, "pushed without the tests", 20)
    a.sync()
    mistake(b, "answered in English", 10)
    mistake(b, "guessed a date", 25)
    pull = subprocess.run(["git", "pull", "--no-rebase", "origin", "main"], cwd=b.root, capture_output=True, text=True)
    assert pull.returncode == 0, pull.stdout + pull.stderr
    assert [m["what"] for m in b.mistake_list().to_json()["mistakes"]] == [
        "answered in English", "pushed without the tests", "guessed a date"]
    assert git(b.root, "status", "--porcelain") == "" and api.stopped_notice(b) is None
    assert b"<<<<<<<" not in (b.root / "MISTAKES.md").read_bytes()


def test_one_mistake_changed_two_ways_stops_git_pull_with_gits_own_markers(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    mistake(a, "pushed without the tests", 20)
    a.sync()
    b.sync()
    edit(a, "MISTAKES.md", "pushed without the tests", "pushed without running the tests", "mistake: a")
    a.sync()
    mistake(b, "answered in English", 22)
    edit(b, "MISTAKES.md", "pushed without the tests", "pushed before the tests passed", "mistake: b")
    pull = subprocess.run(["git", "pull", "--no-rebase", "origin", "main"], cwd=b.root, capture_output=True, text=True)
    assert pull.returncode == 1 and "CONFLICT (content): Merge conflict in MISTAKES.md" in pull.stdout
    assert git(b.root, "diff", "--name-only", "--diff-filter=U") == "MISTAKES.md\n"
    text = (b.root / "MISTAKES.md").read_text()
    assert "<<<<<<< ours\n" in text and "=======\n" in text and ">>>>>>> theirs\n" in text
    assert "pushed before the tests passed" in text and "pushed without running the tests" in text
    assert "answered in English" in text


@pytest.mark.parametrize("how", ["--no-rebase", "--rebase"])
def test_a_git_pull_that_will_stop_on_delete_modify_says_what_to_run(clones: Clones, how: str) -> None:
    """git runs no hook after a merge that stops; a desk driver running in the same merge (here
    MEMORY.md's: both sides changed the index) names the files and `desk sync --continue`, once."""
    a, b = clones[0], clones[1]
    a.remember("old-note", "Step one.\n", type="fact", description="An old note", triggers=["old"], now=NOW)
    a.sync()
    b.sync()
    a.forget("old-note", reason="done")
    a.sync()
    b.set("old-note", description="An old note, one step more", now=NOW)
    pull = subprocess.run(["git", "pull", how, "origin", "main"], cwd=b.root, capture_output=True, text=True)
    assert pull.returncode == 1 and "CONFLICT (modify/delete)" in pull.stdout
    kind = "rebase" if how == "--rebase" else "merge"
    said = [line for line in pull.stderr.splitlines() if line.startswith("desk: ")]
    assert said == [f"desk: this {kind} stops on memory/old-note.md (deleted on one side, changed on the other: "
                    f"git asks no driver): run `desk sync --continue` to settle it (`git {kind} --abort` undoes it)"]
    assert b.sync(resume=True, now=NOW).value.status == f"{kind}-finished"
    assert "one step more" in (b.root / "memory/old-note.md").read_text()  # the changed version kept


def test_a_git_pull_that_merges_cleanly_says_nothing_from_desk(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    a.remember("foo", "A.", type="fact", description="foo", triggers=["foo"], now=NOW)
    a.sync()
    b.remember("bar", "B.", type="fact", description="bar", triggers=["bar"], now=NOW)
    pull = subprocess.run(["git", "pull", "--no-rebase", "origin", "main"], cwd=b.root, capture_output=True, text=True)
    assert pull.returncode == 0 and "this merge stops" not in pull.stderr, pull.stderr


def test_git_status_and_the_archive_as_docs_say(tmp_path: Path, identity: None) -> None:
    """A new archive file is never listed; a committed one that grew is ` M` until a checkpoint or a
    person's own `git commit -a` takes the appends (docs/working-desk.md: desk does not hide it)."""
    d = api.init(tmp_path / "d")
    d.archive_append("inbound", "hello", at="2026-11-29T10:00:00Z")
    assert git(d.root, "status", "--porcelain") == ""
    assert d.checkpoint().value.status == "committed"
    d.archive_append("inbound", "again", at="2026-11-29T10:01:00Z")
    d.archive_append("inbound", "a new day", at="2026-11-30T10:00:00Z")
    (grown,) = [p for p in git(d.root, "ls-files", ".system/archive").split() if "2026-11-29" in p]
    assert git(d.root, "status", "--porcelain") == f" M {grown}\n"
    git(d.root, "commit", "-qam", "my own commit")  # through desk's pre-commit hook
    assert git(d.root, "status", "--porcelain") == ""
    assert d.checkpoint().value.files == [grown.replace("2026-11-29", "2026-11-30")]
    assert git(d.root, "status", "--porcelain") == ""


def test_a_desk_sync_run_at_the_cli_is_recorded_as_the_user(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    a.remember("foo", "A.", type="fact", description="foo", triggers=["foo"], now=NOW)
    a.sync()
    b.remember("bar", "B.", type="fact", description="bar", triggers=["bar"], now=NOW)
    sync = subprocess.run(["desk", "--desk", str(b.root), "sync", "-q"], capture_output=True, text=True)
    assert sync.returncode == 0, sync.stderr
    assert subjects(b)[0] == "sync: merge origin/main"
    actors = git(b.root, "log", "-1", "--format=%(trailers:key=Desk-Actor,valueonly)").split()
    assert actors == ["user"]


# -- docs/sync.md, "If you use git directly": its transcripts, run in order ------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "sync.md"


def transcript() -> list[tuple[str, int, list[str]]]:
    """(command, exit code, output lines) of the section's console blocks: `$ ` lines are commands
    (`# exit N` after one: it fails with N), the lines after one are what it prints (`…`: anything)."""
    import re

    text = DOC.read_text("utf-8").split("## If you use git directly", 1)[1].split("\n## ", 1)[0]
    steps: list[tuple[str, int, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)\n```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                code = re.search(r"\s+# exit (\d+)$", line)
                steps.append((line[2:], int(code.group(1)) if code else 0, []))
            else:
                steps[-1][2].append(line)
    return steps


def test_the_git_directly_transcripts_run(tmp_path: Path, identity: None) -> None:
    import re
    import sys

    home = tmp_path
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(home / "remote.git")], check=True)
    d = api.init(home / "desk")
    git(d.root, "remote", "add", "origin", str(home / "remote.git"))
    d.remember("report-style", "Use tables.\nKeep it short.\n", type="convention", description="How reports look",
               triggers=["report"], now=NOW)
    d.remember("old-note", "Step one.\n", type="fact", description="An old note", triggers=["old"], now=NOW)
    d.sync()
    api.clone(str(home / "remote.git"), home / "other")
    env = {**os.environ, "HOME": str(home), "GIT_SEQUENCE_EDITOR": "sed -i -e /scratch/d",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("DESK_HOME", None)
    steps = transcript()
    assert len(steps) >= 20
    cwd = home
    for command, code, expected in steps:
        run = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True)
        if command.startswith("cd "):
            cwd = Path(os.path.expanduser(command[3:].strip().replace("~", str(home), 1)))
        out = (run.stdout + run.stderr).splitlines()
        assert run.returncode == code, (command, run.stdout, run.stderr)
        for line in expected:
            pattern = ".*".join(re.escape(part) for part in line.split("…"))
            assert any(re.fullmatch(pattern, got) for got in out), (command, line, out)
