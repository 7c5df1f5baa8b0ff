"""desk.storage.objects and the in-process tree path of `Git.build_tree`: the trees desk writes
itself are byte for byte the ones git writes for the same change (`git update-index` +
`git write-tree` in an index read from the parent), from loose and from packed parents; where
desk cannot write objects itself (a SHA-256 repository) git writes them, and `git fsck` is clean."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from desk.storage.git import Git
from desk.storage.objects import folders_of, object_id, read_loose, write_loose
from tests.guard_helpers import git_env

BASE_FILES = ["a.md", "memory/x.md", "memory/y.md", "memory/sub/z.md", "projects/p/memory/m.md",
              "projects/p/notes.md", "zz/deep/er/file.txt", "memory.md", "memory-x/a.md"]
PATHS = BASE_FILES + ["memory/new.md", "memory/sub/new.md", "new/folder/file.md", "projects/q/memory/n.md",
                      "memory/ü-é.md", "memory/a b.md", "memory/sub.md", "memory0.md", "zz/deep/er/other.txt"]


def run(root: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, env={**git_env(), **(env or {})}, input=input,
                          capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape")


def make_repo(root: Path, *, fmt: str = "sha1") -> str:
    root.mkdir()
    run(root, "init", "-q", f"--object-format={fmt}")
    for rel in BASE_FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"{rel}\n")
    (root / "tool.sh").write_text("#!/bin/sh\n")
    (root / "tool.sh").chmod(0o755)
    os.symlink("a.md", root / "link")
    run(root, "add", "-A")
    run(root, "commit", "-q", "-m", "base")
    return run(root, "rev-parse", "HEAD").strip()


def git_tree(root: Path, parent: str, blobs: dict[str, str | None]) -> str:
    """What git writes for the change: an index read from `parent`, the entries set, write-tree."""
    env = {"GIT_INDEX_FILE": str(root / ".git" / "test-index")}
    run(root, "read-tree", parent, env=env)
    zero = "0" * len(parent)
    lines = "".join(f"100644 {sha}\t{p}\n" if sha else f"0 {zero}\t{p}\n" for p, sha in sorted(blobs.items()))
    run(root, "update-index", "--index-info", input=lines.encode(), env=env)
    return run(root, "write-tree", env=env).strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("objects") / "repo"
    return root, make_repo(root)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(PATHS), st.one_of(st.none(), st.binary(max_size=20)), min_size=1,
                       max_size=6))
def test_trees_written_in_process_equal_gits(repo: tuple[Path, str], change: dict[str, bytes | None]) -> None:
    root, parent = repo
    git = Git(root)
    blobs = {p: (git.write_blob(data) if data is not None else None) for p, data in change.items()}
    tree = git.build_tree(parent, blobs)
    assert not git._index_built  # built in process, not in the private index
    assert tree == git_tree(root, parent, blobs)
    assert run(root, "cat-file", "-t", tree).strip() == "tree"


def test_a_packed_parent_is_read_through_git_once_and_gives_the_same_tree(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    parent = make_repo(root)
    run(root, "gc", "-q", "--prune=now")
    assert read_loose(root / ".git/objects", parent) is None  # packed: not readable in process
    git = Git(root)
    blobs = {"memory/new.md": git.write_blob(b"new\n"), "memory/x.md": None, "zz/deep/er/file.txt": None}
    assert git.build_tree(parent, blobs) == git_tree(root, parent, blobs)
    assert not git._index_built
    assert "error" not in run(root, "fsck", "--full", "--no-progress").lower()


@pytest.mark.parametrize("blobs_of", [
    lambda blob: {"memory": blob},  # a folder replaced by a file
    lambda blob: {"a.md/inner.md": blob},  # a file replaced by a folder
], ids=["folder-to-file", "file-to-folder"])
def test_a_file_and_a_folder_trading_places_is_left_to_git(tmp_path: Path, blobs_of) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "repo"
    parent = make_repo(root)
    git = Git(root)
    blobs = blobs_of(git.write_blob(b"x\n"))
    tree = git.build_tree(parent, blobs)
    assert git._index_built
    assert tree == git_tree(root, parent, blobs)


def test_a_sha256_repository_has_its_objects_written_by_git(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    parent = make_repo(root, fmt="sha256")
    git = Git(root)
    blob = git.write_blob(b"a fact\n")
    assert len(blob) == 64 and blob == run(root, "hash-object", "--stdin", input=b"a fact\n").strip()
    blobs = {"memory/new.md": blob, "memory/x.md": None}
    tree = git.build_tree(parent, blobs)
    assert git._index_built and tree == git_tree(root, parent, blobs)
    assert not list((root / ".git/objects").glob("??/" + "?" * 38))  # no SHA-1 file written
    assert "error" not in run(root, "fsck", "--full", "--no-progress").lower()


def test_loose_objects_read_back_and_name_like_git(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    make_repo(root)
    objects = root / ".git/objects"
    sha = write_loose(objects, "blob", b"hello\n")
    assert sha == object_id("blob", b"hello\n") == run(root, "hash-object", "--stdin", input=b"hello\n").strip()
    assert read_loose(objects, sha) == ("blob", b"hello\n")
    assert write_loose(objects, "blob", b"hello\n") == sha  # written once: a no-op
    path = objects / sha[:2] / sha[2:]
    path.chmod(0o644)
    path.write_bytes(b"not zlib")  # damaged: not trusted, git is asked instead
    assert read_loose(objects, sha) is None
    assert read_loose(objects, "0" * 40) is None


def test_folders_of_lists_every_folder_parents_first() -> None:
    assert folders_of(["a/b/c.md", "a/d.md", "e.md"]) == ["", "a/", "a/b/"]


T = 1796096312  # a fixed commit time


@pytest.mark.parametrize("tz, name, in_process", [
    ("UTC0", "Ada Lovelace", True),
    ("XYZ-05:30", "Ada Lovelace", True),  # POSIX TZ: five and a half hours east, +0530
    ("XYZ+03", "Ada Lovelace", True),  # -0300
    ("UTC0", "Ada L.", False),  # git trims the trailing dot: git writes it
    ("UTC0", "Ada <x> Lovelace", False),  # git drops the angle brackets
], ids=["utc", "east", "west", "trimmed", "brackets"])
def test_commit_objects_written_in_process_equal_git_commit_trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  tz: str, name: str, in_process: bool) -> None:
    root = tmp_path / "repo"
    parent = make_repo(root)
    tree = run(root, "rev-parse", "HEAD^{tree}").strip()
    monkeypatch.setenv("TZ", tz)
    for key, value in {"GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name, "GIT_AUTHOR_EMAIL": "ada@example.org",
                       "GIT_COMMITTER_EMAIL": "ada@example.org"}.items():
        monkeypatch.setenv(key, value)
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.delenv(key, raising=False)
    git = Git(root)
    assert (git._plain_idents("AUTHOR") is not None) == in_process
    message = "remember: x\n\nDesk-Op: remember\n"
    ours = git.commit_tree(tree, parent, message, now=T)
    offset = {"UTC0": "+0000", "XYZ-05:30": "+0530", "XYZ+03": "-0300"}[tz]
    env = {"TZ": tz, "GIT_AUTHOR_DATE": f"{T} {offset}", "GIT_COMMITTER_DATE": f"{T} {offset}",
           "GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name, "GIT_AUTHOR_EMAIL": "ada@example.org",
           "GIT_COMMITTER_EMAIL": "ada@example.org"}
    if in_process:  # git's own object for the same commit, at the same time: the same id
        theirs = run(root, "commit-tree", tree, "-p", parent, "-F", "-", input=message.encode(), env=env).strip()
        assert ours == theirs
    assert f" {T} " in run(root, "cat-file", "-p", ours) or not in_process
    assert "error" not in run(root, "fsck", "--full", "--no-progress").lower()


def test_a_commit_date_from_the_environment_is_left_to_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    parent = make_repo(root)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2001-02-03T04:05:06+0100")
    git = Git(root)
    assert git._plain_idents("COMMITTER") is None
    sha = git.commit_tree(run(root, "rev-parse", "HEAD^{tree}").strip(), parent, "x\n")
    assert "981169506 +0100" in run(root, "cat-file", "-p", sha)


def test_loose_objects_take_gits_configured_compression(tmp_path: Path) -> None:
    """git writes loose objects at core.looseCompression (else core.compression, else 1): so does
    desk. zlib's header names the level band: 0x01 for 0-1, 0xDA for 7-9."""
    from desk.layout import DeskFolder
    from desk.memory.operations import remember
    from desk.scaffold import init_desk

    init_desk(tmp_path / "desk")
    desk = DeskFolder(tmp_path / "desk")

    def header_of_head_commit() -> bytes:
        sha = desk.git.head() or ""
        return (desk.git_dir / "objects" / sha[:2] / sha[2:]).read_bytes()[:2]

    remember(desk, "plain", type="fact", description="one", body="One fact.")
    assert header_of_head_commit() == b"\x78\x01"
    subprocess.run(["git", "config", "core.looseCompression", "9"], cwd=desk.root, check=True)
    desk = DeskFolder(desk.root)  # a new process would read the config anew
    remember(desk, "packed", type="fact", description="two", body="Two facts.")
    assert header_of_head_commit() == b"\x78\xda"
    assert subprocess.run(["git", "fsck", "--strict"], cwd=desk.root, capture_output=True).returncode == 0


