"""History: `git log` and `rev-list` read into commits with their message, trailers and `--raw`
changes, and the streamed walk the HEAD mirror makes (`walk`)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import TYPE_CHECKING, NamedTuple

from desk.storage.git.parse import RawChange, path_of, raw_changes
from desk.storage.git.run import Answer
from desk.storage.git.trailers import parse_trailers

if TYPE_CHECKING:
    from desk.storage.git.repo import Git

_FIELDS = ["%H", "%an", "%ae", "%aI", "%s", "%B"]


class MergeChange(NamedTuple):
    """A path a merge commit made differ from every parent (`git log -c --raw`)."""

    path: str
    old_blobs: tuple[str | None, ...]  # each parent's blob, in parent order (None: absent there)
    new_blob: str | None  # None: the merge deleted it


class Commit(NamedTuple):
    """One commit as the audit trail shows it."""

    sha: str
    author: str
    email: str
    date: str
    subject: str
    trailers: dict[str, list[str]]  # keys as written, see parse_trailers
    paths: list[str]
    message: str  # the whole message (`%B`)
    changes: list[RawChange]  # what it changed, `paths` in full

    def to_json(self) -> dict[str, object]:
        return {"commit": self.sha, "author": self.author, "email": self.email, "date": self.date,
                "subject": self.subject, "trailers": self.trailers, "paths": self.paths}


class HistoryStep(NamedTuple):
    """One commit of `History.walk`: its parents, committer time and changes against its first parent."""

    sha: str
    parents: tuple[str, ...]
    time: int  # committer time, seconds since the epoch
    changes: list[RawChange]


class History:
    """The commits of one repository (`git.history`)."""

    def __init__(self, git: Git) -> None:
        self._git = git

    def log(self, paths: Iterable[str] = (), *, limit: int | None = None, since: str | None = None,
            until: str | None = None, merges: bool = True, rev: str | None = None) -> list[Commit]:
        """Commits touching `paths` (all when empty), newest first, with message, trailers and changes.
        `since`/`until` bound commit dates (inclusive); `merges=False` leaves merges out; `rev` starts
        the walk there instead of HEAD."""
        if self._git.refs.head() is None:
            return []
        args = [*([f"-n{limit}"] if limit else []), *([f"--since={since}"] if since else []),
                *([f"--until={until}"] if until else []), *([] if merges else ["--no-merges"]),
                *([rev] if rev is not None else [])]
        return [_commit(values, changes) for values, changes in self._log(_FIELDS, args, paths)]

    def commits(self, shas: Iterable[str]) -> list[Commit]:
        """These commits, in the order given, as `log` returns them (message, trailers, changes)."""
        wanted = list(shas)
        if not wanted:
            return []
        return [_commit(values, changes) for values, changes in self._log(_FIELDS, ["--no-walk=unsorted", *wanted], ())]

    def commit_ids(self, limit: int, *, merges: bool = True) -> list[str]:
        """The last `limit` commits from HEAD, newest first (`merges=False`: none of them a merge)."""
        out = self._git.run("rev-list", f"-n{limit}", *([] if merges else ["--no-merges"]), "HEAD",
                            "--", check=False, read_only=True)
        return out.decode().split()

    def start_commit_ids(self, limit: int) -> Callable[[], list[str]]:
        """`commit_ids(limit)` started now; the returned function waits for it."""
        started = self._git.start(("rev-list", f"-n{limit}", "HEAD", "--"))
        return lambda: started.wait(check=False)[0].decode().split()

    def merge_changes(self, shas: Iterable[str]) -> dict[str, list[MergeChange]]:
        """For each merge commit among `shas`: the paths differing from every parent, with every parent's
        blob (one `git log -c --raw`)."""
        wanted = list(shas)
        if not wanted:
            return {}
        out = self._git.run("log", "--format=%x1e%H", "--merges", "-c", "--raw", "-z", "--no-abbrev",
                            "--no-renames", "--no-walk=unsorted", *wanted, "--", read_only=True)
        found: dict[str, list[MergeChange]] = {}
        for chunk in out.split(b"\x1e")[1:]:
            tokens = chunk.split(b"\0")
            sha = tokens[0].decode().strip()
            changes = found.setdefault(sha, [])
            meta: bytes | None = None
            for token in tokens[1:]:
                if meta is None:
                    token = token.lstrip(b"\n")
                    if token.startswith(b"::"):
                        meta = token
                    continue
                parents = len(meta) - len(meta.lstrip(b":"))
                fields = meta.lstrip(b":").decode().split()
                blobs = [b if b.strip("0") else None for b in fields[parents + 1:2 * parents + 2]]
                changes.append(MergeChange(path_of(token), tuple(blobs[:-1]), blobs[-1]))
                meta = None
        return found

    def deleted(self, paths: Iterable[str]) -> dict[str, str]:
        """Of `paths`, those deleted in history: path -> committer date (ISO) of its last deletion."""
        wanted = list(paths)
        if not wanted or self._git.refs.head() is None:
            return {}
        found: dict[str, str] = {}
        for (date,), changes in self._log(["%cI"], ["--diff-filter=D"], wanted):
            for change in changes:
                found.setdefault(change.path, date)  # newest first: the first one is the last
        return found

    def _log(self, fields: list[str], args: list[str], paths: Iterable[str]
             ) -> list[tuple[list[str], list[RawChange]]]:
        """`git log` with one `%x1f`-separated record of `fields` per commit and its `--raw` diff (the
        last field may hold anything but NUL)."""
        fmt = "%x1e" + "%x1f".join(fields) + "%x1f"
        out = self._git.run("log", f"--format={fmt}", "--raw", "-z", "--no-abbrev", "--no-renames",
                            *args, "--", *paths, read_only=True)
        records = []
        for chunk in out.split(b"\x1e")[1:]:
            head, sep, raw = chunk.partition(b"\x1f\0")
            if not sep:
                head = chunk.removesuffix(b"\x1f")
            values = [v.decode("utf-8", "surrogateescape")
                      for v in head.split(b"\x1f", len(fields) - 1)]
            records.append((values, raw_changes(raw)))
        return records

    # `git log -n1 -- path` costs O(commits x tree size) per path (docs/design.md §7); the HEAD
    # mirror finds every path's last commit from one pass over `walk`'s steps instead.

    def walk(self, revs: Iterable[str]) -> Generator[HistoryStep, None, None]:
        """Every commit of `revs`, children before parents, with its parents, committer time and changes
        against its first parent; streamed (stopping early ends git). No pathspec, so nothing is pruned."""
        stream = self._git.stream("log", "--topo-order", "--diff-merges=first-parent", "--raw", "-z",
                                  "--no-renames", "--no-abbrev", "--format=%x1e%H%x1f%P%x1f%ct%x1f",
                                  *revs, "--")
        try:
            yield from _history_steps(stream)
        finally:
            stream.close()  # ends git when the caller stopped early

    def last_change(self, rev: str, path: str) -> tuple[str, int] | None:
        """`git log -n1 REV -- PATH`: the commit that last changed `path` and its time, or None."""
        return _sha_time(self._git.run("log", "-n1", "--format=%H %ct", rev, "--", path, read_only=True))

    def commit_at(self, until: str) -> Answer[tuple[str, int] | None]:
        """The last commit on HEAD's first-parent line at or before `until`, with its time (one `git log`,
        started now; `.result()` waits). None before the first commit."""
        head = self._git.refs.head()
        command = ("log", "-n1", "--first-parent", f"--until={until}", "--format=%H %ct", head or "", "--")
        return Answer(self._git.start(*([command] if head else [])), lambda out: _sha_time(out[0]) if out else None)

    def commit_times(self, shas: Iterable[str]) -> dict[str, int]:
        """`{sha: committer time (seconds since the epoch)}` for commits, in one `git log --no-walk`."""
        wanted = sorted(set(shas))
        if not wanted:
            return {}
        out = self._git.run("log", "--no-walk=unsorted", "--stdin", "--format=%H %ct",
                            input=("\n".join(wanted) + "\n").encode(), read_only=True).decode()
        return {sha: int(stamp) for sha, stamp in (line.split() for line in out.splitlines() if line)}


def _sha_time(out: bytes) -> tuple[str, int] | None:
    found = out.split()
    return (found[0].decode(), int(found[1])) if len(found) == 2 else None


def _commit(values: list[str], changes: list[RawChange]) -> Commit:
    sha, author, email, date, subject, message = values
    return Commit(sha, author, email, date, subject, parse_trailers(message), [c.path for c in changes],
                  message, changes)


def _history_steps(chunks: Iterable[bytes]) -> Generator[HistoryStep, None, None]:
    """Parse `git log -z --raw --format=%x1e%H%x1f%P%x1f%ct%x1f` as it streams (a path token always
    follows a change token, so no path is taken for a header)."""
    step: HistoryStep | None = None
    meta: bytes | None = None
    pending = b""
    for chunk in chunks:
        tokens = (pending + chunk).split(b"\0")
        pending = tokens.pop()
        for token in tokens:
            if meta is not None:
                assert step is not None
                step.changes.extend(raw_changes(meta + b"\0" + token + b"\0"))
                meta = None
            elif token.lstrip(b"\n").startswith(b":"):
                meta = token
            elif token.startswith(b"\x1e"):
                if step is not None:
                    yield step
                sha, parents, stamp = token[1:].decode().split("\x1f")[:3]
                step = HistoryStep(sha, tuple(parents.split()), int(stamp), [])
    if step is not None:
        yield step
