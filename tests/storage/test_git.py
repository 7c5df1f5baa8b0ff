"""desk.storage.git, the one reader of git's output, checked against git itself in real repositories."""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desk.errors import GitError
from desk.storage.git import Git, RawChange, WorkTreeListing, blob_sha, parse_trailers
from tests.guard_helpers import git_env

DESK = Path(__file__).resolve().parents[2] / "desk"

# Line shapes that exercise git's trailer rules: the title, blank and whitespace-only lines,
# `Key : value`, folded values, comments, git's own trailer prefixes, the scissors line.
LINES = ["subject", "", "  ", "body text", "Key: v", "Key : v", "Key:", "key-two:  x y ", "  folded",
         "\tmore", "# comment", "Signed-off-by: A <a@example.org>", "(cherry picked from commit abc)",
         "Not a: trailer", "a:b", ":x", "Desk-Actor: assistant", "Desk-Authorized-By:", "   Ada",
         "Conflicts:", "\tpath", "# ------------------------ >8 ------------------------",
         "K\t: tab", "Ключ: v", "x\r", "Key: v\r", "---"]


def git(root: Path, *args: str, input: str | None = None) -> str:
    # Bytes, decoded by hand: text mode would turn git's `\r` into `\n` (universal newlines).
    out = subprocess.run(["git", *args], cwd=root, env=git_env(), input=None if input is None else input.encode(),
                         capture_output=True, check=True).stdout
    return out.decode("utf-8", "surrogateescape")


def printed(trailers: str) -> dict[str, list[str]]:
    """`Key: value` lines as git prints parsed trailers, grouped by key."""
    found: dict[str, list[str]] = {}
    for line in trailers.split("\n")[:-1]:
        key, _, value = line.partition(": ")
        found.setdefault(key, []).append(value)
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(LINES), st.text(" \t:#-aK1()", max_size=8)), max_size=10),
       st.sampled_from(["", "\n", "\n\n"]))
def test_trailers_are_found_as_git_interpret_trailers_finds_them(tmp_path_factory: pytest.TempPathFactory,
                                                                 lines: list[str], end: str) -> None:
    message = "\n".join(lines) + end
    expected = git(tmp_path_factory.getbasetemp(), "interpret-trailers", "--parse", "--no-divider",
                   input=message)
    assert parse_trailers(message) == printed(expected)


def test_folded_values_and_a_space_before_the_colon(tmp_path: Path) -> None:
    message = ("Adjust the persona\n\nThe body: not a trailer.\n\n"
               "Desk-Actor : assistant\nDesk-Authorized-By:\n  Ada\n   Lovelace\nDesk-Op: soul\n")
    assert parse_trailers(message) == {"Desk-Actor": ["assistant"],
                                       "Desk-Authorized-By": ["Ada Lovelace"], "Desk-Op": ["soul"]}
    # a paragraph that is not all trailers is not the trailer block (no Signed-off-by in it)
    assert parse_trailers("subject\n\nDesk-Actor: assistant\nthen prose\n") == {}
    assert parse_trailers("subject\nDesk-Actor: assistant\n") == {}  # the title never holds any


MESSAGES = [
    "plain subject",
    "subject\n\nbody\n\nDesk-Op: remember\nDesk-Memory: report-style\n",
    "subject\n\nDesk-Actor : assistant\nDesk-Authorized-By:\n  Ada\n  Lovelace\n",
    "subject\n\nA: 1\n---\nB: 2\n",
    "subject\n\nsome prose here\nmore prose\nSigned-off-by: Ada <ada@example.org>\nKey: v\n",
    "subject\n\nKey: v\n# a comment git strips\n",
]