def _large_tree(count: int, extra: bytes = b"") -> bytes:
    from desk.storage.hashing import sha1_hex
    from desk.storage.objects import entry_key, make_entry

    names = [b"m%06d.md" % i for i in range(count)] + ([extra] if extra else [])
    entries = [make_entry(b"100644", name, sha1_hex(name)) for name in names]
    return b"".join(sorted(entries, key=entry_key))


def _pieces(record: dict[str, object]) -> list[tuple[int, ...]]:
    """A segments record's `(piece length, piece CRC-32, segment length, segment CRC-32)` quads."""
    from array import array

    flat = array("I")
    flat.frombytes(bytes.fromhex(str(record["pieces"])))
    return [tuple(flat[i:i + 4]) for i in range(0, len(flat), 4)]


def _flat(pieces: list[tuple[int, ...]]) -> str:
    from array import array

    return array("I", [n for piece in pieces for n in piece]).tobytes().hex()


def _git_reads(root: Path, sha: str) -> bytes:
    return subprocess.run(["git", "cat-file", "tree", sha], cwd=root, check=True, capture_output=True).stdout


def _repo_objects_and_record(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A new repository, its objects folder and where desk keeps the segments of its last tree."""
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root, root / ".git" / "objects", root / ".git" / "desk-tree-segments.json"


def test_large_trees_reuse_the_last_ones_compressed_segments(tmp_path: Path) -> None:
    """A large tree is compressed in content-cut segments; the next one, one entry different,
    copies every segment it shares; git reads both, fsck is clean."""
    import json

    root, objects, record = _repo_objects_and_record(tmp_path)
    first = _large_tree(3000)
    one = write_loose(objects, "tree", first, segments=record)
    before = json.loads(record.read_text())
    assert before["sha"] == one and len(_pieces(before)) > 20
    second = _large_tree(3000, b"m001500x.md")
    two = write_loose(objects, "tree", second, segments=record)
    after = json.loads(record.read_text())
    assert after["sha"] == two
    shared = set(_pieces(before)) & set(_pieces(after))
    assert len(shared) >= len(_pieces(after)) - 2  # all but the piece that gained the entry
    old_file, new_file = ((objects / s[:2] / s[2:]).read_bytes() for s in (one, two))
    start = 2 + before["head"]  # past the zlib header and the object header's own segment
    segment = old_file[start:start + _pieces(before)[0][2]]
    assert _pieces(before)[0] in shared and segment in new_file  # copied, not compressed again
    assert _git_reads(root, one) == first and _git_reads(root, two) == second
    assert object_id("tree", second) == two
    assert subprocess.run(["git", "fsck", "--strict"], cwd=root, capture_output=True).returncode == 0


@pytest.mark.parametrize("damage", ["record", "object"])
def test_a_record_that_does_not_describe_the_object_is_not_used(tmp_path: Path, damage: str) -> None:
    """A record naming wrong segment lengths (here: shifted by one) with the object's own size and
    CRC, or an object file changed since, never yields a broken object: the stream is checked
    before it is written, else the tree is compressed whole."""
    import json
    import zlib

    root, objects, record = _repo_objects_and_record(tmp_path)
    one = write_loose(objects, "tree", _large_tree(2000), segments=record)
    kept = json.loads(record.read_text())
    if damage == "record":
        pieces = _pieces(kept)
        pieces[3] = (*pieces[3][:2], pieces[3][2] + 1, pieces[3][3])
        pieces[4] = (*pieces[4][:2], pieces[4][2] - 1, pieces[4][3])
        kept["pieces"] = _flat(pieces)
        record.write_text(json.dumps(kept))
    else:
        path = objects / one[:2] / one[2:]
        path.chmod(0o644)
        path.write_bytes(zlib.compress(zlib.decompress(path.read_bytes()), 9))
    second = _large_tree(2000, b"m000999x.md")
    two = write_loose(objects, "tree", second, segments=record)
    assert _git_reads(root, two) == second
    assert subprocess.run(["git", "fsck", "--strict"], cwd=root, capture_output=True).returncode == 0


def test_a_record_that_lies_with_a_good_checksum_is_caught_by_the_segments_crc(tmp_path: Path) -> None:
    """With the object the record describes at hand (`previous`), pieces are compared with its
    bytes and segments with their CRC-32 instead of decompressing the new stream: a record whose
    segment lengths are wrong but whose own checksum was made to fit still never yields a broken
    object, and the segments it describes rightly are still reused."""
    import json

    from desk.storage.objects import _record_check

    root, objects, record = _repo_objects_and_record(tmp_path)
    first = _large_tree(2000)
    one = write_loose(objects, "tree", first, segments=record)
    kept = json.loads(record.read_text())
    pieces = _pieces(kept)
    pieces[3] = (*pieces[3][:2], pieces[3][2] + 1, pieces[3][3])  # every later segment shifted by a byte
    kept["pieces"] = _flat(pieces)
    kept["check"] = _record_check(kept)
    record.write_text(json.dumps(kept))
    second = _large_tree(2000, b"m001999x.md")
    two = write_loose(objects, "tree", second, segments=record, previous=(one, first))
    assert _git_reads(root, two) == second
    assert subprocess.run(["git", "fsck", "--strict"], cwd=root, capture_output=True).returncode == 0
    old_file, new_file = ((objects / s[:2] / s[2:]).read_bytes() for s in (one, two))
    start = 2 + kept["head"]
    assert old_file[start:start + pieces[0][2]] in new_file  # a segment described rightly: reused


def test_a_record_that_names_another_piece_is_caught_by_comparing_the_bytes(tmp_path: Path) -> None:
    """A record (checksum made to fit) claiming one of the old segments holds the piece that
    actually changed: the piece is compared with the previous object's bytes, so the old segment
    is not copied in its place."""
    import json
    import zlib

    from desk.storage.objects import _CUTS, _record_check
    from desk.storage.objects import _pieces as cut

    root, objects, record = _repo_objects_and_record(tmp_path)
    first = _large_tree(2000)
    one = write_loose(objects, "tree", first, segments=record)
    second = _large_tree(2000, b"m000002x.md")  # into the first piece
    start = len(b"tree %d\0" % len(second))
    old_pieces = set(cut(b"tree %d\0" % len(first) + first, start, _CUTS["tree"]))
    changed = next(p for p in cut(b"tree %d\0" % len(second) + second, start, _CUTS["tree"]) if p not in old_pieces)
    kept = json.loads(record.read_text())
    pieces = _pieces(kept)
    pieces[0] = (len(changed), zlib.crc32(changed), *pieces[0][2:])  # "segment 0 holds the changed piece"
    kept["pieces"] = _flat(pieces)
    kept["check"] = _record_check(kept)
    record.write_text(json.dumps(kept))
    two = write_loose(objects, "tree", second, segments=record, previous=(one, first))
    assert _git_reads(root, two) == second
    assert subprocess.run(["git", "fsck", "--strict"], cwd=root, capture_output=True).returncode == 0


def _index_text(names: list[str]) -> bytes:
    lines = [f"- [{n}](memory/{n}.md) — what {n} is about\n" for n in sorted(names)]
    return ("# MEMORY.md\n\n" + "".join(lines)).encode()


def test_a_spliced_large_blob_reuses_the_last_ones_segments_without_decompressing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMORY.md, a line spliced in: its blob copies the segments of HEAD's MEMORY.md blob it
    shares (checked against HEAD's bytes, not by decompressing); git reads it, fsck is clean."""
    import json
    import zlib

    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git = Git(root)
    names = [f"m{i:06d}" for i in range(1500)] + [f"{w}-{v}" for w in ("dark", "tabs", "coffee", "git")
                                                 for v in ("mode", "setting", "team", "habit", "note")]
    first = _index_text(names)
    one = git.write_blob(first)
    record = root / ".git" / "desk-blob-segments.json"
    before = json.loads(record.read_text())
    assert before["sha"] == one and len(_pieces(before)) > 8
    second = _index_text([*names, "m000750a"])
    decompressed: list[int] = []
    real = zlib.decompress
    monkeypatch.setattr(zlib, "decompress", lambda data, *a: decompressed.append(1) or real(data, *a))
    two = git.write_blob(second, first)
    monkeypatch.undo()
    after = json.loads(record.read_text())
    assert after["sha"] == two and not decompressed
    assert len(set(_pieces(before)) & set(_pieces(after))) >= len(_pieces(after)) - 2
    assert run(root, "cat-file", "blob", two).encode() == second
    assert subprocess.run(["git", "fsck", "--strict"], cwd=root, capture_output=True).returncode == 0
    # Without HEAD's bytes (or with bytes the record does not describe) the stream is checked whole.
    three = git.write_blob(_index_text([*names, "m000750b"]), b"x" * 70000)
    assert run(root, "cat-file", "blob", three).encode() == _index_text([*names, "m000750b"])


def test_a_large_blob_that_does_not_cut_is_compressed_whole_and_keeps_the_record(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git = Git(root)
    git.write_blob(_index_text([f"m{i:06d}" for i in range(1500)]))
    record = root / ".git" / "desk-blob-segments.json"
    kept = record.read_bytes()
    plain = b"no links here\n" * 10000
    sha = git.write_blob(plain)
    assert record.read_bytes() == kept
    assert run(root, "cat-file", "blob", sha).encode() == plain


# -- the person's index compared with the trees build_tree read (Git.index_changes_at) ----------

STAGED = ["a.md", "memory/x.md", "memory/y.md", "memory/sub/z.md", "memory/new.md", "memory.md",
          "memory/sub", "tool.sh", "link", "zz/deep/er/file.txt", "memory/ü-é.md"]


def stage(root: Path, index: Path, how: str, path: str, blob: str) -> None:
    """Change the index file `index` at `path` as a person's git could."""
    env = {"GIT_INDEX_FILE": str(index)}
    zero = "0" * 40
    lines = {"blob": f"100644 {blob}\t{path}\n",
             "exec": f"100755 {blob}\t{path}\n",
             "link": f"120000 {blob}\t{path}\n",
             "remove": f"0 {zero}\t{path}\n",
             "unmerged": f"0 {zero}\t{path}\n100644 {blob} 1\t{path}\n100644 {blob} 2\t{path}\n",
             "below": f"100644 {blob}\t{path}/inner.md\n"}[how]
    run(root, "update-index", "--index-info", input=lines.encode(), env=env)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example([("link", "memory/x.md"), ("exec", "memory/y.md"), ("remove", "a.md"), ("blob", "memory/new.md")],
         ["memory/x.md", "a.md", "memory/new.md"])
@example([("blob", "memory/x.md"), ("unmerged", "memory/y.md")], ["memory/x.md"])
@example([("below", "memory/x.md")], ["memory/x.md"])
@given(st.lists(st.tuples(st.sampled_from(["blob", "exec", "link", "remove", "unmerged", "below"]),
                          st.sampled_from(STAGED)), max_size=4),
       st.lists(st.sampled_from(STAGED), min_size=1, max_size=6))
def test_changes_from_the_trees_read_equal_diff_index(repo: tuple[Path, str], staged: list[tuple[str, str]],
                                                       asked: list[str]) -> None:
    root, parent = repo
    git = Git(root)
    index = root / ".git" / "test-person-index"
    run(root, "read-tree", parent, env={"GIT_INDEX_FILE": str(index)})
    other = git.write_blob(b"staged by a person\n")
    for how, path in staged:
        stage(root, index, how, path, other)
    git.build_tree(parent, {p: git.write_blob(b"desk's\n") for p in asked if p != "memory/sub"})
    paths = sorted({*asked, "MEMORY.md", "memory/y.md"})
    assert git.index_changes_at(index, parent, paths) == git.index_changes(index, parent, paths)


def test_changes_are_read_from_the_index_alone_after_build_tree(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    parent = make_repo(root)
    git = Git(root)
    other = git.write_blob(b"staged by a person\n")
    index = root / ".git" / "index"
    stage(root, index, "blob", "memory/x.md", other)
    stage(root, index, "exec", "a.md", run(root, "rev-parse", "HEAD:a.md").strip())
    expected = git.index_changes(index, parent, ["a.md", "memory/x.md", "memory/y.md"])
    git.build_tree(parent, {"memory/y.md": git.write_blob(b"desk's\n")})
    walked: list[str] = []
    monkeypatch.setattr(Git, "index_changes", lambda self, *a: walked.append("diff-index") or [])
    assert git.index_changes_at(index, parent, ["a.md", "memory/x.md", "memory/y.md"]) == expected
    assert [c.status for c in expected] == ["M", "M"] and not walked  # no tree walked by git
    # A folder build_tree did not read is read in process too.
    assert git.index_changes_at(index, parent, ["zz/deep/er/file.txt"]) == [] and not walked
    # A folder where a file is asked, or another commit than the one build_tree read: git walks it.
    git.index_changes_at(index, parent, ["memory/sub"])
    git.build_tree(parent, {"memory/y.md": None})
    other_commit = run(root, "commit-tree", parent + "^{tree}", "-m", "x").strip()
    git.index_changes_at(index, other_commit, ["memory/x.md"])
    assert walked == ["diff-index", "diff-index"]


def _large_folder_commit(root: Path, count: int) -> str:
    """A commit whose memory/ holds `count` files (all one blob): a tree of ~40 bytes an entry."""
    run(root, "init", "-q")
    blob = run(root, "hash-object", "-w", "--stdin", input=b"same\n").strip()
    lines = "".join(f"100644 {blob}\tmemory/m{i:06d}.md\n" for i in range(count))
    env = {"GIT_INDEX_FILE": str(root / ".git" / "test-index")}
    run(root, "update-index", "--index-info", input=lines.encode(), env=env)
    tree = run(root, "write-tree", env=env).strip()
    return run(root, "commit-tree", tree, "-m", "large", env=env).strip()


@pytest.mark.parametrize("kept", ["as written", "damaged", "another tree's"])
def test_the_last_large_tree_is_read_back_uncompressed_only_when_it_is_that_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: str) -> None:
    """memory/'s tree, once desk wrote it, is read at the next commit from `.git/desk-tree-kept`
    (no inflating); a kept file that is damaged, or another tree's, is not used."""
    import desk.storage.git as git_module

    root = tmp_path / "repo"
    root.mkdir()
    parent = _large_folder_commit(root, 2000)
    git = Git(root)
    blob = git.write_blob(b"desk's\n")
    first = git.build_tree(parent, {"memory/a-new.md": blob})
    second_parent = run(root, "commit-tree", first, "-p", parent, "-m", "desk").strip()
    path = root / ".git" / "desk-tree-kept"
    assert path.read_bytes().startswith(run(root, "rev-parse", f"{first}:memory").strip().encode())
    if kept == "damaged":
        data = bytearray(path.read_bytes())
        data[-30] ^= 1
        path.write_bytes(bytes(data))
    elif kept == "another tree's":
        git.build_tree(parent, {"memory/other.md": blob})  # keeps the tree of another change
    inflated: list[str] = []
    real = git_module.read_loose
    monkeypatch.setattr(git_module, "read_loose", lambda objects, sha: inflated.append(sha) or real(objects, sha))
    change = {"memory/b-new.md": blob, "memory/m000001.md": None}
    tree = Git(root).build_tree(second_parent, change)
    memory_tree = run(root, "rev-parse", f"{second_parent}:memory").strip()
    assert (memory_tree in inflated) == (kept != "as written")
    assert tree == git_tree(root, second_parent, change)


def test_a_tree_that_cannot_be_kept_is_still_committed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    parent = _large_folder_commit(root, 2000)
    (root / ".git" / "desk-tree-kept").mkdir()  # in the way: the file cannot be written
    git = Git(root)
    change = {"memory/a-new.md": git.write_blob(b"desk's\n")}
    assert git.build_tree(parent, change) == git_tree(root, parent, change)
    assert not list((root / ".git").glob("desk-tree-kept.*.tmp"))


SPLICED = ["memory/a.md", "memory/m000000.md", "memory/m000777.md", "memory/m001999.md", "memory/zz.md",
           "memory/m000500", "memory/m000500.md.bak", "memory/m000500-x.md", "memory/m0005000.md",
           "memory/m000500.md/under", "memory/sub/new.md", "memory/l\u00e9\r.md", "memory/b\u200b.md",
           "memory.md", "memory-x.md"]


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("large") / "repo"
    root.mkdir()
    return root, _large_folder_commit(root, 2000)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.dictionaries(st.sampled_from(SPLICED), st.one_of(st.none(), st.binary(max_size=8)),
                                min_size=1, max_size=3), min_size=2, max_size=4))
