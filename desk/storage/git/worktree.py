"""Reads of the index and the work tree (`ls-files`, `ls-tree`, `diff`, `status`, `check-attr`),
answered as typed data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from desk.storage.git.parse import (RawChange, WorkTreeListing, parse_ls_files, parse_ls_tree, path_list, path_of,
                                    raw_changes)
from desk.storage.git.run import Answer

if TYPE_CHECKING:
    from desk.storage.git.repo import Git

# New archive files are ignored by `git status` until desk commits them (desk.setup.hooks writes
# this pattern to .git/info/exclude); desk's own listings take them back in.
ARCHIVE_EXCLUDE = "/.system/archive/*.jsonl"
_OTHERS = ("-o", "--exclude-standard", f"--exclude=!{ARCHIVE_EXCLUDE}")
_LISTING = ("ls-files", "-z", "-t", "-c", "-s", "-m", "-d", *_OTHERS)


StartedListing = Answer[tuple[WorkTreeListing, dict[str, str]]]  # the listing and HEAD's tree of a folder


class WorkTree:
    """What the index, the work tree and a commit's tree hold (`git.worktree`)."""

    def __init__(self, git: Git) -> None:
        self._git = git

    def _read(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        return self._git.run(*args, input=input, check=check, read_only=True)

    def ls_tree(self, rev: str, folder: str, *more: str, recursive: bool = False) -> dict[str, str]:
        """`{path: blob sha}` of the files directly in `folder` (and `more`) at `rev` (any depth when `recursive`)."""
        return parse_ls_tree(self._read("ls-tree", *(["-r"] if recursive else []), "-z", "--full-tree", rev, "--",
                                        *(f.rstrip("/") + "/" for f in (folder, *more))))

    def committed_blobs(self, paths: Iterable[str], rev: str = "HEAD") -> dict[str, str]:
        """`{path: blob sha}` of those of `paths` that are files at `rev` (empty when `rev` is no commit)."""
        wanted = list(paths)
        if not wanted:
            return {}
        return parse_ls_tree(self._read("ls-tree", "-z", "--full-tree", rev, "--", *wanted, check=False))

    def ls_staged_files(self, paths: Iterable[str]) -> dict[str, str]:
        """`{path: blob sha}` for those of `paths` (files, or folders at any depth) in the index."""
        wanted = list(paths)
        if not wanted:
            return {}
        return parse_ls_files(self._read("ls-files", "-s", "-z", "--", *wanted))

    def indexed_like(self, paths: Iterable[str]) -> set[str]:
        """The paths in the index equal to one of `paths` ignoring case (one `git ls-files`)."""
        specs = [f":(icase,literal){p}" for p in paths]
        if not specs:
            return set()
        return path_list(self._read("ls-files", "-z", "--", *specs))

    def index_paths(self) -> list[str]:
        """Every path in the index (in a hook: the one being committed), sorted."""
        return sorted(path_list(self._read("ls-files", "-z")))

    def start_work_tree_listing(self, folder: str) -> StartedListing:
        """The work tree as git sees it (WorkTreeListing) and HEAD's tree under `folder`, both started now
        and answered by `.result()`."""
        commands: list[tuple[str, ...]] = [_LISTING]
        if self._git.refs.head() is not None:
            commands.append(("ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", folder.rstrip("/") + "/"))
        return Answer(self._git.start(*commands),
                      lambda outs: (WorkTreeListing(outs[0]), parse_ls_tree(outs[1]) if len(outs) > 1 else {}))

    def staged_paths(self) -> set[str]:
        """The paths the index changes against HEAD."""
        return path_list(self._read("diff", "--cached", "--name-only", "-z"))

    def staged_changes(self) -> list[RawChange]:
        """What the index changes against HEAD, blob by blob (the commit being made, in a hook)."""
        return self.start_staged_changes().result()

    def start_staged_changes(self) -> Answer[list[RawChange]]:
        """`staged_changes()`, started now and answered by `.result()`."""
        return Answer(self._git.start(("diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev")),
                      lambda outputs: raw_changes(outputs[0]))

    def diff_tree(self, old: str, new: str, paths: Iterable[str] = ()) -> list[RawChange]:
        """What changed under `paths` from commit `old` to commit `new`; GitError when one is gone."""
        return raw_changes(self._read("diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", "--raw", old, new,
                                      "--", *paths))

    def diff_commits(self, old: str, new: str, paths: Iterable[str] = ()) -> str:
        """`git diff OLD NEW -- PATHS` without colour or external driver (empty when the same)."""
        out = self._read("diff", "--no-color", "--no-ext-diff", old, new, "--", *(f":(literal){p}" for p in paths))
        return out.decode("utf-8", "replace")

    def diff_worktree(self, rev: str, path: str, old_path: str | None = None) -> str:
        """`git diff REV -- PATH` to the work tree's file; with `old_path` (its name at `rev`), `-M` shows
        the rename."""
        paths = [path] if old_path is None or old_path == path else [old_path, path]
        out = self._read("diff", "--no-color", "--no-ext-diff", *(["-M"] if len(paths) > 1 else []), rev,
                         "--", *paths)
        return out.decode("utf-8", "replace")

    def start_changed_in_worktree(self, folder: str) -> Answer[list[str]]:
        """Paths under `folder/` that differ from HEAD (staged or not) or are untracked and not ignored
        (new archive files included), asked now. Call it when HEAD exists."""
        spec = f":(literal){folder}/"
        return Answer(self._git.start(("diff-index", "--name-only", "-z", "--no-renames", "HEAD", "--", spec),
                                      ("ls-files", "-z", *_OTHERS, "--", spec)),
                      lambda outputs: sorted({path for out in outputs for path in path_list(out)}))

    def dirty(self, paths: Iterable[str]) -> list[str]:
        """Those of `paths` with staged, unstaged or untracked changes against HEAD."""
        paths = list(paths)
        if not paths:
            return []  # git status without a pathspec would check the whole work tree
        records = iter(self._read("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths).split(b"\0"))
        found = []
        for record in records:
            if record:
                found.append(path_of(record[3:]))
                if record[:1] in (b"R", b"C"):
                    next(records, None)  # a rename carries its source path as the next record
        return found

    def symlinks(self, rev: str = "HEAD") -> list[str]:
        """Every path that is a symbolic link in the tree of `rev`."""
        out = self._read("ls-tree", "-r", "-z", "--full-tree", rev)
        return sorted(path_of(r.partition(b"\t")[2]) for r in out.split(b"\0") if r.startswith(b"120000 "))

    def attributes(self, paths: Iterable[str], *, cached: bool = True) -> dict[str, dict[str, str]]:
        """`{path: {name: value}}` of git's attributes of `paths` (`set`, `unset` or the value; unspecified
        ones left out), from the index's `.gitattributes` (`cached`) or the work tree's. The person's own
        attribute files outside the repository are left out."""
        wanted = list(paths)
        if not wanted:
            return {}
        data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in wanted)
        out = self._git.with_env(GIT_ATTR_NOSYSTEM="1").run(
            "-c", "core.attributesFile=", "check-attr", "-a", "-z", "--stdin", *(["--cached"] if cached else []),
            input=data, read_only=True)
        fields = path_of(out).split("\0")  # one decode for the whole answer: 3 fields a line
        found: dict[str, dict[str, str]] = {}
        for at in range(0, len(fields) - 2, 3):
            found.setdefault(fields[at], {})[fields[at + 1]] = fields[at + 2]
        return found