def test_log_reads_trailers_as_git_log_does(tmp_path: Path) -> None:
    """Commits made by git: `History.log` agrees with git's own `%(trailers:unfold,only)`."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for message in MESSAGES:
        git(root, "commit", "-q", "--allow-empty", "-F", "-", input=message)
    commits = Git(root).history.log()
    assert len(commits) == len(MESSAGES)
    for commit in commits:
        theirs = git(root, "log", "-1", "--format=%(trailers:unfold,only)", commit.sha)
        assert commit.trailers == printed(theirs.rstrip("\n") + "\n" if theirs.strip() else "")
    by_subject = {c.message: c for c in commits}
    folded = by_subject[MESSAGES[2]]
    assert folded.trailers == {"Desk-Actor": ["assistant"], "Desk-Authorized-By": ["Ada Lovelace"]}
    assert folded.subject == "subject"


def test_raw_changes_from_diff_tree_log_and_the_index(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    odd = os.fsdecode(b"caf\xe9 new\nline.md")  # not UTF-8, with a space and a newline
    files = {"a.md": b"one\n", "dir/b.md": b"two\n", "c.md": b"three\n"}
    for rel, data in files.items():
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_bytes(data)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    first = Git(root).refs.head()
    (root / "a.md").write_bytes(b"one, changed\n")
    (root / "dir/b.md").unlink()
    (root / "c.md").unlink()
    os.symlink("a.md", root / "c.md")
    (root / odd).write_bytes(b"new\n")
    git(root, "add", "-A")
    repo = Git(root)
    expected = [
        RawChange("a.md", "M", "100644", "100644", blob_sha(b"one\n"), blob_sha(b"one, changed\n")),
        RawChange("c.md", "T", "100644", "120000", blob_sha(b"three\n"), blob_sha(b"a.md")),
        RawChange(odd, "A", "000000", "100644", None, blob_sha(b"new\n")),
        RawChange("dir/b.md", "D", "100644", "000000", blob_sha(b"two\n"), None),
    ]
    assert sorted(repo.worktree.staged_changes(), key=lambda c: c.path) == sorted(expected, key=lambda c: c.path)
    git(root, "commit", "-q", "-m", "second")
    second = repo.refs.head()
    assert first is not None and second is not None
    assert sorted(repo.worktree.diff_tree(first, second), key=lambda c: c.path) == sorted(expected,
                                                                                key=lambda c: c.path)
    assert repo.worktree.diff_tree(first, second, ["dir/"]) == [expected[3]]
    newest = repo.history.log()[0]
    assert newest.message == "second\n" and sorted(newest.paths) == sorted(c.path for c in expected)
    assert sorted(newest.changes, key=lambda c: c.path) == sorted(expected, key=lambda c: c.path)
    assert set(repo.history.deleted(["dir/b.md", "a.md"])) == {"dir/b.md"}
    assert repo.worktree.committed_blobs(["a.md", odd, "dir/b.md"]) == {"a.md": blob_sha(b"one, changed\n"),
                                                               odd: blob_sha(b"new\n")}
    with pytest.raises(GitError):
        repo.worktree.diff_tree("0" * 40, second)  # the mirror rebuilds when its recorded commit is gone


def test_history_gives_each_commit_its_parents_time_and_first_parent_changes(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    odd = os.fsdecode(b"memory/a\x1e:b\n\xe9.md")  # a header byte, a colon, a newline, not UTF-8
    (root / "memory").mkdir()
    (root / odd).write_bytes(b"one\n")
    (root / "memory/b.md").write_bytes(b"two\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "root")
    git(root, "checkout", "-q", "-b", "side")
    (root / "memory/b.md").write_bytes(b"two, on the side\n")
    git(root, "commit", "-q", "-am", "side")
    git(root, "checkout", "-q", "main")
    (root / odd).write_bytes(b"one, on main\n")
    git(root, "commit", "-q", "-am", "main")
    git(root, "merge", "-q", "--no-ff", "-m", "merge", "side")
    repo = Git(root)
    steps = list(repo.history.walk(["HEAD"]))
    listed = git(root, "log", "--topo-order", "--format=%H %P|%ct").splitlines()
    assert [f"{s.sha} {' '.join(s.parents)}|{s.time}" for s in steps] == listed
    for step in steps:
        if step.parents:
            expected = repo.worktree.diff_tree(step.parents[0], step.sha)
        else:
            expected = repo.worktree.diff_tree("4b825dc642cb6eb9a060e54bf8d69288fbee4904", step.sha)  # the empty tree
        assert sorted(step.changes, key=lambda c: c.path) == sorted(expected, key=lambda c: c.path)
    (merge, (main, side)), times = (steps[0].sha, steps[0].parents), {s.sha: s.time for s in steps}
    assert [c.path for c in steps[0].changes] == ["memory/b.md"]  # the side's change, against main
    assert [s.sha for s in repo.history.walk([f"{main}..{merge}"])] == [merge, side]
    assert repo.history.last_change("HEAD", "memory/b.md") == (side, times[side])
    assert repo.history.last_change("HEAD", "memory/none.md") is None
    assert repo.history.commit_times([merge, main]) == {merge: times[merge], main: times[main]}
    stream = repo.history.walk(["HEAD"])
    assert next(stream).sha == merge
    stream.close()  # stops git early, without an error
    with pytest.raises(GitError):
        list(repo.history.walk(["0" * 40 + "..HEAD"]))


def test_an_empty_repository_has_no_history(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    repo = Git(tmp_path)
    assert repo.refs.head() is None and repo.history.log() == [] and repo.worktree.committed_blobs(["a.md"]) == {}


def _runs_git_itself(node: ast.Call) -> bool:
    """`git.run(...)`/`x.git.text(...)` (a Git's runner), or a subprocess call whose argv starts with "git"."""
    func = node.func
    if (isinstance(func, ast.Attribute) and func.attr in ("run", "text", "completed", "stream", "start")
            and ast.unparse(func.value).endswith("git")):
        return True
    argv = node.args[0] if node.args else None
    return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "subprocess" and isinstance(argv, ast.List) and bool(argv.elts)
            and isinstance(argv.elts[0], ast.Constant) and argv.elts[0].value == "git")


