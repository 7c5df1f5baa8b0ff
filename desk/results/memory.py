"""Results of the desk and memory verbs (init, show, diff, list, history, log)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desk.results.base import Outcome, Wrapped, preview

if TYPE_CHECKING:
    from desk.errors import Finding
    from desk.formats.memory_file import MemoryFile
    from desk.formats.memory_index import IndexEntry
    from desk.memory.past import Past, Revision
    from desk.memory.reads import Shown
    from desk.setup.init import InitResult
    from desk.storage.git import Commit


class Initialized(Wrapped["InitResult"]):
    """`desk.init`: created, or already a desk; files kept; why hooks were not installed."""

    def text(self) -> str:
        r = self.value
        if r.status == "exists":
            return f"{r.path} is already a desk; nothing changed"
        lines = [f"created a desk in {r.path} (commit {r.commit[:7] if r.commit else '-'})"]
        if r.kept:
            lines.append("kept existing files: " + ", ".join(r.kept))
        if r.hooks:
            lines.append(f"warning: the git hooks were not installed: {r.hooks}")
        if r.fallback_identity:
            lines.append(f"note: git has no user.name/user.email, so desk commits as {r.fallback_identity}; "
                         "a plain `git commit` in this desk needs them: `git config --global user.name "
                         "\"Your Name\"` and `git config --global user.email you@example.org`")
        lines.append("next: fill in SOUL.md, then `desk remember NAME --type T --description D BODY`")
        return "\n".join(lines)


@dataclass(frozen=True)
class ShownMemory(Outcome):
    """One memory file as it is on disk; an invalid one with its findings (on stderr in text)."""

    value: Shown

    @property
    def path(self) -> str:
        return self.value.path

    @property
    def memory(self) -> MemoryFile | None:
        """The parsed memory; None when the file is invalid (see `findings`)."""
        return self.value.memory

    @property
    def findings(self) -> list[Finding]:
        return self.value.findings

    def to_json(self) -> dict[str, Any]:
        r = self.value
        past = {"as_of": r.past.to_json()} if r.past is not None else {}
        if r.memory is None:
            return {"path": r.path, "valid": False, "text": r.text,
                    "findings": [f.to_json() for f in r.findings]}
        return {"path": r.path, "valid": True, **r.memory.meta.to_json(), "body": r.memory.body, **past}

    def text(self) -> str:
        r = self.value
        return (r.memory.render(r.memory.meta.schema).decode() if r.memory is not None else r.text).rstrip("\n")

    def warnings(self) -> list[str]:
        if self.value.past is not None:
            return [f"desk: {self.value.path} {self.value.past.describe()}"]
        if not self.value.findings:
            return []
        return [f"desk: warning: {f}" for f in self.value.findings] + [
            f"hint: fix {self.value.path} (`desk edit {self.value.path}`), then `desk validate --all`"]


@dataclass(frozen=True)
class MemoryDiff(Outcome):
    """`desk diff`: the unified diff of one memory from a revision to the file as it is now."""

    name: str
    path: str
    rev: str
    diff: str
    renamed_from: str | None = None  # the memory's path at `rev`, when it was renamed since

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": self.path, "from": self.rev, "to": "worktree",
                "changed": bool(self.diff), "diff": self.diff, "renamed_from": self.renamed_from}

    def text(self) -> str:
        return self.diff.rstrip("\n") if self.diff else f"no change in {self.path} since {self.rev[:12]}"


@dataclass(frozen=True)
class MemoryList(Outcome):
    """The memories on disk sorted by name, and the files left out because they do not parse."""

    entries: list[IndexEntry]
    invalid: list[Finding]
    past: Past | None = None  # `--as-of`: the commit the list was read from

    def to_json(self) -> dict[str, Any]:
        return {"memories": [{"name": e.name, "type": e.type, "description": e.description,
                              "expires": e.expires, "valid_from": e.valid_from, "valid_to": e.valid_to,
                              "path": f"memory/{e.name}.md"} for e in self.entries],
                "invalid": [f.to_json() for f in self.invalid],
                **({"as_of": self.past.to_json()} if self.past is not None else {})}

    def text(self) -> str:
        if self.past is not None and self.past.commit is None:
            return f"no memories {self.past.describe()}"
        if not self.entries:
            return "no memories yet"
        width = max(len(e.name) for e in self.entries)
        return "\n".join(f"{e.name:<{width}}  {e.type:<10}  {e.description}" for e in self.entries)

    def warnings(self) -> list[str]:
        return [f"desk: warning: {f} (left out; fix it, then `desk reindex`)" for f in self.invalid] + (
            [f"desk: {self.past.describe()}"] if self.past is not None and self.past.commit else [])


@dataclass(frozen=True)
class AuditTrail(Outcome):
    """Commits with their Desk-* trailers, newest first: one memory's history (`name`) or the log."""

    commits: list[Commit]
    name: str | None = None

    def to_json(self) -> dict[str, Any]:
        commits = [c.to_json() for c in self.commits]
        return {"commits": commits} if self.name is None else {"name": self.name, "commits": commits}

    def text(self) -> str:
        if not self.commits:
            return "no commits"
        lines = []
        for c in self.commits:
            extra = ", ".join(f"{k.removeprefix('Desk-').lower()}={'/'.join(_short(k, v))}"
                              for k, v in c.trailers.items() if k != "Desk-Op")
            lines.append(f"{c.sha[:7]}  {c.date[:19]}  {c.subject}" + (f"  [{extra}]" if extra else ""))
        return "\n".join(lines)


@dataclass(frozen=True)
class Timeline(Outcome):
    """`desk history NAME --timeline`: each revision with the interval it was true for and its evidence."""

    name: str
    revisions: list[Revision]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "revisions": [r.to_json() for r in self.revisions]}

    def text(self) -> str:
        lines = []
        for r in self.revisions:
            if r.forgotten:
                lines.append(f"{r.commit[:7]}  {r.committed_at}  forgotten ({r.subject})")
                continue
            lines.append(f"{r.commit[:7]}  {r.committed_at}  true {r.valid_from or '?'} .. {r.valid_to or 'now'}: "
                         f"{preview(r.value)}" + (f"  [evidence: {', '.join(r.evidence)}]" if r.evidence else ""))
        return "\n".join(lines)


def _short(key: str, values: list[str]) -> list[str]:
    """A trailer's values as the listing shows them: a restore's source commit abbreviated."""
    return [v[:7] for v in values] if key == "Desk-Restored-From" else values
