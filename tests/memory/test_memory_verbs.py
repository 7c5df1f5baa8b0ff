"""remember keeps what it is not told, `desk set`, `desk rename`, `desk diff`, names as paths,
and reads of bad or broken memories (issue 9.4, 9.6, 9.8, 9.9, 9.13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from tests.conftest import DeskRunner, git, snapshot
from tests.guard_helpers import sh


def _remember(run: DeskRunner, name: str = "report-zh", *extra: str) -> None:
    result = run("remember", name, "--type", "preference", "-d", "Reports in Chinese", "-t", "report",
                 "-t", "报告", "--importance", "4", "--expires", "2099-01-01T00:00:00Z", *extra,
                 "Write reports in Chinese.")
    assert result.exit_code == 0, result.output


def _meta(run: DeskRunner, name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(run("show", name, "--json").output)
    return data


def test_an_update_keeps_the_options_it_was_not_given(run: DeskRunner) -> None:
    _remember(run)
    result = run("remember", "report-zh", "--type", "preference", "-d", "Reports in Chinese, short",
                 "Write reports in Chinese, under 500 characters.")
    assert result.exit_code == 0 and "updated" in result.output
    meta = _meta(run, "report-zh")
    assert meta["triggers"] == ["report", "报告"] and meta["importance"] == 4
    assert meta["expires"] == "2099-01-01T00:00:00Z" and meta["description"] == "Reports in Chinese, short"
    # type and description may be left out on an update too
    assert run("remember", "report-zh", "Third body.").exit_code == 0
    assert _meta(run, "report-zh")["type"] == "preference"


def test_clearing_a_field_takes_an_explicit_flag_and_warns_about_triggers(run: DeskRunner) -> None:
    _remember(run)
    result = run("remember", "report-zh", "--no-triggers", "--no-expires", "--json", "New body.")
    data = json.loads(result.stdout)
    assert data["status"] == "updated" and "never injected" in data["warnings"][0]
    assert "warning: report-zh has no triggers" in result.stderr
    meta = _meta(run, "report-zh")
    assert not meta.get("triggers") and "expires" not in meta and meta["importance"] == 4


def test_a_new_memory_without_triggers_warns_on_stderr_and_in_json(run: DeskRunner) -> None:
    result = run("remember", "tea", "--type", "preference", "-d", "Drink", "--json", "Green tea.")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["warnings"] and "has no triggers" in result.stderr
    quiet = run("remember", "coffee", "--type", "preference", "-d", "Drink", "-t", "coffee", "No coffee.")
    assert "warning" not in quiet.stderr


def test_setting_and_clearing_a_field_at_once_is_a_usage_error(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run)
    before = snapshot(desk.root)
    for verb in (["remember", "report-zh"], ["set", "report-zh"]):
        result = run(*verb, "--expires", "2099-02-01T00:00:00Z", "--no-expires",
                     *(["Body."] if verb[0] == "remember" else []))
        assert result.exit_code == 2 and "not both" in result.stderr, verb
    assert snapshot(desk.root) == before


def test_a_new_memory_needs_type_and_description(desk: DeskFolder, run: DeskRunner) -> None:
    before = snapshot(desk.root)
    result = run("remember", "tea", "Green tea.")
    assert result.exit_code == 2 and "needs --type and --description" in result.output
    assert "hint:" in result.output and snapshot(desk.root) == before


def test_set_changes_fields_without_restating_the_body(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run)
    body = desk.path("memory/report-zh.md").read_text().split("---\n", 2)[2]
    result = run("set", "report-zh", "--add-trigger", "汇报", "--remove-trigger", "report",
                 "--importance", "5", "--no-expires", "-d", "Chinese reports")
    assert result.exit_code == 0 and "updated" in result.output
    meta = _meta(run, "report-zh")
    assert meta["triggers"] == ["报告", "汇报"] and meta["importance"] == 5 and "expires" not in meta
    assert meta["description"] == "Chinese reports"
    assert desk.path("memory/report-zh.md").read_text().split("---\n", 2)[2] == body
    assert "Chinese reports" in desk.path("MEMORY.md").read_text()
    assert git(desk.root, "log", "-1", "--format=%s%n%b").startswith("set: report-zh")
    assert git(desk.root, "status", "--porcelain") == ""


def test_set_of_nothing_new_commits_nothing_and_bad_input_changes_nothing(desk: DeskFolder,
                                                                          run: DeskRunner) -> None:
    _remember(run)
    head = git(desk.root, "rev-parse", "HEAD")
    assert "unchanged" in run("set", "report-zh", "--importance", "4").output
    bad = run("set", "report-zh", "--remove-trigger", "nope")
    assert bad.exit_code == 2 and "hint: its triggers are: report, 报告" in bad.output
    past = run("set", "report-zh", "--expires", "2001-01-01T00:00:00Z")
    assert past.exit_code == 3 and "already past" in past.output
    missing = run("set", "report-zz", "--importance", "2")
    assert missing.exit_code == 1 and "did you mean `report-zh`?" in missing.output
    assert git(desk.root, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("given", ["x.md", "memory/x.md", "./memory/x.md"])
def test_a_file_name_or_path_is_accepted_as_a_memory_name(desk: DeskFolder, run: DeskRunner,
                                                          given: str) -> None:
    result = run("remember", given, "--type", "fact", "-d", "X", "-t", "x", "The x fact.")
    assert result.exit_code == 0, result.output
    assert desk.path("memory/x.md").is_file() and not desk.path("memory/x.md.md").exists()
    assert run("show", given).exit_code == 0
    assert run("show", str(desk.path("memory/x.md"))).exit_code == 0


def test_a_bad_name_in_a_read_is_a_usage_error(run: DeskRunner) -> None:
    for args in (["show", "Bad_Name"], ["history", "Bad_Name"], ["diff", "Bad_Name"]):
        result = run(*args)
        assert result.exit_code == 2 and "hint:" in result.output, args


def test_show_prints_an_invalid_file_with_its_findings(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run)
    path = desk.path("memory/report-zh.md")
    path.write_text(path.read_text().replace("type: preference", "type: opinion"))
    result = run("show", "report-zh")
    assert result.exit_code == 0 and "type: opinion" in result.stdout
    assert "memory/report-zh.md:4: frontmatter-field: type" in result.stderr
    data = json.loads(run("show", "report-zh", "--json").stdout)
    assert data["valid"] is False and data["findings"][0]["line"] == 4 and "type: opinion" in data["text"]


def test_history_of_a_memory_that_never_existed_is_an_error(run: DeskRunner) -> None:
    _remember(run)
    result = run("history", "report-zj")
    assert result.exit_code == 1 and "no memory named 'report-zj'" in result.output
    assert "did you mean `report-zh`?" in result.output


def test_rename_is_one_commit_and_history_follows_it(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run)
    assert run("set", "report-zh", "--importance", "5").exit_code == 0
    start = int(git(desk.root, "rev-list", "--count", "HEAD"))
    result = run("rename", "report-zh", "reports-chinese")
    assert result.exit_code == 0 and "renamed: memory/reports-chinese.md" in result.output
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == start + 1
    assert not desk.path("memory/report-zh.md").exists()
    assert "name: reports-chinese" in desk.path("memory/reports-chinese.md").read_text()
    index = desk.path("MEMORY.md").read_text()
    assert "reports-chinese" in index and "report-zh" not in index
    assert git(desk.root, "status", "--porcelain") == ""
    assert run("validate", "--all").exit_code == 0
    subjects = [c["subject"] for c in json.loads(run("history", "reports-chinese", "--json").output)["commits"]]
    assert subjects == ["rename: report-zh -> reports-chinese", "set: report-zh", "remember: report-zh"]


def test_history_follows_no_guessed_rename_between_two_similar_memories(desk: DeskFolder,
                                                                      run: DeskRunner) -> None:
    """Issue 27.8: a memory forgotten and a like one made in the same commit (a person's commit,
    an import, a digest) are two memories: `desk history beta` never lists alpha's commits, as
    git's --follow did by its 50% similarity guess. An unedited `git mv` (byte-identical: git's
    exact rename) and desk's own rename are followed."""
    body = "The deploy script lives in ops/deploy.sh and needs root access to run on the hosts."
    assert run("remember", "alpha", "--type", "fact", "-d", "Deploy script", "-t", "deploy", body).exit_code == 0
    alpha = desk.path("memory/alpha.md")
    text = alpha.read_text()
    alpha.unlink()
    desk.path("memory/beta.md").write_text(text.replace("name: alpha", "name: beta").replace("hosts.", "hosts!"))
    sh(desk.root, "add", "-A", "memory")
    sh(desk.root, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "hand: alpha becomes beta")
    guessed = sh(desk.root, "log", "--follow", "--format=%s", "--", "memory/beta.md").stdout
    assert "remember: alpha" in guessed  # what git's --follow guesses, the bug
    subjects = [c["subject"] for c in json.loads(run("history", "beta", "--json").output)["commits"]]
    assert subjects == ["hand: alpha becomes beta"]
    assert "remember: alpha" not in run("history", "beta").output
    # A commit that claims to be desk's rename but whose source file it did not delete: no rename.
    result = run("remember", "delta", "--type", "fact", "-d", "Delta", "-t", "d", "Another fact.")
    assert result.exit_code == 0, result.output
    desk.path("memory/epsilon.md").write_text(desk.path("memory/delta.md").read_text().replace(
        "name: delta", "name: epsilon"))
    sh(desk.root, "add", "memory/epsilon.md")
    sh(desk.root, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "fake",
       "-m", "Desk-Op: rename\nDesk-Renamed-From: delta")
    subjects = [c["subject"] for c in json.loads(run("history", "epsilon", "--json").output)["commits"]]
    assert subjects == ["fake"]
    # An unedited `git mv` is followed: it is no guess.
    sh(desk.root, "mv", "memory/beta.md", "memory/gamma.md")
    sh(desk.root, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "hand: git mv")
    subjects = [c["subject"] for c in json.loads(run("history", "gamma", "--json").output)["commits"]]
    assert subjects == ["hand: git mv", "hand: alpha becomes beta"]


