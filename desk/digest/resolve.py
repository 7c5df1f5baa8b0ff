"""`desk resolve`: a person decides a conflict case, in one commit (docs/design.md §3, adjudication).

Under the desk lock, before anything is written: the case is open at the revision the person saw,
its active memory and counted facts are still the ones it saw, the candidate is the case's. One
commit holds the memory (a challenger chosen), MEMORY.md, the closed case and the audit line. The
same event id with the same decision again returns the first result and writes nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from desk.archive.store import clone_id
from desk.digest.conflicts import candidate_id, parse_queue, render_queue
from desk.digest.memory_writes import (MemoryWrites, find_home, new_memory, places_of, replaced_memory,
                                       scope_entries, scoped_index, scoped_path)
from desk.digest.policy import Candidate, Domain, group_facts
from desk.digest.review import label
from desk.digest.run import read_facts
from desk.errors import ConflictError, DeskError, Finding, InvalidFileError, RejectedError, UsageError
from desk.layout import CONFLICTS_FILE, INDEX_FILE, DeskFolder, memory_name, project_file
from desk.formats.archive import line_hash
from desk.formats.audit import audit_path, parse_audit, render_line
from desk.formats.now import NowNote, heading_key
from desk.formats.queue import event_id_problem
from desk.gate.checks import last_good_hint
from desk.storage.git import blob_sha
from desk.text.normalize import content_key
from desk.text.times import format_time, parse_time, utc_now
from desk.transaction import commit_message, transaction
from desk.vocabulary import REASON_MAX

ACTOR_MAX = 200
# The hash of the audit line a resolve commit adds: makes even an audit file's last line tamper-evident.
AUDIT_TRAILER = "Desk-Audit-Line"
RATIONALE_MAX = REASON_MAX


@dataclass
class Resolution:
    """What `desk resolve` did (its `--json` shape)."""

    status: str  # resolved | unchanged (the same decision was already recorded under this event id)
    case: str
    revision: int
    candidate: str
    outcome: str  # replaced | kept
    event: str
    memory: str | None
    commit: str | None
    audit: str
    path: str | None = None  # the file the decision wrote (or kept)
    deleted: bool = False  # the chosen candidate was a deletion (a merge's case)

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def resolve(desk: DeskFolder, case_id: str, candidate: str, *, expected_revision: int, event_id: str,
            actor: str, rationale: str, now: dt.datetime | str | None = None) -> Resolution:
    """Decide case `case_id` for `candidate`; one commit. ConflictError (exit 4) when the case or
    its evidence moved on or the event id decided otherwise, UsageError (exit 2) for a bad argument."""
    actor, rationale = _arguments(event_id, actor, rationale)
    clock = parse_time(now if now is not None else utc_now(), "now")
    with transaction(desk) as tx:
        audit_file = audit_path(clone_id(desk))
        tx.require_clean([CONFLICTS_FILE, INDEX_FILE, audit_file])
        try:
            cases = parse_queue(desk.read_if_present(CONFLICTS_FILE))
        except InvalidFileError as exc:
            exc.hint = last_good_hint(desk, CONFLICTS_FILE)  # one `git log`, only when broken
            raise
        decided = decisions(desk)
        asked = {"case": case_id, "revision": expected_revision, "candidate": candidate,
                 "actor": actor, "rationale": rationale}
        if event_id in decided:
            return _retry(desk, event_id, decided[event_id], asked)
        case = _open_case(cases, case_id, expected_revision)
        chosen = next((c for c in case["candidates"] if c["id"] == candidate), None)
        if chosen is None:
            raise UsageError(f"{candidate} is not a candidate of case {case_id}; its candidates are "
                             + ", ".join(c["id"] for c in case["candidates"]),
                             hint=f"see them with `desk conflicts show {case_id}`")
        if case.get("origin") == "sync":  # a merge's case: a file's two versions, no facts
            return _resolve_merge_case(desk, tx, case, chosen, event_id, actor, rationale, clock,
                                       cases, audit_file)
        project = case.get("project")
        domain = _current_domain(desk, case, clock)
        home, active = _active_memory(desk, case, domain)
        name = home if chosen["role"] != "incumbent" else (case["active"] or {}).get("name")
        memory_file = scoped_path(name, project) if name else None
        if memory_file:
            tx.require_clean([memory_file, scoped_index(project)])
        before = desk.worktree_blob(memory_file) if memory_file and active is not None else None
        writes: dict[str, bytes | None] = {}
        if chosen["role"] == "incumbent":
            outcome, after = "kept", before
        else:
            assert name is not None and domain is not None
            value = _candidate(domain, candidate)
            skipped: list[dict[str, str]] = []
            memories = MemoryWrites(desk, skipped, project)
            memory = (replaced_memory(active, value, clock) if active is not None
                      else new_memory(name, value, clock, project))
            if not memories.land(name, memory):
                raise RejectedError(f"the write gate refused {candidate}'s memory: "
                                    f"{skipped[-1]['reason']}", hint="nothing was written; decide "
                                    "another candidate, or `desk remember` the value yourself")
            writes = memories.with_index()
            outcome, after = "replaced", blob_sha(memory.render())
        sha = _close_and_commit(desk, tx, cases, case, chosen, writes, event_id, actor, rationale, clock,
                                audit_file, outcome, name, before, after)
    return Resolution("resolved", case_id, case["revision"], candidate, outcome, event_id, name,
                      sha, audit_file, memory_file)


def _close_and_commit(desk: DeskFolder, tx: Any, cases: list[dict[str, Any]], case: dict[str, Any],
                      chosen: dict[str, Any], writes: dict[str, bytes | None], event_id: str, actor: str,
                      rationale: str, clock: dt.datetime, audit_file: str, outcome: str,
                      name: str | None, before: str | None, after: str | None) -> str:
    """Close `case` with the decision, append its audit line, and commit it all with `writes`."""
    candidate, case_id = chosen["id"], case["id"]
    stamp = format_time(clock)
    resolution = {"event": event_id, "candidate": candidate, "outcome": outcome, "actor": actor,
                  "rationale": rationale, "at": stamp, "before": before, "after": after}
    case.update(status="resolved", closed=stamp, resolution=resolution,
                note=f"decided by {actor}: {outcome}")
    writes[CONFLICTS_FILE] = render_queue(cases)
    old_audit = desk.read_if_present(audit_file) or b""
    record = {"event": event_id, "case": case_id, "revision": case["revision"],
              "domain": case["domain"], "key": case["key"], "candidate": candidate,
              "role": chosen["role"], "outcome": outcome, "content": chosen["content"] or "",
              "evidence": list(chosen["evidence"]), "actor": actor, "rationale": rationale,
              "before": {"name": name, "blob": before} if before else None,
              "after": {"name": name, "blob": after} if after else None,
              "at": stamp, "desk_id": desk.config.desk_id}
    line = render_line(record, old_audit)
    writes[audit_file] = old_audit + line
    what = f'{outcome} "{" ".join(label(chosen["content"]).split())}"' if chosen["content"] is not None else (
        "deleted" if outcome == "replaced" else "kept the deletion")
    subject = f"resolve: {case['key'] or case['domain']}: {what}"
    message = commit_message(subject[:200], {
        "Desk-Op": "resolve", "Desk-Case": f"{case_id} r{case['revision']}",
        "Desk-Event": event_id, "Desk-Actor": actor, "Desk-Candidate": candidate,
        "Desk-Outcome": outcome, AUDIT_TRAILER: line_hash(line.rstrip(b"\n"))},
        f"Rationale: {rationale}")
    return str(tx.commit(writes, message))


def _resolve_merge_case(desk: DeskFolder, tx: Any, case: dict[str, Any], chosen: dict[str, Any],
                        event_id: str, actor: str, rationale: str, clock: dt.datetime,
                        cases: list[dict[str, Any]], audit_file: str) -> Resolution:
    """A case `desk sync` opened: the file (or NOW.md section) holds the kept side's version, choosing
    the other writes it (None: deletes it); stale (exit 4) when the file no longer holds it."""
    path = str(case["key"])
    incumbent = next((c for c in case["candidates"] if c["role"] == "incumbent"), None)
    in_project = project_file(path)
    tx.require_clean([path, INDEX_FILE] + ([scoped_index(in_project[1])] if in_project else []))
    data = desk.read_if_present(path)
    current = data.decode("utf-8", "replace") if data is not None else None
    label = case["domain"].split(":", 1)[1] if case["domain"].startswith("now:") else None
    if label is not None:
        current = NowNote.parse(current or "").section(label)
    if incumbent is None or current != incumbent["content"]:
        raise ConflictError(f"stale: {path} changed since the merge opened case {case['id']}",
                            hint=f"review again: `desk conflicts show {case['id']}`, or close it by "
                                 "deciding after looking at the file")
    before = blob_sha(data) if data is not None else None
    writes: dict[str, bytes | None] = {}
    outcome, after = "kept", before
    name = memory_name(path)
    if chosen["role"] != "incumbent":
        outcome = "replaced"
        content = chosen["content"]
        new: bytes | None
        if label is not None:
            new = _with_now_section(data.decode("utf-8") if data is not None else "", label, content)
        else:
            new = content.encode("utf-8") if content is not None else None
        writes[path] = new
        after = blob_sha(new) if new is not None else None
        if name is not None:
            writes.update(_index_with(desk, path, new))
        elif in_project is not None and in_project[0] == "memory":
            writes.update(_index_with(desk, path, new, in_project[1]))
    sha = _close_and_commit(desk, tx, cases, case, chosen, writes, event_id, actor, rationale, clock,
                            audit_file, outcome, name or path, before, after)
    return Resolution("resolved", case["id"], case["revision"], chosen["id"], outcome, event_id,
                      name, sha, audit_file, path, chosen["content"] is None and outcome == "replaced")


def _with_now_section(text: str, label: str, body: str | None) -> bytes:
    note = NowNote.parse(text)
    if label == "preamble":
        note.preamble = body or ""
    else:
        note.sections = [(h, body if body is not None and heading_key(h) == label else b)
                         for h, b in note.sections if not (heading_key(h) == label and body is None)]
    return note.render().encode()


def _index_with(desk: DeskFolder, path: str, data: bytes | None, project: str | None = None
                ) -> dict[str, bytes | None]:
    """The scope's MEMORY.md with the memory at `path` as `data` (None: gone), when that changes it."""
    from desk.formats.memory_file import parse_memory
    from desk.formats.memory_index import IndexEntry, render_index

    name = path.rpartition("/")[2].removesuffix(".md")
    entries = scope_entries(desk, project)
    entries.pop(name, None)
    if data is not None:
        entries[name] = IndexEntry.of(parse_memory(data, path, name))  # a broken file: exit 3
    index = render_index(entries.values())
    target = scoped_index(project)
    return {target: index} if desk.read_if_present(target) != index else {}


