"""git's index read and patched in process (desk.storage.index_file): byte for byte what git's own
`update-index` writes, git's racy-clean rule kept, and every format desk does not patch left to git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from desk.storage.atomic import atomic_write
from desk.storage.git import blob_sha
from desk.storage.index_file import WALK_RECORD, keep_walk, read_index
from tests.conftest import git

PAST = 1_700_000_000  # files and index dated well before the test: no entry is racily clean


def _repo(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        os.utime(root / rel, (PAST, PAST))
    git(root, "add", "-A")
    git(root, "write-tree")  # the index keeps cached trees (its TREE extension) for every folder
    os.utime(root / ".git/index", (PAST + 10, PAST + 10))
    return root


def _by_git(root: Path, paths: list[str]) -> bytes:
    """What `git update-index --add --remove` makes of the same index (in a copy)."""
    copy = root.parent / "by-git.index"
    shutil.copy2(root / ".git/index", copy)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    subprocess.run(["git", "update-index", "--add", "--remove", "--", *paths], cwd=root, check=True,
                   env={**env, "GIT_INDEX_FILE": str(copy)})
    return copy.read_bytes()


FILES = {"MEMORY.md": b"# index\n", "memory/alpha.md": b"alpha\n", "memory/gamma.md": b"gamma\n",
         "notes/n.md": b"note\n", "z.txt": b"z\n"}


def test_patched_index_is_what_git_update_index_writes(tmp_path: Path) -> None:
    root = _repo(tmp_path, FILES)
    parsed = read_index(root / ".git/index")
    assert parsed is not None and [e for s, e in parsed.extensions] and parsed.racy == []
    changes = {}
    for rel, data in (("memory/beta.md", b"beta, a new file between two\n"),
                      ("MEMORY.md", b"# index\n- beta\n"), ("memory/zeta.md", b"last in its folder\n")):
        written = atomic_write(root / rel, data)
        changes[rel] = (blob_sha(data), os.lstat(root / rel))
        assert written.st_ino == changes[rel][1].st_ino
    (root / "memory/gamma.md").unlink()
    changes["memory/gamma.md"] = None
    patched = parsed.patched(changes)
    assert patched == _by_git(root, sorted(changes))
    (root / ".git/index").write_bytes(patched)
    assert git(root, "diff", "--name-only") == ""  # every entry as the work tree holds it
    assert git(root, "ls-files").split() == ["MEMORY.md", "memory/alpha.md", "memory/beta.md",
                                             "memory/zeta.md", "notes/n.md", "z.txt"]


def test_the_cached_trees_of_untouched_folders_are_kept(tmp_path: Path) -> None:
    root = _repo(tmp_path, FILES)
    parsed = read_index(root / ".git/index")
    assert parsed is not None
    data = b"alpha, changed\n"
    atomic_write(root / "memory/alpha.md", data)
    assert git(root, "hash-object", "-w", "memory/alpha.md").strip() == blob_sha(data)
    patched = parsed.patched({"memory/alpha.md": (blob_sha(data), os.lstat(root / "memory/alpha.md"))})
    assert patched is not None
    (root / ".git/index").write_bytes(patched)
    tree = next(content for signature, content in read_index(root / ".git/index").extensions  # type: ignore[union-attr]
                if signature == b"TREE")
    assert tree.startswith(b"\0-1 ") and b"memory\0-1 0\n" in tree and b"notes\x001 0\n" in tree
    # git builds the next commit's trees from the cached ones: a stale memory/ would commit the old file
    tree_id = git(root, "write-tree").strip()
    assert git(root, "rev-parse", f"{tree_id}:memory/alpha.md").strip() == blob_sha(data)
    assert git(root, "diff", "--name-only") == ""


def test_a_racily_clean_entry_is_smudged_so_git_still_sees_a_same_size_edit(tmp_path: Path) -> None:
    # git compares an entry's stat data with the file; an edit in the same second the index was
    # written, keeping the size, looks clean in any index written later unless the entry is smudged.
    root = _repo(tmp_path, FILES)
    git(root, "config", "core.trustctime", "false")  # the ctime would give the edit away otherwise
    index = root / ".git/index"
    stamp = os.stat(index).st_mtime_ns
    target = root / "notes/n.md"
    os.utime(target, ns=(stamp, stamp))
    git(root, "update-index", "--", "notes/n.md")  # notes/n.md entry: mtime == the index's own
    os.utime(index, ns=(stamp, stamp))
    target.write_bytes(b"NOTE\n")  # the same size, in place (same inode), in the same instant
    os.utime(target, ns=(stamp, stamp))
    parsed = read_index(index)
    assert parsed is not None and len(parsed.racy) == 1
    data = b"alpha, changed\n"
    atomic_write(root / "memory/alpha.md", data)
    patched = parsed.patched({"memory/alpha.md": (blob_sha(data), os.lstat(root / "memory/alpha.md"))})
    assert patched is not None
    index.write_bytes(patched)
    os.utime(index, ns=(stamp + 5 * 10**9, stamp + 5 * 10**9))  # the index written later
    assert git(root, "diff", "--name-only") == "notes/n.md\n"


def test_an_entry_that_is_not_a_plain_file_is_left_to_git(tmp_path: Path) -> None:
    root = _repo(tmp_path, {**FILES, "tool.sh": b"#!/bin/sh\n"})
    git(root, "update-index", "--chmod=+x", "tool.sh")
    git(root, "update-index", "--skip-worktree", "z.txt")
    parsed = read_index(root / ".git/index")
    assert parsed is not None
    st = os.lstat(root / "MEMORY.md")
    assert parsed.patched({"tool.sh": (blob_sha(b"x"), st)}) is None  # mode 100755
    assert parsed.patched({"z.txt": (blob_sha(b"x"), st)}) is None  # extended flags
    assert parsed.patched({"memory": (blob_sha(b"x"), st)}) is None  # a folder in the index
    assert parsed.patched({"z.txt/under": (blob_sha(b"x"), st)}) is None  # under a file
    assert [(e.path, e.stage, e.extended) for e in parsed.entries("z.txt")] == [("z.txt", 0, True)]
    assert parsed.crossed("memory") and parsed.crossed("z.txt/x") and not parsed.crossed("memory/new.md")


@pytest.mark.parametrize("how", ["version 4", "split index", "untracked cache", "no checksum",
                                 "unknown extension", "truncated", "not an index", "absent"])
def test_formats_desk_does_not_patch_are_left_to_git(tmp_path: Path, how: str) -> None:
    root = _repo(tmp_path, FILES)
    index = root / ".git/index"
    if how == "version 4":
        git(root, "update-index", "--index-version", "4")
    elif how == "split index":
        git(root, "update-index", "--split-index")
    elif how == "untracked cache":
        git(root, "update-index", "--untracked-cache")
        git(root, "status", "--porcelain")
    elif how == "no checksum":  # index.skipHash (git 2.40): twenty zero bytes
        index.write_bytes(index.read_bytes()[:-20] + bytes(20))
    elif how == "unknown extension":
        data = index.read_bytes()[:-20]
        index.write_bytes(data + b"ZZZZ\0\0\0\x02hi" + bytes(20))
    elif how == "truncated":
        index.write_bytes(index.read_bytes()[:200])
    elif how == "not an index":
        index.write_bytes(b"PK\x03\x04" + bytes(64))
    else:
        index.unlink()
    assert read_index(index) is None


def test_hostile_names_are_found_exactly(tmp_path: Path) -> None:
    # Names that hold another's as a suffix, a newline, a carriage return, a space, non-ASCII bytes:
    # each is found as itself, and an insertion lands at git's sorted place.
    files = {"memory/a.md": b"1\n", "x memory/a.md": b"2\n", "memory/a.md.bak": b"3\n",
             "memory/l\u00e9\r\n.md": b"4\n", "memory/b\u200b.md": b"5\n"}
    root = _repo(tmp_path, files)
    parsed = read_index(root / ".git/index")
    assert parsed is not None
    for rel, data in files.items():
        assert [e.blob for e in parsed.entries(rel)] == [blob_sha(data)]
    assert parsed.entries("memory/a") == [] and parsed.entries("a.md") == []
    data = b"between\n"
    atomic_write(root / "memory/a.mc", data)
    changes = {"memory/a.mc": (blob_sha(data), os.lstat(root / "memory/a.mc"))}
    assert parsed.patched(changes) == _by_git(root, ["memory/a.mc"])


def _write(root: Path, rel: str, data: bytes) -> tuple[str, os.stat_result]:
    """`rel` written as desk writes it, its blob stored: the blob id and stat data to index."""
    atomic_write(root / rel, data)
    subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, input=data, check=True, capture_output=True)
    return blob_sha(data), os.lstat(root / rel)


def test_the_walk_record_of_desks_own_index_stands_in_for_a_walk(tmp_path: Path) -> None:
    # 300 entries: several checkpoints, lookups between them, insertions before and after them.
    root = _repo(tmp_path, {f"memory/m{i:03d}.md": b"%d\n" % i for i in range(0, 600, 2)})
    index, record = root / ".git/index", root / ".git" / WALK_RECORD
    for round_, names in enumerate((["m001", "m599"], ["m127", "m128"], ["m000", "m300"])):
        walked = read_index(index)
        recorded = read_index(index, record)
        assert walked is not None and recorded is not None
        assert recorded.since == [0, 2, 3][round_]  # entries put in since the walk: the record was used
        changes = {f"memory/{n}.md": _write(root, f"memory/{n}.md", f"{n} round {round_}\n".encode())
                   for n in names}
        patch = recorded.patch(changes, root)
        assert patch is not None and patch.data == walked.patched(changes, root) == _by_git(root, sorted(changes))
        for rel in ("memory/m000.md", "memory/m298.md", "memory/m599.md", "memory/zzz.md"):
            assert [e.blob for e in recorded.entries(rel)] == [e.blob for e in walked.entries(rel)]
        index.write_bytes(patch.data)
        keep_walk(record, patch, os.stat(index))
    (root / "memory/new.md").write_bytes(b"a person's\n")
    git(root, "update-index", "--add", "memory/new.md")  # a person's git writes the index: not desk's
    assert read_index(index, record).since == 0  # type: ignore[union-attr]


def test_an_entry_desk_wrote_in_the_indexs_own_second_stays_racy_through_the_record(tmp_path: Path) -> None:
    root = _repo(tmp_path, FILES)
    git(root, "config", "core.trustctime", "false")
    index, record = root / ".git/index", root / ".git" / WALK_RECORD
    parsed = read_index(index)
    assert parsed is not None
    blob, st = _write(root, "notes/n.md", b"note\n".upper())
    patch = parsed.patch({"notes/n.md": (blob, st)})
    assert patch is not None
    index.write_bytes(patch.data)
    os.utime(index, ns=(st.st_mtime_ns, st.st_mtime_ns))  # written in the entry's own second
    keep_walk(record, patch, os.stat(index))
    target = root / "notes/n.md"
    with open(target, "r+b") as edit:  # a same-size edit in place, the mtime kept
        edit.write(b"nOTE\n")
    os.utime(target, ns=(st.st_mtime_ns, st.st_mtime_ns))
    recorded = read_index(index, record)
    assert recorded is not None and recorded.since == 0 and recorded.racy
    patch = recorded.patch({"z.txt": _write(root, "z.txt", b"Z\n")})
    assert patch is not None and patch.data == read_index(index).patched(  # type: ignore[union-attr]
        {"z.txt": (blob_sha(b"Z\n"), os.lstat(root / "z.txt"))})
    index.write_bytes(patch.data)
    later = st.st_mtime_ns + 5 * 10**9
    os.utime(index, ns=(later, later))
    assert git(root, "diff", "--name-only") == "notes/n.md\n"


def test_a_record_that_does_not_describe_the_index_is_not_used(tmp_path: Path) -> None:
    root = _repo(tmp_path, FILES)
    index, record = root / ".git/index", root / ".git" / WALK_RECORD
    parsed = read_index(index)
    assert parsed is not None
    patch = parsed.patch({"new.txt": _write(root, "new.txt", b"new\n")})
    assert patch is not None
    index.write_bytes(patch.data)
    keep_walk(record, patch, os.stat(index))
    assert read_index(index, record).since == 1  # type: ignore[union-attr]
    kept = record.read_text()
    for key, value in (("count", 5), ("sum", "0" * 40), ("file", [1, 2, 3]), ("end", 10**9)):
        record.write_text(json.dumps({**json.loads(kept), key: value}))
        assert read_index(index, record).since == 0  # type: ignore[union-attr]
    record.write_text(kept[:40])
    assert read_index(index, record).since == 0  # type: ignore[union-attr]
    record.write_text(kept)
    os.utime(index, ns=(PAST * 10**9, PAST * 10**9))  # the same bytes, another mtime: racy entries differ
    assert read_index(index, record).since == 0  # type: ignore[union-attr]


def test_a_racy_entry_after_one_desk_put_in_before_it_is_followed_by_the_record(tmp_path: Path) -> None:
    root = _repo(tmp_path, FILES)
    git(root, "config", "core.trustctime", "false")
    index, record = root / ".git/index", root / ".git" / WALK_RECORD
    second = os.stat(index).st_mtime_ns
    target = root / "notes/n.md"
    os.utime(target, ns=(second, second))
    git(root, "update-index", "--", "notes/n.md")
    os.utime(index, ns=(second, second))  # notes/n.md racily clean, and clean
    parsed = read_index(index)
    assert parsed is not None and len(parsed.racy) == 1
    patch = parsed.patch({"notes/m.md": _write(root, "notes/m.md", b"just before n.md\n")}, root)
    assert patch is not None
    index.write_bytes(patch.data)
    os.utime(index, ns=(second, second))  # still in notes/n.md's second
    keep_walk(record, patch, os.stat(index))
    with open(target, "r+b") as edit:  # now a same-size edit, the mtime kept
        edit.write(b"NOTE\n")
    os.utime(target, ns=(second, second))
    recorded = read_index(index, record)
    assert recorded is not None and recorded.since == 1
    patch = recorded.patch({"z.txt": _write(root, "z.txt", b"Z\n")}, root)
    assert patch is not None
    index.write_bytes(patch.data)
    assert git(root, "diff", "--name-only") == "notes/n.md\n"