def test_rename_carries_the_error_books_links_along(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run)
    assert run("mistake", "add", "--what", "English report", "--context", "weekly report", "--cause",
               "skipped the memory", "--avoid", "read the memory first", "--memory", "report-zh").exit_code == 0
    assert run("mistake", "add", "--what", "w", "--context", "c", "--cause", "c", "--avoid", "a").exit_code == 0
    start = int(git(desk.root, "rev-list", "--count", "HEAD"))
    assert run("rename", "report-zh", "reports-chinese").exit_code == 0
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == start + 1  # the links move in the rename
    mistakes = desk.path("MISTAKES.md").read_text()
    assert "[reports-chinese](memory/reports-chinese.md)" in mistakes and "report-zh" not in mistakes
    assert [m["memory"] for m in json.loads(run("mistake", "list", "--json").output)["mistakes"]] \
        == ["reports-chinese", None]
    assert git(desk.root, "status", "--porcelain") == ""
    # A hand edit to MISTAKES.md is never overwritten by a rename that would touch it.
    run("mistake", "add", "--what", "x", "--context", "c", "--cause", "c", "--avoid", "a",
        "--memory", "reports-chinese")
    path = desk.path("MISTAKES.md")
    path.write_text(path.read_text() + "\nhand note\n")
    before = snapshot(desk.root)
    assert run("rename", "reports-chinese", "report-zh").exit_code == 4
    assert snapshot(desk.root) == before


