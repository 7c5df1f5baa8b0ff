"""Secrets that arrived with a remote's commits: each incoming commit that adds one, named.

The gate checks the tree a sync or a pull lands on, which a later commit can have cleaned: a key
committed and then deleted elsewhere is still in the history that was fetched, and pushed again
from here. So `desk sync` (and the post-merge hook after a person's `git pull`) scans what each
commit of `OLD..NEW` adds, its message too, and names the commit, the path and the kind. It
reports rather than refuses: the secret is in the remote's history already and refusing would
block every sync from now on; what helps is rotating the key. Only the scanner's preview is ever
shown, never the secret.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from desk.gate.rules import MESSAGE_PATH
from desk.layout import ARCHIVE_PREFIX, CONFIG_PATH, DeskFolder

_LINK_MODES = ("120000", "160000")  # a symbolic link's target and a submodule are not content


@dataclass(frozen=True, slots=True)
class IncomingSecret:
    """One secret an incoming commit added: where, what kind, its masked preview and fingerprint."""

    commit: str
    subject: str
    path: str  # MESSAGE_PATH for one in the commit message
    line: int
    kind: str
    preview: str
    fingerprint: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    def warning(self) -> str:
        return (f"desk: WARNING: commit {self.commit[:12]} ({self.subject}) adds a secret: {self.path}:"
                f"{self.line}: {self.kind} ({self.preview}). It is in the remote's history for good, "
                "whatever later commits removed: rotate that key (revoke it where it was issued); if it "
                f"is not a secret, add \"{self.fingerprint}\" to secrets.allow in {CONFIG_PATH}")


def incoming_secrets(desk: DeskFolder, shas: list[str]) -> list[IncomingSecret]:
    """The secrets each of `shas` (the commits that arrived) adds: found in a file's new content
    and in none of its contents before the commit (any parent's, for a merge's own changes), or
    in its message. Fingerprints in desk.json's secrets.allow are left out. Reads every blob once
    (`git cat-file --batch`)."""
    if not shas:
        return []
    from desk.gate.checks import current_config
    from desk.text.secrets import redact, scan

    git, allow = desk.git, current_config(desk)[1]

    commits = git.history.commits(shas)
    merges = git.history.merge_changes(sha for sha in shas)
    changes: dict[str, list[tuple[str, tuple[str | None, ...], str]]] = {}
    for commit in commits:
        if commit.sha in merges:
            found = [(c.path, c.old_blobs, c.new_blob) for c in merges[commit.sha] if c.new_blob]
        else:
            found = [(c.path, (c.old_blob,), c.new_blob) for c in commit.changes
                     if c.new_blob and c.new_mode not in _LINK_MODES]
        changes[commit.sha] = [(path, olds, new) for path, olds, new in found if new is not None]
    wanted = {blob for found in changes.values() for _, olds, new in found for blob in (*olds, new) if blob}
    blobs = git.objects.read_blobs(wanted)
    scanned: dict[str, set[str]] = {}  # blob -> fingerprints, for the contents before

    def before(blob: str | None) -> set[str]:
        if blob is None or blob not in blobs:
            return set()
        if blob not in scanned:
            scanned[blob] = {f.fingerprint for f in scan(blobs[blob].decode("utf-8", "replace"))}
        return scanned[blob]

    report = []
    for commit in commits:
        subject = redact(commit.subject)[0]  # shown beside the finding: never the secret itself
        report += [IncomingSecret(commit.sha, subject, MESSAGE_PATH, f.line, f.kind, f.preview,
                                  f.fingerprint) for f in scan(commit.message, allow=allow)]
        for path, olds, new in sorted(changes[commit.sha]):
            if new not in blobs:
                continue
            data, first_line = blobs[new], 1
            old = blobs.get(olds[0] or "") if len(olds) == 1 else None
            if path.startswith(ARCHIVE_PREFIX) and old is not None and data.startswith(old):
                # an append-only file: only what it gained (a whole archive is large)
                data, first_line = data[len(old):], data.count(b"\n", 0, len(old)) + 1
                olds = ()
            had = set().union(*(before(blob) for blob in olds)) if olds else set()
            report += [IncomingSecret(commit.sha, subject, path, f.line + first_line - 1, f.kind,
                                      f.preview, f.fingerprint)
                       for f in scan(data.decode("utf-8", "replace"), allow=allow) if f.fingerprint not in had]
    return report