def test_only_the_git_package_runs_git() -> None:
    """Git in one place: every other module gets parsed, typed data from desk.storage.git."""
    offenders = []
    for path in sorted(DESK.rglob("*.py")):
        if path.is_relative_to(DESK / "storage" / "git"):
            continue
        tree = ast.parse(path.read_text("utf-8"))
        offenders += [f"{path.relative_to(DESK)}:{node.lineno}" for node in ast.walk(tree)
                      if isinstance(node, ast.Call) and _runs_git_itself(node)]
    assert offenders == []


def test_git_is_started_by_subprocess_itself_with_no_stand_in() -> None:
    """The package runs git through the standard `subprocess` module as it is meant to be used
    (STYLE.md, "Simplicity budget"): every module that starts git imports `subprocess` at its top
    and uses that module object; no object stands in for it (a lazy importer assigned to the name,
    `globals()` rewritten) and no process is spawned another way (`os.posix_spawn`, `os.fork`)."""
    import importlib

    package = DESK / "storage" / "git"
    starters = []
    for path in sorted(package.glob("*.py")):
        source = path.read_text("utf-8")
        tree = ast.parse(source)
        assert "posix_spawn" not in source and "os.fork" not in source and "globals()" not in source, path.name
        assigned = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                    for target in node.targets if isinstance(target, ast.Name)}
        assert "subprocess" not in assigned, f"{path.name} assigns the name `subprocess`"
        if "subprocess." in source:
            starters.append(path.stem)
            top = [node for node in tree.body if isinstance(node, ast.Import)]
            assert any(alias.name == "subprocess" and alias.asname is None for node in top for alias in node.names), \
                f"{path.name} uses subprocess without importing it at its top"
            module = importlib.import_module(f"desk.storage.git.{path.stem}")
            assert module.subprocess is subprocess, f"{path.name}: `subprocess` is not the module itself"
    assert {"run", "repo", "objects"} <= set(starters)


def _rev_parse(root: Path, name: str) -> str | None:
    proc = subprocess.run(["git", "rev-parse", "-q", "--verify", name], cwd=root, env=git_env(), capture_output=True)
    return proc.stdout.decode().strip() or None


def _rev_parse_head(root: Path) -> str | None:
    return _rev_parse(root, "HEAD^{commit}")