def test_rename_refuses_an_existing_target_or_a_missing_source(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run)
    assert run("remember", "other", "--type", "fact", "-d", "Other", "-t", "o", "Other fact.").exit_code == 0
    before = snapshot(desk.root)
    assert run("rename", "report-zh", "other").exit_code == 2
    assert run("rename", "nosuch", "fresh").exit_code == 1
    assert run("rename", "report-zh", "Bad Name").exit_code == 3
    assert snapshot(desk.root) == before


def test_diff_shows_the_last_change_and_uncommitted_edits(desk: DeskFolder, run: DeskRunner) -> None:
    _remember(run)
    first = run("diff", "report-zh")
    assert first.exit_code == 0 and "+Write reports in Chinese." in first.output
    assert run("remember", "report-zh", "Write reports in English.").exit_code == 0
    last = run("diff", "report-zh").output
    assert "-Write reports in Chinese." in last and "+Write reports in English." in last
    since_start = json.loads(run("diff", "report-zh", "HEAD~1", "--json").output)
    assert since_start["changed"] and "-Write reports in Chinese." in since_start["diff"]
    path = desk.path("memory/report-zh.md")
    path.write_text(path.read_text().replace("English", "French"))
    assert "+Write reports in French." in run("diff", "report-zh", "HEAD").output
    bad = run("diff", "report-zh", "--", "--output=/tmp/x")
    assert bad.exit_code == 2 and "unknown revision" in bad.output
    assert run("diff", "nosuch").exit_code == 1