@example([{"memory/a.md": b"first"}, {"memory/zz.md": b"last"}, {"memory/a.md": None, "memory/m000000.md": None}])
def test_a_chain_of_commits_splices_memorys_kept_tree_as_git_builds_it(
        large: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, changes: list[dict[str, bytes | None]]) -> None:
    """Each commit after the first finds memory/'s 2,000 entries in desk's kept copy with its
    checkpoints and splices the change in, without splitting the tree; every tree is git's own."""
    import desk.storage.git as git_module

    root, parent = large
    split: list[int] = []
    real = git_module.tree_entries
    monkeypatch.setattr(git_module, "tree_entries", lambda content: split.append(len(content)) or real(content))
    kept = root / ".git" / "desk-tree-kept"
    for step, change in enumerate(changes):
        git = Git(root)
        blobs = {p: (git.write_blob(data) if data is not None else None) for p, data in change.items()}
        # desk's kept copy is the parent's memory/ (not when git built it: a file crossed a folder)
        memory = run(root, "rev-parse", f"{parent}:memory").strip()
        spliced = kept.exists() and kept.read_bytes()[:40].decode() == memory
        split.clear()
        tree = git.build_tree(parent, blobs)
        assert tree == git_tree(root, parent, blobs)
        if spliced and not git._index_built and any(p.startswith("memory/") for p in change):
            assert max(split, default=0) < 20_000  # memory/'s ~80 KB tree came spliced, not split
        parent = run(root, "commit-tree", tree, "-p", parent, "-m", f"step {step}").strip()


