"""A work-tree folder as git sees it, for a cache keyed by it (`FolderState`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from desk.storage.git.parse import object_ids, path_list
from desk.storage.git.run import Started

if TYPE_CHECKING:
    from desk.storage.git.repo import Git


class FolderState:
    """A work-tree folder as git sees it, asked now, for a cache keyed by it.

    `result()` gives `(tree, paths)`, None without a HEAD commit: HEAD's tree id of the folder (None
    when it has none) and every path under it git cannot vouch is that tree's blob (differing from
    HEAD by `git diff-index`, or not in the index by `ls-files -o`; ignored ones only with
    `ignored`). With `untracked=False` no untracked listing runs. `ids` holds the ids of HEAD,
    `HEAD:folder` and `also` at that commit (`known_ids` may know them without git). The processes
    start together after HEAD is read, so a commit landing meanwhile cannot mix two commits."""

    def __init__(self, git: Git, folder: str, *, ignored: bool = True, also: Iterable[str] = (),
                 untracked: bool = True,
                 known_ids: Callable[[str], Mapping[str, str | None] | None] | None = None) -> None:
        spec = f":(literal){folder}/"
        self._folder = folder
        self._done = False
        self._changed: Started | None = None
        self._lookup: Started | None = None
        self._ids: dict[str, str | None] | None = None
        self.listed_untracked: list[str] | None = None  # what `ls-files -o` named, once `result()` ran
        self._head = head = git.refs.head()
        self._names = [n for n in dict.fromkeys([f"HEAD:{folder}", *also]) if n != "HEAD" and "\n" not in n]
        # The comparison first: it takes longest.
        if head is not None:
            self._changed = git.start(("diff-index", "--name-only", "-z", "--no-renames", head, "--", spec))
        self._untracked = git.start(("ls-files", "-o", "-z", *(() if ignored else ("--exclude-standard",)),
                                     "--", spec)) if untracked else None
        if head is not None:
            # the ids at that commit known without git (a commit's trees never change), else one `cat-file`
            known = known_ids(head) if known_ids is not None else None
            if known is not None and all(name in known for name in self._names):
                self._ids = {**{name: known[name] for name in self._names}, "HEAD": head}
            else:
                at_head = [head + n[4:] if n.startswith("HEAD:") else n for n in self._names]
                self._lookup = git.start(("cat-file", "--batch-check=%(objectname)"),
                                         input=("\n".join(at_head) + "\n").encode("utf-8", "surrogateescape"))

    @property
    def looked_up(self) -> bool:
        """Whether git looked the ids up (not known before: `known_ids`)."""
        return self._lookup is not None

    @property
    def ids(self) -> dict[str, str | None]:
        """`{name: object id or None}` for HEAD, `HEAD:folder` and `also`, at the compared commit."""
        if self._ids is None:
            found: dict[str, str | None] = dict.fromkeys(self._names)
            if self._lookup is not None:
                found.update(object_ids(self._names, self._lookup.wait()[0]))
            found["HEAD"] = self._head
            self._ids = found
        return self._ids

    @property
    def tree(self) -> str | None:
        """HEAD's tree of the folder (None without one)."""
        return self.ids.get(f"HEAD:{self._folder}")

    def close(self) -> None:
        """Wait for the processes without looking at their answer."""
        if not self._done:
            self._done = True
            for started in (self._untracked, self._lookup, self._changed):
                for proc in started.procs if started is not None else ():
                    proc.communicate()

    def result(self) -> tuple[str | None, list[str]] | None:
        """`(tree, paths)` as the class says, or None without a HEAD commit; GitError when git fails."""
        self._done = True
        untracked = self._untracked.wait()[0] if self._untracked is not None else None
        if self._changed is None:
            return None
        changed = self._changed.wait()[0]
        self.listed_untracked = sorted(path_list(untracked)) if untracked is not None else None
        return self.tree, sorted({*path_list(changed), *(self.listed_untracked or ())})