def _arguments(event_id: str, actor: str, rationale: str) -> tuple[str, str]:
    problem = event_id_problem(event_id)
    if problem:
        raise UsageError(f"--event-id {event_id!r}: {problem}")
    actor = " ".join(actor.split())
    if actor.lower() in ("assistant", "agent", "model"):
        raise UsageError("desk resolve records a person's decision; the assistant never adjudicates",
                         hint="--actor names the person who decided, e.g. reviewer@example.org")
    if not actor or len(actor) > ACTOR_MAX:
        raise UsageError(f"--actor must name who decides (1-{ACTOR_MAX} characters)",
                         hint="e.g. --actor reviewer@example.org")
    rationale = " ".join(rationale.split())
    if not rationale or len(rationale) > RATIONALE_MAX or "\0" in rationale:
        raise UsageError(f"--rationale must say why (1-{RATIONALE_MAX} characters)")
    return actor, rationale


def _open_case(cases: list[dict[str, Any]], case_id: str, expected: int) -> dict[str, Any]:
    case = next((c for c in cases if c["id"] == case_id), None)
    if case is None:
        raise DeskError(f"no conflict case {case_id}", hint="list them with `desk conflicts --all`")
    if case["status"] != "open":
        later = case.get("superseded_by")
        raise ConflictError(
            f"stale: case {case_id} is {case['status']}" + (f"; case {later} replaced it" if later else ""),
            hint=f"review again: `desk conflicts show {later}`" if later else "review again: `desk conflicts`")
    if case["revision"] != expected:
        raise ConflictError(f"stale: case {case_id} is at revision {case['revision']}, not {expected}",
                            hint=f"review again: `desk conflicts show {case_id}`")
    return case