def test_kept_checkpoints_are_used_only_under_their_own_checksum(tmp_path: Path) -> None:
    from desk.storage.objects import keep_raw, read_kept_tree

    content = b"".join(b"100644 n%04d.md\0" % i + bytes(20) for i in range(300))
    sha = object_id("tree", content)
    path = tmp_path / "kept"
    keep_raw(path, sha, content, [0, 640, 1280])
    assert read_kept_tree(path, "tree", sha) == (content, [0, 640, 1280])
    data = path.read_bytes()
    head, rest = data.split(b"\n", 1)
    path.write_bytes(head.replace(b"80020000", b"81020000") + b"\n" + rest)  # 640 -> 641, same checksum
    assert read_kept_tree(path, "tree", sha) == (content, None)
    path.write_bytes(head + b"\n" + rest[:-1] + b"\1")  # the content damaged: not used at all
    assert read_kept_tree(path, "tree", sha) is None
    keep_raw(path, sha, content)  # no checkpoints: the content alone
    assert read_kept_tree(path, "tree", sha) == (content, None)


def test_checkpoints_that_are_not_at_entries_fall_back_to_splitting_the_tree(large: tuple[Path, str]) -> None:
    """Checkpoints kept under a good checksum but wrong (a bug of an older desk) never write a
    wrong tree: the block between two does not split into entries, and the tree is split whole."""
    from desk.storage.objects import keep_raw, read_kept_tree

    root, parent = large
    git = Git(root)
    blob = git.write_blob(b"checkpoints\n")
    first = git.build_tree(parent, {"memory/m000001.md": blob})
    memory = run(root, "rev-parse", f"{first}:memory").strip()
    path = root / ".git" / "desk-tree-kept"
    kept = read_kept_tree(path, "tree", memory)
    assert kept is not None and kept[1] is not None and len(kept[1]) > 2
    keep_raw(path, memory, kept[0], [0, *(c + 3 for c in kept[1][1:])])
    second = run(root, "commit-tree", first, "-p", parent, "-m", "desk").strip()
    change = {"memory/m001500.md": None, "memory/m0015000.md": blob}
    assert Git(root).build_tree(second, change) == git_tree(root, second, change)


