"""desk sync between three clones of one bare remote: every merge case, rejected pushes, rewritten
history, an unreachable remote, a person's `git pull --rebase`."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

import desk.api as api
from desk.errors import ConflictError, DeskError, RejectedError, UsageError
from tests.sync.conftest import Clones, git

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def remember(d: api.Desk, name: str, body: str, description: str = "a memory") -> None:
    d.remember(name, body, type="fact", description=description, triggers=[name], now=NOW)


def tree(d: api.Desk) -> str:
    return git(d.root, "rev-parse", "HEAD^{tree}").strip()


def no_markers(d: api.Desk) -> None:
    for path in d.root.rglob("*"):
        if ".git" in path.parts or not path.is_file():
            continue
        text = path.read_bytes()
        assert b"<<<<<<<" not in text and b">>>>>>>" not in text, path


def test_clone_installs_hooks_drivers_and_checks(clones: Clones, tmp_path: Path) -> None:
    b = api.clone(str(clones.remote), tmp_path / "fresh")
    assert b.cloned is not None and b.cloned.doctor.ok
    assert api.missing_setup(b) == []
    config = (b.git_dir / "config").read_text()
    assert '[merge "desk-memory"]' in config and "desk.cli.merge memory" in config
    assert (b.git_dir / "hooks" / "post-merge").is_file()
    # A plain git clone lacks them, and every desk command says so.
    plain = clones.remote.parent / "plain"
    subprocess.run(["git", "clone", "-q", str(clones.remote), str(plain)], check=True)
    assert "merge driver desk-memory" in api.missing_setup(api.open(plain))
    from click.testing import CliRunner

    import desk.cli.output as output
    from desk.cli.main import cli

    output._WARNED = False
    result = CliRunner().invoke(cli, ["--desk", str(plain), "list"])
    assert "lacks desk's" in result.stderr and "hooks install" in result.stderr


def test_clone_into_a_file_or_of_a_plain_repository_says_what_to_do(clones: Clones, tmp_path: Path) -> None:
    """`desk clone URL afile` failed with "Not a directory" and the hint for a failed write; a clone
    of a repository that holds no desk removed the folder and then advised `desk init` in it."""
    from click.testing import CliRunner

    from desk.cli.main import cli

    (tmp_path / "afile").write_text("x")
    with pytest.raises(UsageError, match="exists and is not a folder"):
        api.clone(str(clones.remote), tmp_path / "afile")
    assert (tmp_path / "afile").read_text() == "x"
    plain = tmp_path / "plain.git"
    subprocess.run(["git", "init", "-q", "--bare", str(plain)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "-q", str(plain), str(seed)], check=True, capture_output=True)
    (seed / "README").write_text("not a desk\n")
    subprocess.run(["git", "-C", str(seed), "add", "README"], check=True)
    subprocess.run(["git", "-C", str(seed), "-c", "user.name=T", "-c", "user.email=t@example.org",
                    "commit", "-qm", "x"], check=True)
    subprocess.run(["git", "-C", str(seed), "push", "-q", "origin", "HEAD"], check=True, capture_output=True)
    result = CliRunner().invoke(cli, ["clone", str(plain), str(tmp_path / "not-desk")])
    assert result.exit_code == 1 and not (tmp_path / "not-desk").exists(), result.output
    assert f"`git clone {plain} {tmp_path / 'not-desk'}`, then `desk init {tmp_path / 'not-desk'} --allow-nonempty`" \
        in result.output
    missing = CliRunner().invoke(cli, ["--desk", str(clones[0].root), "sync", "backup"])
    assert missing.exit_code == 2 and "`git remote add backup URL`" in missing.output


def test_clone_of_a_sha256_repository_is_refused_as_init_refuses_it(clones: Clones, tmp_path: Path) -> None:
    """A desk's files in a SHA-256 repository: `desk clone` refuses it in `desk init`'s words (desk
    compares blob ids in SHA-1), leaving nothing on disk (a new folder is removed, an empty
    one is left empty); GitPython's SHA-1 head check used to fail on it with an internal error."""
    source = tmp_path / "sha256"
    made = subprocess.run(["git", "init", "-q", "-b", "main", "--object-format=sha256", str(source)],
                          capture_output=True, text=True)
    if made.returncode:
        pytest.skip(f"this git cannot make a SHA-256 repository: {made.stderr.strip()}")
    for name in (".system/desk.json", "AGENTS.md", "MEMORY.md"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes((clones[0].root / name).read_bytes())
    subprocess.run(["git", "-C", str(source), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(source), "-c", "user.name=T", "-c", "user.email=t@example.org",
                    "commit", "-qm", "a desk in SHA-256"], check=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    for target in (tmp_path / "new", empty):
        with pytest.raises(DeskError) as refused:
            api.clone(str(source), target)
        assert "sha256 object ids, which desk cannot write yet" in str(refused.value)
        assert "nothing was kept" in str(refused.value) and refused.value.hint
    assert not (tmp_path / "new").exists() and list(empty.iterdir()) == []


def test_different_memories_merge_and_index_is_exact(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    remember(a, "alpha", "Alpha body.")
    remember(b, "beta", "Beta body.")
    a.sync()
    result = b.sync(now=NOW).value
    assert result.status == "merged" and result.fetched == 1 and result.pushed == 2
    assert result.cases == []
    a.sync()
    assert tree(a) == tree(b)
    assert b.validate("all").exit_code == 0
    index = (b.root / "MEMORY.md").read_text()
    assert "[alpha]" in index and "[beta]" in index
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=b.root, capture_output=True, text=True)
    assert fsck.returncode == 0 and "error" not in fsck.stderr


def _changed_on_both_sides(clones: Clones) -> tuple[api.Desk, api.Desk]:
    """foo, shared, then changed differently in a and in b; a's version pushed, b's not yet."""
    a, b = clones[0], clones[1]
    remember(a, "foo", "Shared.")
    a.sync()
    b.sync()
    remember(a, "foo", "A's version.")
    remember(b, "foo", "B's version.")
    a.sync()
    return a, b


def test_memory_changed_on_both_sides_opens_a_case_never_markers(clones: Clones) -> None:
    a, b = _changed_on_both_sides(clones)
    result = b.sync(now=NOW).value
    assert len(result.cases) == 1
    no_markers(b)
    assert "B's version." in (b.root / "memory/foo.md").read_text()  # ours kept in the file
    cases = b.conflicts().to_json()["cases"]
    (case,) = [c for c in cases if c["id"] == result.cases[0]]
    assert case["domain"] == "memory:foo" and case["status"] == "open" and case["origin"] == "sync"
    contents = sorted(c["content"] for c in case["candidates"])
    assert any("A's version." in c for c in contents) and any("B's version." in c for c in contents)
    assert b.validate("all").exit_code == 0


def test_deleted_on_one_side_changed_on_the_other_keeps_the_memory(clones: Clones) -> None:
    a, b = _delete_here_change_there(clones)
    result = b.sync(now=NOW).value
    assert (b.root / "memory/foo.md").read_text().endswith("Changed here.\n")
    (case,) = [c for c in b.conflicts().to_json()["cases"] if c["id"] in result.cases]
    assert {c["deleted"] for c in case["candidates"]} == {True, False}
    assert "[foo]" in (b.root / "MEMORY.md").read_text()
    no_markers(b)


def test_now_md_merges_by_section_and_a_clash_becomes_a_case(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    a.now_set("a doing", section="doing")
    b.now_set("b next", section="next")
    a.sync()
    result = b.sync(now=NOW).value
    now = (b.root / "NOW.md").read_text()
    assert "a doing" in now and "b next" in now and result.cases == []
    a.now_set("blocked on the bank", section="blocked")
    a.sync()
    b.sync()
    a.now_set("a blocked", section="blocked")  # the same item replaced two ways
    b.now_set("b blocked", section="blocked")
    a.sync()
    result = b.sync(now=NOW).value
    assert len(result.cases) == 1
    assert "b blocked" in (b.root / "NOW.md").read_text()
    no_markers(b)


def test_conflict_queue_unions_cases(clones: Clones) -> None:
    a, b, c = clones[0], clones[1], clones[2]
    for d, body in ((a, "A"), (b, "B")):
        remember(d, "foo", body)
    a.sync()
    first = b.sync(now=NOW).value.cases
    for d, body in ((c, "C1"),):
        remember(d, "bar", body)
    remember(a, "bar", "A1")
    a.sync()
    second = c.sync(now=NOW).value.cases
    b.sync()
    c.sync()
    ids = {x["id"] for x in c.conflicts().to_json()["cases"]}
    assert set(first) | set(second) <= ids


def test_conversations_regenerate_from_the_merged_archive(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    a.archive_append("inbound", "hello from a", session="s1", at="2026-11-29T10:00:00Z")
    b.archive_append("inbound", "hello from b", session="s1", at="2026-11-29T11:00:00Z")
    a.conversations_render()
    b.conversations_render()
    a.sync()
    result = b.sync(now=NOW).value
    view = (b.root / "conversations/2026-11-29/s1.md").read_text()
    assert "hello from a" in view and "hello from b" in view
    assert "conversations/2026-11-29/s1.md" in result.regenerated
    a.sync()
    a.conversations_render()  # the same records render the same bytes in the other clone
    assert git(a.root, "status", "--porcelain").strip() == ""
    no_markers(b)


def test_rejected_push_fetches_and_integrates_again(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    remember(b, "from-b", "B.")
    # The remote moves between b's fetch and b's push: a pushes from a hook on b's first fetch.
    remember(a, "from-a", "A.")
    a.sync()
    git(b.root, "fetch", "-q", "origin")  # b's tracking ref is current ...
    remember(a, "from-a2", "A2.")
    a.sync()  # ... and then the remote moves again
    result = b.sync(now=NOW).value
    assert result.pushed >= 2
    assert git(b.root, "rev-parse", "HEAD").strip() == git(clones.remote, "rev-parse", "main").strip()


def test_push_rejected_by_a_racing_clone_is_retried(clones: Clones, monkeypatch: pytest.MonkeyPatch) -> None:
    from desk.sync import remote

    a, b = clones[0], clones[1]
    remember(b, "from-b", "B.")
    real_push = remote.RemoteSession.push
    calls = []

    def racing_push(self: remote.RemoteSession, name: str, branch: str, progress: object = None) -> bool:
        root = Path(self.repo.working_tree_dir or "")
        calls.append(root)
        if root == b.root and len(calls) == 1:  # another clone lands a commit just before b's first push
            remember(a, "racer", "A.")
            a.sync()
        return real_push(self, name, branch)

    monkeypatch.setattr(remote.RemoteSession, "push", racing_push)
    result = b.sync(now=NOW).value
    assert result.attempts == 2 and [c for c in calls if c == b.root] == [b.root, b.root]
    assert (b.root / "memory/racer.md").is_file()
    assert git(b.root, "rev-parse", "HEAD").strip() == git(clones.remote, "rev-parse", "main").strip()


def test_a_push_that_meets_another_push_s_ref_lock_is_retried(clones: Clones) -> None:
    """Two clones syncing at once: the remote's receive-pack finds the branch locked by the other
    push and answers "[remote rejected] main (failed to update ref)". That was reported as the
    remote's own rules refusing the push (exit 1, "ask its owner"); it is a race like a
    non-fast-forward, so desk fetches and pushes again. The remote's pre-receive hook plays the
    other push: it holds main's lock during the first push only."""
    hook = clones.remote / "hooks" / "pre-receive"
    hook.write_text('#!/bin/sh\nif [ ! -f "$GIT_DIR/contended" ]; then\n'
                    '  touch "$GIT_DIR/contended" "$GIT_DIR/refs/heads/main.lock"\n'
                    'else rm -f "$GIT_DIR/refs/heads/main.lock"; fi\n')
    hook.chmod(0o755)
    b = clones[1]
    remember(b, "from-b", "B.")
    result = subprocess.run([sys.executable, "-m", "desk", "--desk", str(b.root), "sync", "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["attempts"] == 2 and report["pushed"] == 1
    assert "Error lines received" not in result.stderr  # GitPython's log, not desk's report
    assert git(b.root, "rev-parse", "HEAD").strip() == git(clones.remote, "rev-parse", "main").strip()


def test_ctrl_c_during_git_merge_lets_it_finish_then_undoes_it(clones: Clones,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C (SIGINT to desk) while `git merge --no-commit` ran killed git half way (Python's
    subprocess does) or left its finished merge behind: index.lock, half the incoming files,
    MERGE_HEAD, and every desk command refusing, blaming a git pull. Now git finishes, then the
    merge is undone and the clone is as it was. The signal is sent as the merge starts."""
    import os
    import signal

    from desk.storage.git.merging import Merging
    from tests.conftest import snapshot

    a, b = clones[0], clones[1]
    remember(a, "from-a", "A.")
    a.sync(now=NOW)
    remember(b, "from-b", "B.")
    before = snapshot(b.root)
    tracking = git(b.root, "rev-parse", "refs/remotes/origin/main")
    real_merge = Merging.merge
    finished: list[bool] = []

    def interrupted(self: Merging, rev: str, message: str) -> bool:
        os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt here, unless it is held
        clean = real_merge(self, rev, message)
        finished.append((b.root / "memory" / "from-a.md").is_file())
        return clean

    monkeypatch.setattr(Merging, "merge", interrupted)
    with pytest.raises(KeyboardInterrupt):
        b.sync(now=NOW)
    assert finished == [True]  # git ran to its end before the interrupt was acted on
    assert not (b.git_dir / "MERGE_HEAD").exists() and not (b.git_dir / "index.lock").exists()
    after = snapshot(b.root)
    # the fetched commits (kept for the next sync), the index's stat data, and origin/main, loose now
    for moved in (".git/refs/desk/incoming", ".git/index", ".git/refs/remotes/origin/main"):
        before.pop(moved, None)
        after.pop(moved, None)
    assert after == before and git(b.root, "rev-parse", "refs/remotes/origin/main") == tracking
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    monkeypatch.setattr(Merging, "merge", real_merge)
    assert b.sync(now=NOW).value.status == "merged"


def test_ctrl_c_during_a_fast_forward_lets_git_finish_it(clones: Clones, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for a fast-forward: git is not killed half way through the work tree; HEAD and the
    files are the incoming commit's, whole, and the next sync finishes the rest."""
    import os
    import signal

    from desk.storage.git.merging import Merging

    a, b = clones[0], clones[1]
    remember(a, "from-a", "A.")
    a.sync(now=NOW)
    real = Merging.fast_forward
    finished: list[bool] = []

    def interrupted(self: Merging, rev: str) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        real(self, rev)
        finished.append(True)

    monkeypatch.setattr(Merging, "fast_forward", interrupted)
    with pytest.raises(KeyboardInterrupt):
        b.sync(now=NOW)
    assert finished == [True] and (b.root / "memory" / "from-a.md").is_file()
    assert git(b.root, "status", "--porcelain", "--untracked-files=no") == ""
    monkeypatch.setattr(Merging, "fast_forward", real)
    assert b.sync(now=NOW).value.status in ("up-to-date", "fast-forward")
    assert b.validate("all").exit_code == 0


def test_git_merges_and_fast_forwards_run_out_of_the_terminals_process_group(clones: Clones, tmp_path: Path) -> None:
    """A Ctrl-C at a terminal is SIGINT to the whole foreground process group: git, in desk's
    group, was killed half way through the work tree before desk could hold the signal. sync's
    `git merge` and `git merge --ff-only` run in a session of their own; seen from a merge driver
    and a post-merge hook (git's children), whose session is git's."""
    import os
    import shlex

    log = tmp_path / "sessions"
    record = f"cut -d' ' -f6 /proc/$$/stat >> {shlex.quote(str(log))}; "
    a, b = clones[0], clones[1]
    driver = git(b.root, "config", "--get", "merge.desk-index.driver").strip()
    git(b.root, "config", "merge.desk-index.driver", record + driver)
    remember(a, "from-a", "A.")
    a.sync(now=NOW)
    remember(b, "from-b", "B.")
    assert b.sync(now=NOW).value.status == "merged"  # MEMORY.md changed on both sides: the driver ran
    hook = b.git_dir / "hooks" / "post-merge"
    hook.write_text("#!/bin/sh\n" + record + "\n" + hook.read_text("utf-8").split("\n", 1)[1])
    remember(a, "again-a", "A2.")
    a.sync(now=NOW)
    assert b.sync(now=NOW).value.status == "fast-forward"
    sessions = log.read_text().split()
    assert len(sessions) == 2 and str(os.getsid(0)) not in sessions


def test_a_remote_holding_another_desk_is_refused_saying_so(clones: Clones, tmp_path: Path) -> None:
    """A second `desk init` pushed to the same remote: git refuses to merge unrelated histories and
    desk said "commit or discard local changes first", which there were none of."""
    from tests.conftest import snapshot

    other = api.init(tmp_path / "other")
    bare = tmp_path / "other.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    branch = git(other.root, "branch", "--show-current").strip()
    subprocess.run(["git", "-C", str(other.root), "push", "-q", str(bare), f"HEAD:refs/heads/{branch}"],
                   check=True, capture_output=True)
    b = clones[1]
    git(b.root, "remote", "add", "elsewhere", str(bare))
    before = snapshot(b.root)
    with pytest.raises(DeskError, match="shares no history with this desk") as caught:
        b.sync("elsewhere", now=NOW)
    assert "desk clone URL" in str(caught.value.hint) and "local changes" not in str(caught.value.hint)
    after = snapshot(b.root)
    for ref in (".git/refs/desk/incoming", ".git/index", ".git/refs/remotes/elsewhere/main"):  # what was fetched
        before.pop(ref, None)
        after.pop(ref, None)
    assert after == before and git(b.root, "status", "--porcelain") == ""


def test_remote_that_rewrote_history_is_refused_naming_lost_commits(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    remember(a, "keep-me", "Important.")
    a.sync()
    b.sync()
    # Someone force-pushes history without that commit.
    git(a.root, "push", "-q", "--force", "origin", "HEAD~1:main")
    before = git(b.root, "rev-parse", "HEAD", "refs/remotes/origin/main")
    with pytest.raises(ConflictError) as err:
        b.sync()
    assert "remember: keep-me" in err.value.message and err.value.exit_code == 4
    assert git(b.root, "rev-parse", "HEAD", "refs/remotes/origin/main") == before


def test_unreachable_remote_is_a_clear_error_with_nothing_changed(clones: Clones) -> None:
    b = clones[1]
    remember(b, "local", "Local.")
    b.archive_append("inbound", "pending", session="s1", at="2026-11-29T10:00:00Z")
    git(b.root, "remote", "set-url", "origin", str(clones.remote.parent / "gone.git"))
    before = git(b.root, "rev-parse", "HEAD", "refs/remotes/origin/main")
    status = git(b.root, "status", "--porcelain")
    with pytest.raises(DeskError) as err:
        b.sync()
    assert err.value.exit_code == 1 and "cannot fetch" in err.value.message and err.value.hint
    assert git(b.root, "rev-parse", "HEAD", "refs/remotes/origin/main") == before
    assert git(b.root, "status", "--porcelain") == status  # the archive growth was not committed either


def test_remote_address_with_a_password_is_refused(clones: Clones) -> None:
    b = clones[1]
    git(b.root, "remote", "add", "leaky", "https://ada:hunter2secret@example.org/desk.git")
    with pytest.raises(RejectedError) as err:
        b.sync("leaky")
    assert "hunter2secret" not in err.value.message and "credential" in (err.value.hint or "")
    with pytest.raises(RejectedError):
        api.clone("https://ada:hunter2secret@example.org/desk.git", clones.remote.parent / "x")
    # A token given as the user name is caught by the secret scanner, and never printed.
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    git(b.root, "remote", "set-url", "leaky", f"https://{token}@github.com/me/desk.git")
    with pytest.raises(RejectedError) as err:
        b.sync("leaky")
    assert token not in err.value.message and "REDACTED" in err.value.message
    assert not (clones.remote.parent / "x").exists()


def test_a_persons_git_pull_rebase_leaves_an_exact_index(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    remember(a, "zeta", "Z.")
    a.sync()
    remember(b, "alpha", "A.")
    git(b.root, "pull", "-q", "--rebase", "origin", "main")
    assert b.validate("all").exit_code == 0
    index = (b.root / "MEMORY.md").read_text()
    assert index.index("[alpha]") < index.index("[zeta]")
    assert git(b.root, "status", "--porcelain").strip() == ""


def test_a_persons_git_pull_merge_opens_the_case_in_a_desk_commit(clones: Clones) -> None:
    a, b = _changed_on_both_sides(clones)
    git(b.root, "pull", "-q", "--no-rebase", "origin", "main")
    no_markers(b)
    assert b.validate("all").exit_code == 0
    assert [c for c in b.conflicts().to_json()["cases"] if c["domain"] == "memory:foo"]
    assert git(b.root, "status", "--porcelain").strip() == ""


def test_post_merge_reports_a_symlink_and_an_unauthorised_soul_change(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    (a.root / "SOUL.md").write_text("# Soul\nchanged silently\n")
    (a.root / "link").symlink_to("/etc/hostname")
    git(a.root, "add", "SOUL.md", "link")
    git(a.root, "commit", "-q", "--no-verify", "-m", "sneaky\n\nDesk-Actor: assistant")
    git(a.root, "push", "-q", "origin", "main")
    proc = subprocess.run(["git", "pull", "--ff-only", "origin", "main"], cwd=b.root,
                          capture_output=True, text=True)
    assert "link arrived as a symbolic link" in proc.stderr
    assert "soul-unauthorized" in proc.stderr and "git revert" in proc.stderr
    # git could not refuse it (a fast-forward runs no hook): the hook says so loudly, doctor lists it.
    assert "desk: ERROR:   link:1: symlink:" in proc.stderr and "git reset --keep" in proc.stderr
    assert any(p.path == "link:1" and p.check == "symlink" for p in b.doctor().value.problems)
    # desk sync refuses it before anything moves.
    c = clones[2]
    before = git(c.root, "rev-parse", "HEAD", "refs/remotes/origin/main")
    with pytest.raises(RejectedError) as err:
        c.sync()
    assert "link:1: symlink" in err.value.message and err.value.exit_code == 3
    assert git(c.root, "rev-parse", "HEAD", "refs/remotes/origin/main") == before
    assert not (c.root / "link").is_symlink()


def _push_bad_memory(clone: api.Desk, text: str) -> None:
    """Commit memory/bad.md past the hook (`--no-verify`, as a person may) and push it."""
    (clone.root / "memory/bad.md").write_text(text)
    git(clone.root, "add", "memory/bad.md")
    git(clone.root, "commit", "-q", "--no-verify", "-m", "bad memory")
    git(clone.root, "push", "-q", "origin", "main")


def test_a_fast_forward_that_breaks_the_rules_is_refused_with_nothing_changed(clones: Clones) -> None:
    from click.testing import CliRunner

    from desk.cli.main import cli

    a, b = clones[0], clones[1]
    _push_bad_memory(a, "---\nname: bad\ndescription: x\ntype: nonsense\n---\nbody\n")
    before = git(b.root, "rev-parse", "HEAD", "refs/remotes/origin/main")
    result = CliRunner().invoke(cli, ["--desk", str(b.root), "sync", "--json", "-q"])
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "rejected" and "validate --all" in data["hint"]
    assert [(f["path"], f["line"]) for f in data["findings"]] == [("memory/bad.md", 4)]
    assert git(b.root, "rev-parse", "HEAD", "refs/remotes/origin/main") == before
    assert not (b.root / "memory/bad.md").exists()
    assert git(b.root, "status", "--porcelain").strip() == ""
    # Fixed on the other clone, it integrates.
    (a.root / "memory/bad.md").unlink()
    git(a.root, "commit", "-q", "-am", "drop the bad memory")
    git(a.root, "push", "-q", "origin", "main")
    assert b.sync().value.status == "fast-forward"


def test_hooks_install_adds_gitattributes_only_when_absent(clones: Clones) -> None:
    b = clones[1]
    git(b.root, "rm", "-q", ".gitattributes")
    git(b.root, "commit", "-q", "-m", "drop attributes")
    actions = b.hooks_install().value.merge_drivers
    assert actions[".gitattributes"] == "added and committed"
    assert "merge=desk-memory" in (b.root / ".gitattributes").read_text()
    (b.root / ".gitattributes").write_text("*.bin binary\n")
    git(b.root, "commit", "-qam", "own attributes")
    actions = b.hooks_install().value.merge_drivers
    assert "add the lines" in actions[".gitattributes"]
    assert (b.root / ".gitattributes").read_text() == "*.bin binary\n"


def test_sync_json_from_the_cli(clones: Clones) -> None:
    from click.testing import CliRunner

    from desk.cli.main import cli

    remember(clones[0], "x", "X.")
    result = CliRunner().invoke(cli, ["--desk", str(clones[0].root), "sync", "--json", "-q"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["pushed"] == 1 and data["status"] == "pushed-only"


def test_journal_digested_in_two_clones_is_regenerated_from_the_merged_archive(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    a.archive_append("inbound", "from a", session="s1", at="2026-11-29T10:00:00Z")
    b.archive_append("outbound", "from b", session="s2", at="2026-11-29T11:00:00Z")
    for d in (a, b):
        d.digest(date="2026-11-29", as_of="2026-11-29T23:59:00Z")
    a.sync()
    result = b.sync(now=NOW).value
    assert "journal/2026-11-29.md" in result.regenerated
    journal = (b.root / "journal/2026-11-29.md").read_text()
    assert "s1" in journal and "s2" in journal
    a.sync()
    assert tree(a) == tree(b)
    no_markers(b)


def test_a_merge_that_breaks_the_rules_is_refused_with_nothing_changed(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    _push_bad_memory(a, "---\nname: Not A Slug\n---\nbody\n")
    remember(b, "fine", "Fine.")
    head = git(b.root, "rev-parse", "HEAD")
    with pytest.raises(RejectedError) as err:
        b.sync()
    assert "memory/bad.md" in err.value.message
    assert git(b.root, "rev-parse", "HEAD") == head
    assert not (b.git_dir / "MERGE_HEAD").exists() and not (b.root / "memory/bad.md").exists()
    assert git(b.root, "status", "--porcelain").strip() == ""


def test_post_rewrite_regenerates_an_index_a_union_merge_left_unsorted(clones: Clones) -> None:
    """Issue 9.2: a desk whose .gitattributes still says `MEMORY.md merge=union` (desk 0.1's
    template): `git pull --rebase` commits an unsorted index, and the post-rewrite hook fixes it."""
    a, b = clones[0], clones[1]
    for d in (a, b):
        (d.root / ".gitattributes").write_text("MEMORY.md merge=union\n")
        git(d.root, "commit", "-qam", "old attributes")
    a.sync()
    git(b.root, "pull", "-q", "--no-rebase", "origin", "main")
    b.sync()
    remember(a, "zeta", "Z.")
    a.sync()
    remember(b, "alpha", "A.")
    git(b.root, "pull", "-q", "--rebase", "origin", "main")
    assert b.validate("all").exit_code == 0
    subjects = git(b.root, "log", "-3", "--format=%s")
    assert "sync: settle the merge" in subjects  # the hook's commit
    assert git(b.root, "status", "--porcelain").strip() == ""


def test_progress_reaches_stderr_for_push_and_fetch(clones: Clones) -> None:
    a, b = clones[0], clones[1]
    remember(a, "p", "P.")
    lines: list[str] = []
    a.sync(progress=lines.append)
    assert any(line.startswith("writing objects:") for line in lines)  # the push
    lines.clear()
    b.sync(progress=lines.append)
    assert lines  # the fetch (unpacking on a local path reports its stages)


def test_two_clones_render_the_same_journal_bytes_from_the_same_records(
        clones: Clones, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13.3: a journal page depends on the archive records only, not on the history each
    clone happens to have (commits made that day, their times), so pages never conflict."""
    a, b = clones[0], clones[1]
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-29T09:00:00Z")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-11-29T09:00:00Z")
    a.archive_append("inbound", "hello", session="s1", at="2026-11-29T10:00:00Z")
    a.fact_add("Use WAL.", kind="decision", importance=4, at="2026-11-29T10:05:00Z")
    a.sync()
    b.sync()
    remember(a, "only-in-a", "A.")  # that day's history now differs between the clones
    remember(b, "only-in-b", "B.")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-29T23:00:00Z")
    pages = []
    for d in (a, b):
        d.digest(date="2026-11-29", as_of="2026-11-29T23:59:00Z")
        pages.append((d.root / "journal/2026-11-29.md").read_bytes())
    assert pages[0] == pages[1]
    assert b"Use WAL." in pages[0] and b"git log --since=2026-11-29T00:00:00Z" in pages[0]
    a.sync()
    result = b.sync(now=NOW).value
    assert "journal/2026-11-29.md" not in result.regenerated and result.cases == []
    assert (b.root / "journal/2026-11-29.md").read_bytes() == pages[0]


def _delete_here_change_there(clones: Clones) -> tuple[api.Desk, api.Desk]:
    a, b = clones[0], clones[1]
    remember(a, "foo", "Shared.")
    a.sync()
    b.sync()
    a.forget("foo")
    remember(b, "foo", "Changed here.")
    a.sync()
    return a, b


def test_a_persons_git_pull_stopped_on_delete_modify_is_finished_by_sync_continue(clones: Clones) -> None:
    """git never calls a merge driver for modify/delete: `git pull` stops. Every desk command then
    says what to run, desk's commits wait, and `desk sync --continue` keeps the changed memory,
    opens the case, regenerates the index and concludes the merge."""
    from click.testing import CliRunner

    import desk.cli.output as output
    from desk.cli.main import cli

    a, b = _delete_here_change_there(clones)
    pull = subprocess.run(["git", "pull", "--no-rebase", "origin", "main"], cwd=b.root,
                          capture_output=True, text=True)
    assert pull.returncode != 0 and "CONFLICT (modify/delete)" in pull.stdout + pull.stderr
    assert (b.git_dir / "MERGE_HEAD").is_file()
    output._WARNED = False
    listed = CliRunner().invoke(cli, ["--desk", str(b.root), "list"])
    assert "git merge stopped in this clone on memory/foo.md" in listed.stderr
    assert "`desk sync --continue`" in listed.stderr and "git merge --abort" in listed.stderr
    with pytest.raises(ConflictError) as err:
        remember(b, "meanwhile", "Waits.")
    assert "desk sync --continue" in (err.value.hint or "")
    index = (b.root / "MEMORY.md").read_bytes()
    doctor = b.doctor(repair=True).value  # names it, and repairs nothing inside the half-made merge
    assert [p.path for p in doctor.problems if p.check == "stopped-merge"] == ["memory/foo.md"]
    assert (b.root / "MEMORY.md").read_bytes() == index
    output._WARNED = False
    done = CliRunner().invoke(cli, ["--desk", str(b.root), "sync", "--continue", "--json"])
    assert done.exit_code == 0, done.output
    assert "stopped" not in done.stderr  # the command that finishes it does not tell itself to run
    data = json.loads(done.stdout)
    assert data["status"] == "merge-finished" and len(data["cases"]) == 1
    assert "memory/foo.md" in data["merged"] or (b.root / "memory/foo.md").is_file()
    assert (b.root / "memory/foo.md").read_text().endswith("Changed here.\n")
    assert "[foo]" in (b.root / "MEMORY.md").read_text()
    (case,) = [c for c in b.conflicts().to_json()["cases"] if c["id"] in data["cases"]]
    assert {c["deleted"] for c in case["candidates"]} == {True, False}
    assert not (b.git_dir / "MERGE_HEAD").exists()
    assert len(git(b.root, "rev-list", "--parents", "-n1", "HEAD").split()) == 3  # a merge commit
    assert "Desk-Cases: " + data["cases"][0] in git(b.root, "log", "-1", "--format=%B")
    assert git(b.root, "status", "--porcelain").strip() == ""
    assert b.validate("all").exit_code == 0
    no_markers(b)
    b.sync()
    a.sync()
    assert tree(a) == tree(b)
    with pytest.raises(UsageError):
        b.sync(resume=True)  # nothing stopped any more


def test_a_persons_git_pull_rebase_stopped_on_delete_modify_is_finished_by_sync_continue(clones: Clones) -> None:
    a, b = _delete_here_change_there(clones)
    pull = subprocess.run(["git", "pull", "--rebase", "origin", "main"], cwd=b.root,
                          capture_output=True, text=True)
    assert pull.returncode != 0 and b.git.merging.stopped() == "rebase"
    with pytest.raises(ConflictError) as err:
        b.sync()  # not "HEAD is detached": what to run
    assert "desk sync --continue" in (err.value.hint or "") and "git rebase --abort" in (err.value.hint or "")
    result = b.sync(resume=True, now=NOW).value
    assert result.status == "rebase-finished" and len(result.cases) == 1
    assert b.git.merging.stopped() is None and git(b.root, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert (b.root / "memory/foo.md").read_text().endswith("Changed here.\n")
    assert b.validate("all").exit_code == 0
    assert git(b.root, "status", "--porcelain").strip() == ""
    no_markers(b)


def test_a_fast_forward_with_a_stale_index_is_taken_and_the_index_regenerated(clones: Clones) -> None:
    """A stale MEMORY.md is not a refusal: the gate computes the right one from the change alone."""
    a, b = clones[0], clones[1]
    remember(a, "kept", "Kept.")
    (a.root / "memory/hand.md").write_text((a.root / "memory/kept.md").read_text().replace("kept", "hand"))
    git(a.root, "add", "memory/hand.md")
    git(a.root, "commit", "-q", "--no-verify", "-m", "hand-made, index not updated")
    git(a.root, "push", "-q", "origin", "main")
    result = b.sync(now=NOW).value
    assert result.status == "fast-forward" and result.regenerated == ["MEMORY.md"]
    assert "[hand]" in (b.root / "MEMORY.md").read_text()
    assert b.validate("all").exit_code == 0
    assert git(b.root, "log", "-1", "--format=%s").strip() == "sync: regenerate MEMORY.md"
    remember(b, "plain", "Plain.")
    b.sync()
    assert a.sync(now=NOW).value.regenerated == []  # an exact index: nothing to regenerate
