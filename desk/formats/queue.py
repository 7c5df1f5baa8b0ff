"""`.system/conflicts.json`'s format: its schema, its versions, reading, writing, and the case chain
(the gate checks a queue with the schema the digest reads it with).

Version 2 adds `resolution` to every case; both are read, the current one is written, a newer one
is refused. A domain's cases form a chain: revisions 1, 2, ... without a gap, at most one open.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from desk.errors import Finding, InvalidFileError
from desk.formats.audit import refuse_constant
from desk.layout import CONFLICTS_FILE

QUEUE_VERSION = 2
READABLE_VERSIONS = (1, 2)
STATUSES = ("open", "resolved", "superseded")


class _Strict(BaseModel):
    # pydantic matches `pattern` with Rust's regex, where `$` is the end of the text only (unlike
    # Python's `re`, it never matches before a final newline).
    model_config = ConfigDict(extra="forbid", strict=True)


class CandidateModel(_Strict):
    id: str = Field(pattern=r"^cand-[0-9a-f]{12}$")
    role: str = Field(pattern=r"^[a-z][a-z-]{0,39}$")  # incumbent, challenger (a merge may add its own)
    content: str | None  # None: a merge case's deleted side (desk.sync.cases)
    kind: str | None = None
    importance: int | None = Field(default=None, ge=1, le=5)
    evidence: list[str]
    latest: str
    side: Literal["ours", "theirs"] | None = None  # a merge case's: which clone's version
    deleted: bool = False
    commit: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # a merge case's side


class ActiveModel(_Strict):
    name: str = Field(min_length=1)
    evidence: list[str]


class ResolutionModel(_Strict):
    event: str = Field(min_length=1)
    candidate: str
    outcome: Literal["replaced", "kept"]
    actor: str = Field(min_length=1)
    rationale: str = Field(min_length=1)
    at: str
    before: str | None  # the active memory's blob id before the decision (None: there was none)
    after: str | None  # and after it


class CaseModel(_Strict):
    id: str = Field(pattern=r"^case-[0-9a-f]{16}$")
    domain: str = Field(min_length=1)
    key: str | None
    revision: int = Field(ge=1)
    status: Literal["open", "resolved", "superseded"]
    opened: str
    closed: str | None
    superseded_by: str | None
    note: str | None
    fingerprint: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    origin: Literal["sync"] | None = None  # a case a merge opened (desk.sync.cases); None: the digest's
    # A project's digest case: its domain starts `project:<name>/` (absent: a desk-wide case).
    project: str | None = Field(default=None, pattern=r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$", max_length=64)
    active: ActiveModel | None
    candidates: list[CandidateModel] = Field(min_length=1)
    observed_fact_ids: list[str]
    # Optional in v1: a writer that made its cases with `make_case` under the v1 header is read too.
    resolution: ResolutionModel | None = None


class CaseV2(CaseModel):
    resolution: ResolutionModel | None  # required from v2 on


class QueueV1(_Strict):
    schema_version: Literal[1]
    cases: list[CaseModel]


class QueueV2(_Strict):
    schema_version: Literal[2]
    cases: list[CaseV2]


def render_queue(cases: list[dict[str, Any]]) -> bytes:
    """The queue file at the current version: stable key order, one trailing newline."""
    upgraded = [{**case, "resolution": case.get("resolution")} for case in cases]
    data = {"schema_version": QUEUE_VERSION, "cases": upgraded}
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
            + "\n").encode()


def queue_version(data: bytes) -> int | None:
    """The schema version a queue file declares, None when it cannot be told."""
    try:
        version = json.loads(data).get("schema_version")
    except (ValueError, AttributeError):
        return None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def parse_queue(data: bytes | None, path: str = CONFLICTS_FILE, *, hint: str | None = None
                ) -> list[dict[str, Any]]:
    """The cases of a queue file (none without one), each with `resolution`; InvalidFileError (exit 3)
    naming path:line when it is broken in any way (`hint` replaces the default hint)."""
    if data is None:
        return []
    findings = [f for f in queue_findings(path, data) if f.severity == "error"]
    if findings:
        raise InvalidFileError(findings, hint=hint or f"restore the last good version from git "
                                                      f"(`git log -- {path}`) and run the command again")
    cases: list[dict[str, Any]] = json.loads(data)["cases"]
    return [{**case, "resolution": case.get("resolution")} for case in cases]


def queue_findings(path: str, data: bytes) -> list[Finding]:
    """Every problem of a queue file, each at its line (empty when the file is good)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [Finding(path, data.count(b"\n", 0, exc.start) + 1, "conflicts-json", "invalid UTF-8")]
    try:
        doc = json.loads(text, parse_constant=refuse_constant)
    except ValueError as exc:
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else 1
        return [Finding(path, line, "conflicts-json", f"invalid JSON: {exc}")]
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > QUEUE_VERSION:
        return [Finding(path, _line_of(text, '"schema_version"'), "conflicts-version",
                        f"schema_version {version} was written by a newer desk (this one reads "
                        f"{', '.join(map(str, READABLE_VERSIONS))}); upgrade desk")]
    if isinstance(version, bool):  # `true == 1` in Python: never taken for version 1
        return [Finding(path, _line_of(text, '"schema_version"'), "conflicts-schema",
                        "schema_version must be a number")]
    model: type[QueueV1] | type[QueueV2] = QueueV1 if version == 1 else QueueV2
    try:
        queue = model.model_validate(doc)
    except ValidationError as exc:
        return [_schema_finding(path, text, doc, e) for e in exc.errors()[:20]]
    return chain_findings(path, text, [c.model_dump() for c in queue.cases])