def _current_domain(desk: DeskFolder, case: dict[str, Any], clock: dt.datetime) -> Domain | None:
    """The domain as the policy sees it now; ConflictError when its facts are not the case's."""
    policy = desk.config.distill
    facts, _invalid = read_facts(desk, clock - dt.timedelta(days=policy.min_age_days), case.get("project"))
    domain = group_facts(facts, policy, clock).get(case["domain"])
    now_ids = set(domain.fact_ids) if domain else set()
    seen = set(case["observed_fact_ids"])
    if now_ids != seen:
        added, gone = sorted(now_ids - seen), sorted(seen - now_ids)
        what = "; ".join(part for part in (
            f"new evidence: {', '.join(added[:5])}" + (" …" if len(added) > 5 else "") if added else "",
            f"evidence no longer counted: {', '.join(gone[:5])}" if gone else "") if part)
        raise ConflictError(f"stale: the facts of {case['key'] or case['domain']} changed since case "
                            f"{case['id']} was opened ({what})",
                            hint="review again: run `desk digest`, then `desk conflicts`")
    return domain


def _active_memory(desk: DeskFolder, case: dict[str, Any], domain: Domain | None) -> tuple[str | None, Any]:
    """(the domain's memory name, its active memory or None); ConflictError when it is not the one
    the case saw."""
    if domain is None:  # no fact counts any more: only possible with an empty case
        raise ConflictError(f"stale: no fact of {case['domain']} counts any more",
                            hint="review again: `desk digest`, then `desk conflicts`")
    project = case.get("project")
    home, memory, problem = find_home(desk, domain, places_of(domain), project)
    seen = case["active"]
    if seen is None:
        if memory is not None:
            raise ConflictError(f"stale: {scoped_path(memory.name, project)} became the active memory of "
                                f"{case['key'] or case['domain']} after case {case['id']} was opened",
                                hint="review again: `desk digest`, then `desk conflicts`")
    elif (memory is None or home != seen["name"] or sorted(memory.meta.evidence) != sorted(seen["evidence"])
          or content_key(memory.body) != content_key(_incumbent_content(case))):
        raise ConflictError(f"stale: the active memory of {case['key'] or case['domain']} "
                            f"({scoped_path(seen['name'], project)}) changed since case {case['id']} was opened",
                            hint="review again: `desk digest`, then `desk conflicts`")
    if home is None:
        raise DeskError(f"no memory file can hold {case['domain']}: {problem}",
                        hint="fix or rename the memory file in the way, then run the command again")
    return home, memory


