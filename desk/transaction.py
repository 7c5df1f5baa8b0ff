"""One mutation, one commit: the lock, the dirty-file check, atomic writes and the commit.

Every desk write path goes through `transaction(desk)`. Under the desk-wide lock it refuses to
touch a file a person has uncommitted edits in, writes the new contents atomically, and commits
exactly those paths (`git commit -- paths`, so other staged or unstaged work stays where it was).
If the commit fails, the files and the index entries are put back: the desk is as it was.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from desk.storage.atomic import atomic_write, remove
from desk.layout import DeskFolder
from desk.errors import ConflictError
from desk.storage.lock import desk_lock


def commit_message(subject: str, trailers: Mapping[str, str | None], body: str | None = None) -> str:
    """`subject`, an optional body, and `Key: value` trailers (empty values left out)."""
    lines = [subject.replace("\n", " ").strip(), ""]
    if body:
        lines += [body.strip(), ""]
    for key, value in trailers.items():
        if value:
            lines.append(f"{key}: {' '.join(str(value).split())}")
    return "\n".join(lines) + "\n"


class Transaction:
    """What a mutation may do while it holds the lock."""

    def __init__(self, desk: DeskFolder) -> None:
        self.desk = desk

    def require_clean(self, paths: list[str]) -> None:
        """Refuse (exit 4) when any of `paths` has uncommitted edits, naming the file."""
        dirty = self.desk.git.dirty(paths)
        if dirty:
            raise ConflictError(
                f"{dirty[0]} has uncommitted changes; desk will not overwrite them",
                hint=f"commit or discard them first (`git -C {self.desk.root} diff -- {dirty[0]}`)")

    def commit(self, writes: Mapping[str, bytes | None], message: str) -> str:
        """Write (bytes) or delete (None) each path, then commit exactly those paths.

        Returns the commit sha. On any failure the files are restored and the error re-raised.
        """
        paths = sorted(writes)
        before = {p: self._read(p) for p in paths}
        from desk.guard.doctor import mark_pending  # lets `desk doctor` finish or undo it after a crash

        marker = mark_pending(self.desk, writes, before, message)
        try:
            for path, data in writes.items():
                if data is None:
                    remove(self.desk.path(path))
                else:
                    atomic_write(self.desk.path(path), data)
            added = [p for p in paths if writes[p] is not None and before[p] is None]
            if added:
                self.desk.git.add(added)
            # The one gate (DESIGN.md §1.3): the hook's rules, in process; the hook then skips them.
            from desk.guard.validate import VALIDATED_ENV, require_valid

            require_valid(self.desk, writes, message)
            from desk.guard.hook_files import only_desk_hooks

            verify = not only_desk_hooks(self.desk.git, self.desk.git_dir)
            sha = self.desk.git.with_env(**{VALIDATED_ENV: "1"}).commit(message, paths, verify=verify)
            marker.unlink(missing_ok=True)
            return sha
        except BaseException:
            self._restore(before)
            marker.unlink(missing_ok=True)
            raise

    def _read(self, path: str) -> bytes | None:
        try:
            return self.desk.path(path).read_bytes()
        except FileNotFoundError:
            return None

    def _restore(self, before: Mapping[str, bytes | None]) -> None:
        for path, data in before.items():
            if data is None:
                remove(self.desk.path(path))
            else:
                atomic_write(self.desk.path(path), data)
        self.desk.git.unstage(list(before))


@contextmanager
def transaction(desk: DeskFolder) -> Iterator[Transaction]:
    """Hold the desk lock for one mutation."""
    from desk.guard.doctor import recover_interrupted

    with desk_lock(desk.lock_path):
        recover_interrupted(desk)  # the next command recovers from a crash of the last one
        yield Transaction(desk)
