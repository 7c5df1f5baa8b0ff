"""`desk archive verify`: each file's chain and sequence, git's committed prefix, and the
`Desk-Archive-Head` trailers of every checkpoint (a rewrite committed with `--no-verify`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from desk.archive.store import archive_files
from desk.formats.archive import check_archive_change
from desk.formats.archive import line_hash
from desk.archive.checkpoint import HEAD_TRAILER
from desk.layout import ARCHIVE_DIR, DeskFolder
from desk.errors import Finding


@dataclass
class VerifyReport:
    files: int = 0
    lines: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def to_json(self) -> dict[str, object]:
        return {"status": "ok" if self.ok else "broken", "files": self.files, "lines": self.lines,
                "findings": [f.to_json() for f in self.findings]}


def verify_archive(desk: DeskFolder) -> VerifyReport:
    """Findings for every archive file on disk (errors make `ok` false; torn tails are warnings)."""
    report = VerifyReport()
    desk_id = desk.config.desk_id
    head = desk.git.refs.head()
    committed = desk.git.worktree.ls_tree(head, ARCHIVE_DIR) if head else {}
    blobs = desk.git.objects.read_blobs(committed.values())
    contents: dict[str, bytes] = {}
    for afile in archive_files(desk):
        data = contents[afile.rel] = desk.read(afile.rel)
        report.files += 1
        report.lines += data.count(b"\n")
        found = check_archive_change(afile.rel, None, data, desk_id)
        old = blobs.get(committed.get(afile.rel, ""))
        if old is not None and not data.startswith(old):
            found += check_archive_change(afile.rel, old, data, desk_id)
        report.findings += sorted(set(found), key=lambda f: (f.line, f.rule))
    cut = {f.path for f in report.findings if f.rule == "archive-append-only"}
    report.findings += [f for f in _trailer_findings(desk, contents) if f.path not in cut]
    missing = sorted(set(committed) - {f.rel for f in archive_files(desk)})
    for rel in missing:
        if rel.endswith(".jsonl"):
            report.findings.append(Finding(rel, 1, "archive-append-only",
                                           "committed archive file is missing from the work tree; "
                                           f"restore it with `git restore -- {rel}`"))
    return report


def _trailer_findings(desk: DeskFolder, contents: dict[str, bytes]) -> list[Finding]:
    """The first line of each file that no longer hashes to what a checkpoint trailer recorded."""
    worst: dict[str, tuple[int, str]] = {}
    lines: dict[str, list[bytes]] = {}
    for commit in desk.git.history.log([ARCHIVE_DIR]):
        for value in commit.trailers.get(HEAD_TRAILER, []):
            parts = value.split()
            if len(parts) != 3 or not parts[1].isdigit():
                continue
            rel = f"{ARCHIVE_DIR}/{parts[0]}"
            if rel not in contents:
                continue
            number = int(parts[1])
            have = lines.setdefault(rel, contents[rel].split(b"\n"))
            ok = 0 < number < len(have) and line_hash(have[number - 1]) == parts[2]
            if not ok and (rel not in worst or number < worst[rel][0]):
                worst[rel] = (number, commit.sha)
    return [Finding(rel, number, "archive-append-only",
                    f"line {number} no longer matches the head hash checkpoint {sha[:7]} recorded: "
                    "the archive's history was rewritten")
            for rel, (number, sha) in sorted(worst.items())]
