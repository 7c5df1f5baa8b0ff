"""`.system/adjudications.<clone-id>.jsonl`: the append-only audit of people's decisions on conflict cases.

One JSON line per decision (`desk resolve`), one file per clone, each line's `prev` the sha256 of
the line before it (null first), so an edited or removed line shows; the gate allows appends only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from desk.errors import Finding
from desk.formats.archive import changed_line, line_hash

AUDIT_VERSION = 1
_AUDIT_RE = re.compile(r"\.system/adjudications\.([0-9a-f]{12})\.jsonl")
_HASH_RE = re.compile(r"sha256:[0-9a-f]{64}")
FIELDS: Mapping[str, tuple[type, ...]] = {
    "v": (int,), "event": (str,), "case": (str,), "revision": (int,), "domain": (str,),
    "key": (str, type(None)), "candidate": (str,), "role": (str,), "outcome": (str,),
    "content": (str,), "evidence": (list,), "actor": (str,), "rationale": (str,),
    "before": (dict, type(None)), "after": (dict, type(None)), "at": (str,), "desk_id": (str,),
    "prev": (str, type(None)),
}


def audit_path(clone: str) -> str:
    return f".system/adjudications.{clone}.jsonl"


def is_audit_path(path: str) -> bool:
    return _AUDIT_RE.fullmatch(path) is not None


def render_line(record: Mapping[str, Any], previous: bytes | None) -> bytes:
    """One audit line chained onto `previous` (the file so far), with its newline."""
    prev = None
    if previous:
        body = previous[:-1] if previous.endswith(b"\n") else previous
        prev = line_hash(body[body.rfind(b"\n") + 1:])
    data = {**record, "v": AUDIT_VERSION, "prev": prev}
    return (json.dumps(data, sort_keys=True, ensure_ascii=False, allow_nan=False,
                       separators=(",", ":")) + "\n").encode()


def parse_audit(path: str, data: bytes, desk_id: str | None = None
                ) -> tuple[list[dict[str, Any]], list[Finding]]:
    """The records of an audit file and every problem (each at its line)."""
    records: list[dict[str, Any]] = []
    findings: list[Finding] = []
    if data and not data.endswith(b"\n"):
        findings.append(Finding(path, data.count(b"\n") + 1, "audit-record",
                                "the last line is not complete (audit lines end with a newline)"))
    prev: str | None = None
    events: set[str] = set()
    for number, line in enumerate(data.split(b"\n")[:-1] if data else [], 1):
        problem = _record_problem(line, desk_id)
        if isinstance(problem, str):
            findings.append(Finding(path, number, "audit-record", problem))
        else:
            if problem["prev"] != prev:
                findings.append(Finding(path, number, "audit-chain",
                                        "prev does not match the line before it: a line was edited, "
                                        "removed or reordered"))
            if problem["event"] in events:
                findings.append(Finding(path, number, "audit-record",
                                        f"event {problem['event']} is recorded twice"))
            events.add(problem["event"])
            records.append(problem)
        prev = line_hash(line)
    return records, findings


def _record_problem(line: bytes, desk_id: str | None) -> dict[str, Any] | str:
    try:
        record = json.loads(line.decode("utf-8"), parse_constant=refuse_constant)
    except ValueError as exc:
        return f"not a JSON line: {exc}"
    if not isinstance(record, dict):
        return "not a JSON object"
    missing = sorted(set(FIELDS) - set(record))
    extra = sorted(set(record) - set(FIELDS))
    if missing or extra:
        return "fields " + "; ".join(f"{what}: {', '.join(names)}" for what, names in
                                     (("missing", missing), ("unknown", extra)) if names)
    for name, kinds in FIELDS.items():
        value = record[name]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            return f"{name} has the wrong type"
    if record["v"] != AUDIT_VERSION:
        return f"v {record['v']} is not an audit version this desk reads ({AUDIT_VERSION})"
    if record["prev"] is not None and not _HASH_RE.fullmatch(record["prev"]):
        return "prev is not a sha256:<hex> hash"
    if record["outcome"] not in ("replaced", "kept"):
        return "outcome must be replaced or kept"
    if desk_id and record["desk_id"] != desk_id:
        return f"desk_id {record['desk_id']!r} is not this desk's"
    return record


def refuse_constant(name: str) -> Any:
    """`json.loads`' `parse_constant`: NaN and Infinity are not JSON."""
    raise ValueError(f"{name} is not JSON")


def check_audit_change(path: str, old: bytes | None, new: bytes | None, desk_id: str) -> list[Finding]:
    """A change of an audit file: never deleted or rewritten, only valid lines appended."""
    if new is None:
        return [Finding(path, 1, "audit-append-only", "the adjudication audit is never deleted; "
                        f"restore it (`git restore --staged --worktree -- {path}`)")]
    if old and not new.startswith(old):
        line = changed_line(old, new)
        return [Finding(path, line, "audit-append-only",
                        f"line {line} was changed or removed; the adjudication audit only grows "
                        f"(`git restore --staged --worktree -- {path}`)")]
    _records, findings = parse_audit(path, new, desk_id or None)
    return findings