def _incumbent_content(case: dict[str, Any]) -> str:
    return str(next((c["content"] for c in case["candidates"] if c["role"] == "incumbent"), "") or "")


def _candidate(domain: Domain, wanted: str) -> Candidate:
    for value in domain.candidates:
        if candidate_id(domain.id, value.content_key) == wanted:
            return value
    raise ConflictError(f"stale: candidate {wanted} has no counted facts any more",
                        hint="review again: `desk digest`, then `desk conflicts`")


def decisions(desk: DeskFolder) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every recorded decision by event id: `(audit file, record)`. InvalidFileError (exit 3) naming
    the line when an audit file is broken or a line is not the one its commit recorded."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    desk_id = desk.config.desk_id
    paths = [f".system/{p.name}" for p in sorted(desk.path(".system").glob("adjudications.*.jsonl"))]
    anchors: dict[str, list[str]] = {}
    if paths:
        for commit in desk.git.history.log(paths):
            for event in commit.trailers.get("Desk-Event", []):
                anchors.setdefault(event, []).extend(commit.trailers.get(AUDIT_TRAILER, []))
    for path in paths:
        full = desk.path(path)
        if full.is_symlink():
            raise InvalidFileError([Finding(path, 1, "symlink", "the audit is a symlink")],
                                   hint=f"restore {path} from git")
        data = desk.read(path)
        records, findings = parse_audit(path, data, desk_id)
        lines = data.split(b"\n")
        for number, record in enumerate(records, 1):
            if line_hash(lines[number - 1]) not in anchors.get(record["event"], []):
                findings.append(Finding(path, number, "audit-commit", f"the line of event "
                                        f"{record['event']} is not the one its commit recorded"))
            if record["event"] in found:
                findings.append(Finding(path, number, "audit-record",
                                        f"event {record['event']} is recorded in two audit files"))
            found[record["event"]] = (path, record)
        if findings:
            raise InvalidFileError(findings, hint=f"the audit only grows: restore {path} from git "
                                                  f"(`git log -p -- {path}`); nothing was written")
    return found


def _retry(desk: DeskFolder, event_id: str, prior: tuple[str, dict[str, Any]],
           asked: dict[str, Any]) -> Resolution:
    path, record = prior
    recorded = {k: record[k] for k in asked}
    if recorded != asked:
        differs = ", ".join(k for k in asked if asked[k] != recorded[k])
        raise ConflictError(f"event id {event_id} already recorded a different decision ({differs} "
                            f"differ): case {record['case']} -> {record['candidate']} by {record['actor']}",
                            hint="use a new --event-id for a new decision")
    commit = next((c.sha for c in desk.git.history.log([path])
                   if event_id in c.trailers.get("Desk-Event", [])), None)
    name = (record["after"] or record["before"] or {}).get("name")
    return Resolution("unchanged", record["case"], record["revision"], record["candidate"],
                      record["outcome"], event_id, name, commit, path)
