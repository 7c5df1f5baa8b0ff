"""Results of the working-desk verbs: the digest, conflicts, migrate, NOW.md, MISTAKES.md, conversations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desk.results.base import Outcome, Wrapped, commit_suffix, counted, preview
from desk.text.direction import visible

if TYPE_CHECKING:
    from desk.archive.conversations import RenderResult
    from desk.digest.resolve import Resolution
    from desk.setup.migrate import MigrationResult
    from desk.digest.run import DigestResult
    from desk.formats.mistakes import Mistake
    from desk.formats.now import NowNote
    from desk.notes.mistakes import MistakeResult
    from desk.notes.now import NowResult


class Digested(Wrapped["DigestResult"]):
    """What one digest run did: journal, promoted/merged/superseded memories, conflict cases."""

    def text(self) -> str:
        r = self.value
        what = f"digest {r.date}" + (f" (project {r.project})" if r.project else "")
        head = (f"{what}: nothing changed" if r.status == "unchanged"
                else f"{what}: committed {str(r.commit)[:7]}")
        lines = [head, f"  journal: {r.journal} ({counted(r.events, 'event')})" if r.journal
                 else f"  facts of project {r.project}: {r.facts}"]
        lines += [f"  {label}: {', '.join(names)}" for label, names in
                  (("promoted", r.promoted), ("merged", r.merged), ("superseded", r.superseded)) if names]
        if r.conflicts:
            lines.append(f"  conflict cases opened: {', '.join(r.conflicts)} (see `desk conflicts`)")
        if r.stale or r.unconfirmed:
            lines.append(f"  stale challengers: {r.stale}, awaiting confirmation: {r.unconfirmed}")
        lines += [f"  skipped {skip['domain']}: {skip['reason']}" for skip in r.skipped]
        if r.invalid_facts:
            lines.append(f"  {counted(r.invalid_facts, 'invalid fact event')} ignored")
        return "\n".join(lines)


def _label(candidate: dict[str, Any]) -> str:
    """The first line of the candidate's body ("(deleted)" for a deletion)."""
    from desk.digest.review import label

    return preview(candidate.get("label") or label(candidate["content"]))


def _with_commands(case: dict[str, Any]) -> dict[str, Any]:
    """The case as data: each candidate with its `label`; an open case with the `desk resolve`
    command for each candidate and the `resolve_args` a program passes (revision, event id)."""
    candidates = [{**c, "label": _label(c)} for c in case["candidates"]]
    if case["status"] != "open":
        return {**case, "candidates": candidates}
    args = {"expected_revision": case["revision"], "event_id": f"review:{case['id']}:r{case['revision']}"}
    return {**case, "resolve_args": args,
            "candidates": [{**c, "resolve": f"desk resolve {case['id']} {c['id']}"} for c in candidates]}


@dataclass(frozen=True)
class ConflictCases(Outcome):
    """The conflict review queue's cases (open ones only unless `include_closed`)."""

    cases: list[dict[str, Any]]
    include_closed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"cases": [_with_commands(c) for c in self.cases]}

    def text(self) -> str:
        if not self.cases:
            return "no conflict cases" if self.include_closed else "no open conflict cases"
        lines = []
        for case in self.cases:
            scope = f"  project {case['project']}" if case.get("project") else ""
            lines.append(f"{case['id']}  {case.get('key') or case['domain']}{scope}  revision {case['revision']}"
                         f"  {case['status']}")
            for cand in case.get("candidates", []):
                whence = (f"{len(cand['evidence'])} evidence" if case.get("origin") != "sync"
                          else "in the file" if cand["role"] == "incumbent" else "the other side")
                lines.append(f"  {cand['id']}  {cand['role']:<10}  {_label(cand)}  ({whence})")
            if case["status"] == "open":
                lines.append(f"  show: desk conflicts show {case['id']}")
        return "\n".join(lines)


@dataclass(frozen=True)
class ConflictCase(Outcome):
    """One case in full (`desk conflicts show CASE`): the queue's case with desk.digest.review's fields."""

    case: dict[str, Any]
    evidence: dict[str, dict[str, Any] | None]  # event id: {at, content, session} or None when missing

    def to_json(self) -> dict[str, Any]:
        case = _with_commands(self.case)
        case["candidates"] = [{**c, "evidence_records": [{"id": e, **(self.evidence.get(e) or {"missing": True})}
                                                         for e in c["evidence"]]} for c in case["candidates"]]
        return {"case": case}

    def text(self) -> str:
        case = self.case
        lines = [f"case {case['id']}  revision {case['revision']}  {case['status']}",
                 f"domain: {case.get('key') or case['domain']}"
                 + (f"  (project {case['project']})" if case.get("project") else ""),
                 f"opened: {case['opened']}" + (f"  closed: {case['closed']}" if case.get("closed") else "")]
        if case.get("active_path"):
            now = "" if case.get("active_text") is not None else "  (deleted now)"
            lines.append(f"active memory: {case['active_path']}{now}")
        if case.get("note"):
            lines.append(f"note: {case['note']}")
        for cand in case["candidates"]:
            detail = ", ".join(f"{k} {cand[k]}" for k in ("kind", "importance") if cand.get(k) is not None)
            lines += ["", f"{cand['role']} {cand['id']}: {_label(cand)}"]
            lines += ["  " + line for line in _whence(cand, detail)]
            for event_id in cand["evidence"]:
                record = self.evidence.get(event_id)
                said = preview(record.get("content"), 80) if record else "(not in the archive)"
                lines.append(f"  - {event_id}  {said}")
            if cand.get("diff") is not None:
                diff = cand["diff"]
                where = case.get("active_path") or "the active memory"
                if cand["content"] is None:
                    lines.append(f"  against {where} now: (deleted): accepting it deletes the file")
                else:
                    lines.append(f"  against {where} now: the same" if not diff else f"  against {where} now:")
                    lines += [visible("    " + line) for line in diff.splitlines()[2:]]
            if case["status"] == "open":
                lines.append(f"  accept: desk resolve {case['id']} {cand['id']}")
        same = bool(case["candidates"]) and case["candidates"][0].get("diff") == ""
        for pair in [] if same else case.get("diffs", []):  # else each diff above is against the first
            lines += ["", f"between {pair['from']} and {pair['to']}:"]
            lines += [visible("  " + line) for line in pair["diff"].splitlines()] or ["  the same"]
        if case.get("resolution"):
            r = case["resolution"]
            lines += ["", f"resolved by {r['actor']} at {r['at']}: {r['outcome']} {r['candidate']} "
                          f"(event {r['event']})", f"  rationale: {r['rationale']}"]
        return "\n".join(lines)