def _repo_with_a_commit(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", "one")
    return root


def test_head_read_from_ref_files_agrees_with_git_in_every_state(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "topic/deep")
    repo = Git(root)
    assert repo.refs.head() is None and _rev_parse_head(root) is None  # unborn branch
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "one")
    assert repo.refs.head() == _rev_parse_head(root) is not None  # a loose ref under a nested branch name
    git(root, "pack-refs", "--all")
    assert not (root / ".git/refs/heads/topic/deep").exists()
    assert repo.refs.head() == _rev_parse_head(root)  # only in packed-refs
    git(root, "commit", "-q", "--allow-empty", "-m", "two")
    assert repo.refs.head() == _rev_parse_head(root)  # loose again, newer than the packed one
    first = git(root, "rev-parse", "HEAD~1").strip()
    git(root, "checkout", "-q", "--detach", first)
    assert repo.refs.head() == first == _rev_parse_head(root)  # detached
    git(root, "checkout", "-q", "-b", "fresh-orphan-check", "topic/deep")
    git(root, "checkout", "-q", "--orphan", "orphan")
    assert repo.refs.head() is None and _rev_parse_head(root) is None  # a new unborn branch
    git(root, "checkout", "-q", "-f", "topic/deep")
    git(root, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    git(tmp_path / "linked", "commit", "-q", "--allow-empty", "-m", "in the linked tree")
    linked = Git(tmp_path / "linked")
    assert linked.refs.head() == _rev_parse_head(tmp_path / "linked") != repo.refs.head()  # asked of git


def test_head_asks_git_when_the_ref_file_is_not_an_object_id(tmp_path: Path) -> None:
    root = _repo_with_a_commit(tmp_path)
    sha = _rev_parse_head(root)
    git(root, "symbolic-ref", "refs/heads/alias", "refs/heads/main")  # a symbolic ref chain
    git(root, "symbolic-ref", "HEAD", "refs/heads/alias")
    assert Git(root).refs.head() == sha == _rev_parse_head(root)


def test_a_ref_read_from_its_files_agrees_with_git(tmp_path: Path) -> None:
    root = _repo_with_a_commit(tmp_path)
    repo = Git(root)

    def rev_parse(ref: str) -> str | None:
        return _rev_parse(root, f"{ref}^{{}}")

    tracking = "refs/remotes/origin/main"
    assert repo.refs.ref(tracking) is None and rev_parse(tracking) is None  # no such ref
    git(root, "update-ref", tracking, "HEAD")
    assert repo.refs.ref(tracking) == rev_parse(tracking) is not None  # loose
    git(root, "pack-refs", "--all")
    assert not (root / ".git" / tracking).exists()
    assert repo.refs.ref(tracking) == rev_parse(tracking)  # only in packed-refs
    git(root, "commit", "-q", "--allow-empty", "-m", "two")
    git(root, "update-ref", tracking, "HEAD")
    assert repo.refs.ref(tracking) == rev_parse(tracking) == repo.refs.head()  # loose again, newer than the packed one
    git(root, "symbolic-ref", "refs/remotes/origin/HEAD", tracking)
    assert repo.refs.ref("refs/remotes/origin/HEAD") == rev_parse(tracking)  # a symbolic ref: asked of git
    for odd in ("refs/remotes/../heads/main", "HEAD", "refs/remotes/origin/main.lock"):
        assert repo.refs.ref(odd) is None  # never read as a file: not a ref name desk reads


def test_the_listing_and_heads_tree_together_are_what_each_says(tmp_path: Path) -> None:
    """`start_work_tree_listing` starts the two git processes at once (validate --all, desk
    doctor): the same listing and the same tree as asking for each alone."""
    root = tmp_path / "r"
    (root / ".system/archive").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    repo = Git(root)
    (root / ".system/desk.json").write_text("{}")
    listing, tree = repo.worktree.start_work_tree_listing(".system/").result()
    assert tree == {} and listing.digest == _plain_listing(root).digest  # no HEAD yet
    (root / ".system/archive/2026-11-30.jsonl").write_text("{}\n")
    (root / "other.md").write_text("x")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    (root / "other.md").write_text("changed")
    listing, tree = repo.worktree.start_work_tree_listing(".system/").result()
    assert listing.digest == _plain_listing(root).digest and listing.elsewhere == {"other.md"}
    assert tree == repo.worktree.ls_tree("HEAD", ".system/", recursive=True)
    assert set(tree) == {".system/desk.json", ".system/archive/2026-11-30.jsonl"}


def _plain_listing(root: Path) -> WorkTreeListing:
    """The work tree as one `git ls-files` alone lists it (the listing desk starts beside a tree)."""
    return WorkTreeListing(subprocess.run(["git", "ls-files", "-z", "-t", "-c", "-s", "-m", "-d", "-o",
                                           "--exclude-standard"], cwd=root, capture_output=True, check=True).stdout)


def _listing_by_split(out: bytes) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """WorkTreeListing's two answers computed the plain way: every record split and read."""
    records = [r for r in out.split(b"\0") if r]
    elsewhere = {r.partition(b" " if r[:1] == b"?" else b"\t")[2].decode("utf-8", "surrogateescape")
                 for r in records if not r.startswith(b"H ")}
    clean = {}
    for r in records:
        if r.startswith(b"H "):
            meta, _, raw = r[2:].partition(b"\t")
            mode, blob, stage = meta.decode().split()
            path = raw.decode("utf-8", "surrogateescape")
            if stage == "0" and path not in elsewhere:
                clean[path] = (mode, blob)
    return elsewhere, clean


def test_the_listing_read_by_search_is_the_listing_read_record_by_record(tmp_path: Path) -> None:
    """`WorkTreeListing` finds the records that are not `H` by a regex and a folder's entries by
    byte search, never splitting the whole listing: the same answers as splitting every record,
    with names that hold a tab, `H `, `? `, `.system/` in the middle, and every kind of record
    (modified, deleted, skip-worktree, untracked, unmerged)."""
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    names = ["a.md", "H b.md", "? c.md", "tab\tin.md", "x/.system/y.md", ".system/desk.json",
             ".system/archive/one.jsonl", ".system/tab\t.system/z.md", "gone.md", "skip.md", "z.md"]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    (root / "a.md").write_text("changed")
    (root / ".system/archive/one.jsonl").write_text("changed")
    (root / "gone.md").unlink()
    git(root, "update-index", "--skip-worktree", "skip.md")
    for name in ("new\t.system/w.md", "? d.md", ".system/new.json"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("untracked")
    blob = git(root, "hash-object", "-w", "z.md").strip()
    git(root, "update-index", "--index-info", input=f"0 {'0' * 40}\tz.md\n100644 {blob} 1\tz.md\n"
                                                  f"100644 {blob} 2\tz.md\n")  # unmerged
    repo = Git(root)
    listing = repo.worktree.start_work_tree_listing(".system/").result()[0]
    out = subprocess.run(["git", "ls-files", "-z", "-t", "-c", "-s", "-m", "-d", "-o", "--exclude-standard"],
                         cwd=root, capture_output=True, check=True).stdout
    elsewhere, clean = _listing_by_split(out)
    assert listing.elsewhere == elsewhere
    assert {"a.md", "gone.md", "skip.md", "z.md", "new\t.system/w.md", "? d.md", ".system/new.json",
            ".system/archive/one.jsonl"} <= elsewhere
    assert listing.clean() == clean
    assert listing.clean(".system/") == {p: v for p, v in clean.items() if p.startswith(".system/")}
    assert set(listing.clean(".system/")) == {".system/desk.json", ".system/tab\t.system/z.md"}
    assert repo.worktree.start_work_tree_listing(".system/").result()[0].digest == listing.digest
    (root / "another.md").write_text("untracked")  # (a changed file's bytes are the caller's to key)
    assert repo.worktree.start_work_tree_listing(".system/").result()[0].digest != listing.digest


def test_the_hooks_folder_is_where_git_says(tmp_path: Path) -> None:
    """desk.gate.installed_hooks.hooks_folder takes `.git/hooks` without asking git in a plain clone,
    and asks in a linked work tree (whose hooks are the main repository's)."""
    from desk.gate.installed_hooks import hooks_folder

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", "one")
    git(root, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    for where in (root, tmp_path / "linked"):
        said = Path(git(where, "rev-parse", "--path-format=absolute", "--git-path", "hooks").strip())
        assert hooks_folder(Git(where)).resolve() == said.resolve()


def test_blob_sha_of_large_contents_is_remembered_by_content_never_by_identity() -> None:
    import hashlib

    from desk.storage.git import blob_sha

    def expected(data: bytes) -> str:
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    big = b"x" * 200_000
    assert blob_sha(big) == expected(big)
    same = bytes(bytearray(big))  # an equal content in another object
    assert same is not big and blob_sha(same) == expected(big)
    for i in range(10):  # more than are kept; each its own answer, the oldest forgotten
        other = big[:-1] + bytes([i])
        assert blob_sha(other) == expected(other)
    assert blob_sha(big) == expected(big)


# IndexLock on a really full disk: a small tmpfs in a mount namespace of the test's own (`unshare`,
# as tests/test_faults.py's full-disk runs), filled up, then a git dir on it. Python's buffered
# write of the record fails in C with an ENOSPC that names no file.
_FULL_INDEX_LOCK = r"""
mnt=$1 python=$2; shift 2
mount -t tmpfs -o size=64k tmpfs "$mnt" || exit 99
mkdir "$mnt/.git" && dd if=/dev/zero of="$mnt/fill" bs=1k 2>/dev/null
exec "$python" -c "$@" "$mnt/.git"
"""
_TAKE_INDEX_LOCK = """
import json, os, sys
from pathlib import Path
from desk.storage.git import IndexLock
try:
    IndexLock(Path(sys.argv[1])).acquire()
    print(json.dumps(["taken"]))
except OSError as exc:
    print(json.dumps([exc.errno, exc.filename, sorted(os.listdir(sys.argv[1]))]))
"""


def test_index_lock_on_a_full_disk_names_the_file_it_could_not_write(tmp_path: Path) -> None:
    """ENOSPC from the record of desk's index.lock names `.git/desk-index-lock.json`, like every
    other full-disk error (atomic_write, Git._failure), and leaves no lock, no
    half-made record and no candidate lock file behind."""
    import errno
    import json
    import shutil
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a small tmpfs of its own")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _FULL_INDEX_LOCK, "sh",
                           str(mnt), sys.executable, _TAKE_INDEX_LOCK], capture_output=True, text=True)
    if proc.returncode == 99:
        pytest.skip(f"no tmpfs could be mounted here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [errno.ENOSPC, f"{mnt}/.git/desk-index-lock.json", []]


def test_a_started_command_gives_what_subprocess_gives_with_both_pipes_full(tmp_path: Path) -> None:
    """`Git.start` (git started, answered later): its stdout, stderr and exit status are the ones
    `subprocess.run` gets, also when git fills both pipes at once (a reader that drained one pipe
    first would wait for ever: each holds 64 KiB)."""
    root = _repo_with_a_commit(tmp_path)
    names = [f"{i:04d}-{'x' * 60}" for i in range(1500)]  # ~100 KB of stdout
    for name in names:
        (root / name).write_text("")
    git(root, "add", "-A")
    missing = [f"gone-{i:04d}-{'y' * 40}" for i in range(1500)]  # ~130 KB of stderr, one error each
    args = ("ls-files", "--error-unmatch", "--", *names, *missing)
    expected = subprocess.run(["git", *args], cwd=root, env=git_env(), capture_output=True)
    assert len(expected.stdout) > 1 << 16 and len(expected.stderr) > 1 << 16 and expected.returncode == 1
    started = Git(root).start(args, ("rev-parse", "HEAD"))
    (proc, head) = started.procs
    assert proc.communicate() == (expected.stdout, expected.stderr)
    assert proc.returncode == 1
    assert proc.communicate() == (expected.stdout, expected.stderr)  # asked again: the same answer
    assert head.communicate()[0].decode().strip() == _rev_parse_head(root)
    with pytest.raises(GitError, match="did not match any file"):
        Git(root).start(args).wait()
    assert Git(root).start(("cat-file", "--batch-check=%(objecttype)"), input=b"HEAD\nHEAD^{tree}\nnope\n"
                            ).wait() == [b"commit\ntree\nnope missing\n"]


def test_a_started_command_runs_in_the_work_tree_with_the_git_its_path_names(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = _repo_with_a_commit(tmp_path)
    (root / "sub").mkdir()
    (root / "sub" / "f.txt").write_text("x")
    git(root, "add", "-A")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # pathspecs are the work tree's, wherever desk runs
    assert Git(root).start(("ls-files", "--", "sub/")).wait() == [b"sub/f.txt\n"]
    monkeypatch.setenv("PATH", str(elsewhere))  # no git there: as Popen says it
    with pytest.raises(FileNotFoundError):
        Git(root).start(("status",))


def test_started_git_processes_are_collected_when_a_ctrl_c_lands_in_wait(tmp_path: Path) -> None:
    """A KeyboardInterrupt while `Started.wait` waits for the first of two git processes: both are
    ended and collected then (return codes read, pipes closed), none left for the garbage
    collector, whose `Popen.__del__` a later Ctrl-C could land in."""
    import signal

    root = _repo_with_a_commit(tmp_path)
    slow = ("-c", "alias.slow=!sleep 3", "slow")  # a git process that outlives the interrupt

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    started = Git(root).start(slow, ("cat-file", "--batch"), input=b"HEAD\n")
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            started.wait()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert all(proc.returncode is not None for proc in started.procs)
    assert all(pipe is None or pipe.closed for proc in started.procs for pipe in (proc.stdin, proc.stdout, proc.stderr))