CUT_NAMES = [f"m{i:06d}" for i in range(1200)] + [f"{w}-{v}" for w in ("dark", "tabs", "coffee", "git")
                                                  for v in ("mode", "setting", "team", "habit", "note")]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(CUT_NAMES) - 1), st.sampled_from(["", "a", "-mode", "-team](", "x\n"]),
                          st.booleans()), min_size=1, max_size=4))
@example([(0, "a", True), (len(CUT_NAMES) - 1, "-mode", True), (5, "", False)])
def test_pieces_shared_at_both_ends_are_the_pieces_a_fresh_cut_makes(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        edits: list[tuple[int, str, bool]]) -> None:
    """A chain of MEMORY.md blobs, each one spliced from the last (a line added, changed or taken
    out, at the start, the end or between cuts, text that makes or breaks a cut): the pieces taken
    whole from the record and those cut around the change are exactly the pieces a fresh cut of the
    new blob makes, and git reads every blob back."""
    import json
    import zlib

    import desk.storage.objects as objects_module
    from desk.storage.objects import _CUTS
    from desk.storage.objects import _pieces as cut

    whole: list[int] = []
    monkeypatch.setattr(objects_module, "_pieces", lambda raw, *a: whole.append(len(raw)) or cut(raw, *a))
    root = tmp_path_factory.mktemp("cuts") / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    git = Git(root)
    names = list(CUT_NAMES)
    content = _index_text(names)
    git.write_blob(content)
    record = root / ".git" / "desk-blob-segments.json"
    for at, text, add in edits:
        if add:
            names.append(names[at % len(names)] + text)
        else:
            names.remove(names[at % len(names)])
        new = _index_text(names)
        sha = git.write_blob(new, content)
        raw = b"blob %d\0" % len(new) + new
        fresh = cut(raw, len(raw) - len(new), _CUTS["blob"])
        kept = json.loads(record.read_text())
        assert kept["sha"] == sha
        assert [(len(p), zlib.crc32(p)) for p in fresh] == [q[:2] for q in _pieces(kept)]
        assert run(root, "cat-file", "blob", sha).encode() == new
        content = new
    assert len(whole) == 1  # the first blob only: every later one cut around its change alone