def test_diff_after_a_rename_follows_it(desk: DeskFolder, run: DeskRunner) -> None:
    """`desk diff B` after `desk rename A B` shows the rename and what changed with it (git's
    rename detection, as `git log --follow` follows it), not B as a new file; --json keeps its
    fields and adds `renamed_from`."""
    _remember(run)
    assert run("rename", "report-zh", "report-lang").exit_code == 0
    text = run("diff", "report-lang").output
    assert "rename from memory/report-zh.md\nrename to memory/report-lang.md" in text
    assert "new file mode" not in text and "-name: report-zh\n+name: report-lang" in text
    shown = json.loads(run("diff", "report-lang", "--json").output)
    assert shown["renamed_from"] == "memory/report-zh.md" and shown["path"] == "memory/report-lang.md"
    assert set(shown) == {"name", "path", "from", "to", "changed", "diff", "renamed_from"}
    # From a revision before the rename, and once more renamed: the name the memory had then.
    assert run("rename", "report-lang", "report-language").exit_code == 0
    older = json.loads(run("diff", "report-language", "HEAD~2", "--json").output)
    assert older["renamed_from"] == "memory/report-zh.md" and "+name: report-language" in older["diff"]
    # A new memory under the old name again: the diff stays with the renamed one's own file.
    assert run("remember", "report-zh", "--type", "fact", "-d", "Another", "-t", "x", "Another one.").exit_code == 0
    again = json.loads(run("diff", "report-language", "HEAD~3", "--json").output)
    assert again["renamed_from"] is None and "Another one." not in again["diff"]
    plain = json.loads(run("diff", "report-zh", "--json").output)
    assert plain["renamed_from"] is None and "new file mode" in plain["diff"]


def test_a_version_1_file_reads_as_it_is_and_only_a_real_change_stamps_it(desk: DeskFolder,
                                                                            run: DeskRunner) -> None:
    """A file without `schema:` (an older desk's, or a person's) is shown and left as it is by a
    write that changes nothing; the next write that changes it saves it at the current version."""
    _remember(run)
    path = desk.path("memory/report-zh.md")
    v1 = path.read_text().replace("schema: 2\n", "")
    path.write_text(v1)
    assert sh(desk.root, "commit", "-qam", "as an older desk wrote it", "--no-verify").returncode == 0
    head = git(desk.root, "rev-parse", "HEAD")
    assert run("show", "report-zh").output.startswith(v1.rstrip("\n"))  # shown as it is
    assert "schema" not in _meta(run, "report-zh")
    for args in (["set", "report-zh", "--importance", "4"],
                 ["remember", "report-zh", "--type", "preference", "-d", "Reports in Chinese",
                  "Write reports in Chinese."]):
        result = run(*args, "--json")
        assert json.loads(result.output)["status"] == "unchanged", (args, result.output)
    assert path.read_text() == v1 and git(desk.root, "rev-parse", "HEAD") == head  # reading never rewrites
    assert run("set", "report-zh", "--importance", "5").exit_code == 0

    def undated(text: str) -> str:  # `updated:` is the clock's
        return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("updated: "))

    assert undated(path.read_text()) == undated(v1.replace("importance: 4", "importance: 5").replace(
        "\n---\n", "\nschema: 2\n---\n", 1))
    assert _meta(run, "report-zh")["schema"] == 2
    assert run("rename", "report-zh", "report-cn").exit_code == 0
    assert "\nschema: 2\n---\n" in desk.path("memory/report-cn.md").read_text()


def test_a_linked_memory_file_is_refused_as_the_gate_refuses_it(desk: DeskFolder, run: DeskRunner,
                                                                 tmp_path: Path) -> None:
    """memory/x.md replaced by a symbolic link: `remember` (an update), `forget` and `rename` gave
    "uncommitted changes" (exit 4); they give the gate's own finding naming the link (exit 3, what
    `desk validate` says), and nothing is written through the link or committed."""
    _remember(run)
    outside = tmp_path / "outside.md"
    outside.write_text("somebody else's file\n")
    path = "memory/report-zh.md"
    (desk.root / path).unlink()
    (desk.root / path).symlink_to(outside)
    [finding] = [f for f in json.loads(run("validate", "--all", "--json").output)["findings"] if f["path"] == path]
    before = snapshot(desk.root)
    for argv in (["remember", "report-zh", "--type", "preference", "-d", "Reports", "-t", "report", "Changed."],
                 ["forget", "report-zh"], ["rename", "report-zh", "report-cn"]):
        result = run(*argv, "--json")
        assert result.exit_code == 3, (argv, result.output)
        refusal = json.loads(result.output)
        assert refusal["findings"] == [finding] and finding["rule"] == "symlink", argv
        assert f"git checkout -- {path}" in refusal["hint"]
        assert snapshot(desk.root) == before and outside.read_text() == "somebody else's file\n"