def _schema_finding(path: str, text: str, doc: Any, error: Any) -> Finding:
    loc = [str(p) for p in error["loc"]]
    line = 1
    if len(loc) >= 2 and loc[0] == "cases" and loc[1].isdigit():
        try:
            case = doc["cases"][int(loc[1])]
            line = _line_of(text, json.dumps(case["id"]) if isinstance(case, dict) and "id" in case
                            else '"cases"')
        except (IndexError, KeyError, TypeError):
            pass
    where = ".".join(loc) or "file"
    return Finding(path, line, "conflicts-schema", f"{where}: {error['msg']}")


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def chain_findings(path: str, text: str, cases: list[dict[str, Any]]) -> list[Finding]:
    """The rules across cases: unique ids, a domain's revisions and links, resolutions."""
    found: list[Finding] = []

    def bad(case: dict[str, Any], message: str) -> None:
        found.append(Finding(path, _line_of(text, '"id": ' + json.dumps(case["id"])), "conflicts-chain",
                             f"case {case['id']}: {message}"))

    by_id: dict[str, dict[str, Any]] = {}
    for case in cases:
        if case["id"] in by_id:
            bad(case, "the same case id appears twice")
        by_id[case["id"]] = case
    domains: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        domains.setdefault(case["domain"], []).append(case)
    for domain, chain in domains.items():
        revisions = sorted({c["revision"] for c in chain})
        if revisions != list(range(1, len(revisions) + 1)):
            bad(chain[0], f"domain {domain}: revisions must run 1, 2, ... without gaps "
                          f"(found {', '.join(map(str, revisions))})")
        # Two clones that each opened the next revision merge into this: a warning, never a refused merge.
        if len(revisions) != len(chain) or sum(c["status"] == "open" for c in chain) > 1:
            found.append(Finding(path, _line_of(text, '"id": ' + json.dumps(chain[0]["id"])),
                                 "conflicts-chain", f"domain {domain}: two cases share a revision or "
                                 "are open at once (clones that each opened one, merged); decide "
                                 "each, or let the next digest review the domain", "warning"))
    for case in cases:
        _case_findings(case, by_id, bad)
    return found


def _case_findings(case: dict[str, Any], by_id: dict[str, dict[str, Any]], bad: Any) -> None:
    status, successor = case["status"], case["superseded_by"]
    project = case.get("project")
    if case.get("origin") is None and (case["domain"].startswith("project:")
                                       != (project is not None) or project is not None
                                       and not case["domain"].startswith(f"project:{project}/")):
        bad(case, f"domain {case['domain']} and project {project!r} disagree: a project's case "
                  "records its project and its domain starts `project:<name>/`")
    candidates = {c["id"] for c in case["candidates"]}
    if len(candidates) != len(case["candidates"]):
        bad(case, "two candidates share an id")
    if successor is not None:
        later = by_id.get(successor)
        if status != "superseded":
            bad(case, f"only a superseded case names a successor, and this one is {status}")
        elif later is None or later["domain"] != case["domain"] or later["revision"] < case["revision"]:
            bad(case, f"superseded_by {successor} is not a later case of domain {case['domain']}")
    if (status == "open") != (case["closed"] is None):
        bad(case, "an open case has no `closed` time and a closed case has one")
    resolution = case.get("resolution")
    if (status == "resolved") != (resolution is not None):
        bad(case, "a resolved case carries its resolution, and only a resolved case does")
    elif resolution is not None and resolution["candidate"] not in candidates:
        bad(case, f"resolution.candidate {resolution['candidate']} is not one of the case's candidates")


EVENT_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}")


def event_id_problem(event_id: str) -> str | None:
    """Why `event_id` cannot name a decision (full match: no trailing newline slips through)."""
    if not EVENT_ID_RE.fullmatch(event_id):
        return ("an event id is 1-200 characters: letters, digits and . _ : @ / + -, starting with "
                "a letter or digit (e.g. review:storage-db:42)")
    return None
