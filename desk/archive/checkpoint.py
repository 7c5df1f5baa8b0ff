"""`desk checkpoint`: commit the archive's growth since the last commit, in one commit.

It takes the desk lock, then the archive lock, so it commits exactly the bytes on disk. Each
file's head hash goes in a `Desk-Archive-Head: <file> <lines> sha256:<hash>` trailer; a file with
a torn tail is left for the next checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from desk.archive.store import archive_files, archive_lock_path, head_hash
from desk.layout import ARCHIVE_DIR, DeskFolder
from desk.storage.git import blob_sha
from desk.storage.lock import desk_lock
from desk.transaction import Transaction, commit_message, transaction

HEAD_TRAILER = "Desk-Archive-Head"


@dataclass
class CheckpointResult:
    status: str  # committed | unchanged
    commit: str | None = None
    files: list[str] = field(default_factory=list)
    events: int = 0
    heads: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # torn tails, left for the next checkpoint

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def pending_archive(desk: DeskFolder, progress: Callable[[int, int], None] | None = None
                    ) -> tuple[dict[str, bytes], dict[str, bytes], list[str]]:
    """(changed archive files' bytes, their committed bytes, torn files skipped); call it holding
    the archive lock."""
    head = desk.git.refs.head()
    committed = desk.git.worktree.ls_tree(head, ARCHIVE_DIR) if head else {}
    writes: dict[str, bytes] = {}
    skipped: list[str] = []
    files = list(archive_files(desk))
    for n, afile in enumerate(files):
        if progress is not None:
            progress(n, len(files))
        data = desk.read(afile.rel)
        if blob_sha(data) == committed.get(afile.rel):
            continue
        if data and not data.endswith(b"\n"):
            skipped.append(afile.rel)
            continue
        writes[afile.rel] = data
    old_shas = {committed[p] for p in writes if p in committed}
    blobs = desk.git.objects.read_blobs(old_shas)
    old = {p: blobs[committed[p]] for p in writes if p in committed}
    return writes, old, skipped


def archive_trailer_lines(writes: dict[str, bytes]) -> list[str]:
    """One `Desk-Archive-Head` trailer line per file (a commit message trailer block allows repeats)."""
    newline = b"\n"
    return [f"{HEAD_TRAILER}: {path.rsplit('/', 1)[-1]} {data.count(newline)} {head_hash(data)}"
            for path, data in sorted(writes.items())]


def checkpoint(desk: DeskFolder, *, actor: str = "assistant",
               progress: Callable[[int, int], None] | None = None) -> CheckpointResult:
    """Commit every archive file that grew; `unchanged` (no commit) when none did.
    `progress(done, total)` counts the archive files read."""
    with transaction(desk) as tx:
        return checkpoint_locked(tx, actor=actor, progress=progress)


def checkpoint_locked(tx: Transaction, *, actor: str = "assistant",
                      progress: Callable[[int, int], None] | None = None) -> CheckpointResult:
    """`checkpoint` for a caller that already holds the desk lock (desk sync)."""
    desk = tx.desk
    with desk_lock(archive_lock_path(desk)):
        writes, old, skipped = pending_archive(desk, progress)
        if not writes:
            return CheckpointResult("unchanged", skipped=skipped)
        events = sum(data.count(b"\n") - old.get(path, b"").count(b"\n") for path, data in writes.items())
        subject = f"checkpoint: {events} archive event{'s' if events != 1 else ''} in {len(writes)} file" \
                  f"{'s' if len(writes) != 1 else ''}"
        message = commit_message(subject, {"Desk-Op": "checkpoint", "Desk-Actor": actor,
                                           "Desk-Archive-Events": str(events)})
        message += "\n".join(archive_trailer_lines(writes)) + "\n"
        sha = tx.commit(dict(writes), message)
    heads = {path: str(head_hash(data)) for path, data in writes.items()}
    return CheckpointResult("committed", sha, sorted(writes), events, heads, skipped)
