"""`desk archive verify`: check every archive file's records, chain and committed history.

Two witnesses: the hash chain and per-file sequence inside each file (a flipped byte, a removed
or reordered line, a torn tail), and git (the committed blob must still be a prefix of the file:
catches a cut at a line boundary and changes to the newest committed record).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from desk.archive import archive_files, check_archive_change
from desk.desk import Desk
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


def verify_archive(desk: Desk) -> VerifyReport:
    """Findings for every archive file on disk (errors make `ok` false; torn tails are warnings)."""
    report = VerifyReport()
    desk_id = desk.config.desk_id
    head = desk.git.head()
    committed = desk.git.ls_tree(head, ".system/archive") if head else {}
    blobs = desk.git.read_blobs(committed.values())
    for afile in archive_files(desk):
        data = desk.path(afile.rel).read_bytes()
        report.files += 1
        report.lines += data.count(b"\n")
        found = check_archive_change(afile.rel, None, data, desk_id)
        old = blobs.get(committed.get(afile.rel, ""))
        if old is not None and not data.startswith(old):
            found += check_archive_change(afile.rel, old, data, desk_id)
        report.findings += sorted(set(found), key=lambda f: (f.line, f.rule))
    missing = sorted(set(committed) - {f.rel for f in archive_files(desk)})
    for rel in missing:
        if rel.endswith(".jsonl"):
            report.findings.append(Finding(rel, 1, "archive-append-only",
                                           "committed archive file is missing from the work tree; "
                                           f"restore it with `git restore -- {rel}`"))
    return report