def _whence(cand: dict[str, Any], detail: str) -> list[str]:
    """Where a candidate came from, in a line or two."""
    source = cand.get("source") or {}
    if source.get("kind") == "merge":
        side = {"incumbent": "the version the file keeps", "challenger": "the other version"}.get(
            str(cand.get("role")), "one version")
        changed = source.get("changed_in")
        if changed:
            return [f"from: {side}, commit {changed['commit'][:12]} at {changed['at']} by {preview(changed['author'])}"
                    + (f" ({preview(changed['actor'])})" if changed.get("actor") else "") + f": {preview(changed['subject'])}"]
        commit = source.get("commit")
        return [f"from: {side}" + (f", commit {commit[:12]}" if commit else "")]
    events = source.get("events") or []
    clones = sorted({e["clone"] for e in events if e.get("clone")})
    head = f"latest {cand['latest']}" + (f", {detail}" if detail else "")
    if events:
        head += f"; from {counted(len(events), 'fact')}" + (
            f" on clone {', '.join(clones)}" if clones else "")
    return [head]


class Migrated(Wrapped["MigrationResult"]):
    """What `desk migrate` did (or, with --dry-run, would do)."""

    def text(self) -> str:
        m = self.value
        if m.status == "unchanged":
            return f"the desk is at schema version {m.to_version}: nothing to migrate"
        span = (f"from schema {m.from_version} to {m.to_version}" if m.from_version != m.to_version
                else f"at schema {m.to_version}")  # a current desk with files an older write left unversioned
        head = ("would migrate" if m.status == "planned" else "migrated") + \
            f" the desk {span}{commit_suffix(m.commit)}"
        return "\n".join([head, *(f"  {c['path']}: {c['change']}" for c in m.changes)])


class Resolved(Wrapped["Resolution"]):
    """What `desk resolve` did: status `resolved`, or `unchanged` for a retried event id."""

    def text(self) -> str:
        r = self.value
        verb = "already decided" if r.status == "unchanged" else "resolved"
        what = ("kept the active value" if r.outcome == "kept"
                else f"{r.path} is deleted, as chosen" if r.path and r.deleted
                else f"{r.path} now holds the chosen value" if r.path
                else f"memory {r.memory} now holds the chosen value" if r.memory
                else "the file now holds the chosen version")
        return f"{verb} case {r.case} (event {r.event}): {what}{commit_suffix(r.commit)}"


@dataclass(frozen=True)
class NowView(Outcome):
    """NOW.md, or one of its sections when `section` is given."""

    note: NowNote
    section: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.section is None:
            return dict(self.note.to_json())
        return {"section": self.section, "text": self.note.body(self.section)}

    def text(self) -> str:
        return self.note.body(self.section) if self.section else self.note.render().rstrip("\n")


class NowChange(Wrapped["NowResult"]):
    """A change of NOW.md: updated or unchanged, the section, the commit."""

    def text(self) -> str:
        data = self.value.to_json()
        section = f" [{data['section']}]" if data.get("section") else ""
        return f"{data['status']}: {data['path']}{section}{commit_suffix(data.get('commit'))}"


class MistakeAdded(Wrapped["MistakeResult"]):
    """A MISTAKES.md entry: created, or unchanged when the same lesson was already there."""

    def text(self) -> str:
        r = self.value
        return f"{r.status}: {r.mistake.id} in MISTAKES.md{commit_suffix(r.commit)}"


@dataclass(frozen=True)
class MistakeList(Outcome):
    """The entries of MISTAKES.md in file order."""

    entries: list[Mistake]

    def to_json(self) -> dict[str, Any]:
        return {"mistakes": [e.to_json() for e in self.entries]}

    def text(self) -> str:
        if not self.entries:
            return "no mistakes recorded"
        return "\n".join(f"{e.id}  {e.date or '-'}  {e.what}\n    avoid: {e.avoid}"
                         + (f"\n    memory: {e.memory}" if e.memory else "") for e in self.entries)


class ConversationsRendered(Wrapped["RenderResult"]):
    """How many conversation views were rendered and which files changed."""

    def text(self) -> str:
        r = self.value
        return f"rendered {counted(r.views, 'view')}, {len(r.files)} changed{commit_suffix(r.commit)}"