def test_a_piece_whose_cut_the_new_scan_passes_over_is_cut_again(tmp_path: Path) -> None:
    """The bytes before a shared piece are the same, but a longer run of NULs before them makes the
    new scan pair its matches differently, so no cut falls where the piece began: that piece is
    not taken whole; the pieces are still those a fresh cut makes."""
    import json
    import zlib

    from desk.storage.objects import _CUTS
    from desk.storage.objects import _pieces as cut

    root, objects, record = _repo_objects_and_record(tmp_path)
    chunks = [bytes([65 + i % 26]) * 1000 for i in range(100)]
    first = b"\0\x01".join(chunks[:50]) + b"a" + b"\0" * 9 + b"\x01" + b"\0\x01".join(chunks[50:])
    second = first.replace(b"a" + b"\0" * 9, b"\0" * 10)  # one NUL more, the 8 bytes before the cut alike
    one = write_loose(objects, "tree", first, segments=record)
    two = write_loose(objects, "tree", second, segments=record, previous=(one, first))
    raw = b"tree %d\0" % len(second) + second
    fresh = cut(raw, len(raw) - len(second), _CUTS["tree"])
    assert [(len(p), zlib.crc32(p)) for p in fresh] == [q[:2] for q in _pieces(json.loads(record.read_text()))]
    assert zlib.decompress((objects / two[:2] / two[2:]).read_bytes()) == raw
