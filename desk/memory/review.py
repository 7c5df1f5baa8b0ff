"""Review mode (docs/review.md): the assistant's writes as proposals a person accepts or rejects.

A proposal is the write's own gated commit, parent HEAD, on `refs/desk/proposals/<id>` (the branch,
work tree and index untouched). `accept` lands its memory files through the gate again with desk's
own trailers; `reject` keeps it on `refs/desk/rejected/<id>` with the reason.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field

from desk.errors import ConflictError, DeskError, Finding, InvalidFileError, UsageError
from desk.formats.memory_file import parse_memory
from desk.formats.memory_index import IndexEntry, render_index
from desk.gate.mirror import head_mirror
from desk.layout import INDEX_FILE, DeskFolder, memory_name, project_index_path
from desk.storage.git import Commit
from desk.transaction import PROPOSALS, commit_message, transaction
from desk.vocabulary import ACTORS

REJECTED = "refs/desk/rejected/"
ACCEPTED = "refs/desk/accepted/"  # each accepted proposal's id -> the commit that landed it
REVIEW_REFS = [PROPOSALS, REJECTED, ACCEPTED]  # what `desk sync` exchanges, never forced
PROPOSED_OPS = ("remember", "set", "edit", "rename", "forget", "restore", "digest")  # the writes review mode proposes
PROPOSAL_ID = re.compile(r"[0-9a-f]{12}")
MEMORY_FILE = re.compile(r"memory/[^/]+\.md")
PROJECT_FILE = re.compile(r"projects/([^/]+)/(?:memory/[^/]+\.md|MEMORY\.md)")


def _name(path: str) -> str:
    """The memory name of a memory file's path (`memory/x.md` -> `x`)."""
    return path.rsplit("/", 1)[-1].removesuffix(".md")


def proposing(desk: DeskFolder, actor: str, operation: str, types: Iterable[str | None]) -> DeskFolder:
    """`desk` itself when this write lands directly, else a copy whose commits become a new proposal
    (the assistant's `operation` on a memory of `types` the policy proposes; never a person's)."""
    if actor == "user" or not desk.config.review:
        return desk
    known: list[str | None] = [t for t in types if t] or [None]  # a type not given (an update) is the memory's own
    if not any(desk.config.review_mode(t, operation) == "propose" for t in known):
        return desk
    clone = copy.copy(desk)
    clone.proposing = os.urandom(6).hex()
    return clone


def memory_type(desk: DeskFolder, path: str) -> str | None:
    """The type of the memory file at `path` in the work tree, None when absent or unreadable."""
    try:
        data = desk.read_if_present(path)
        return None if data is None else parse_memory(data, path, memory_name(path)).meta.type
    except (DeskError, OSError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Proposal:
    """One proposal as `desk review list` and `show` give it."""

    id: str
    commit: str
    base: str | None  # HEAD when it was proposed (its parent)
    subject: str
    operation: str | None  # Desk-Op
    actor: str | None  # Desk-Actor
    date: str
    paths: list[str]
    status: str = "pending"  # pending | rejected
    reason: str | None = None  # a rejected proposal's reason
    stale: list[str] = field(default_factory=list)  # memory files changed on the branch since

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _first(trailers: Mapping[str, list[str]], key: str) -> str | None:
    return next((values[-1] for name, values in trailers.items() if name.lower() == key.lower() and values), None)


def _require_id(proposal: str) -> None:
    if PROPOSAL_ID.fullmatch(proposal) is None:
        raise UsageError(f"{proposal!r} is not a proposal id: 12 lowercase hex digits, as `desk review list` shows")


def _proposal(desk: DeskFolder, proposal: str, sha: str, status: str = "pending") -> Proposal:
    git = desk.git
    commit: Commit = git.history.commits([sha])[0]
    base = git.refs.object_id(f"{sha}^1")
    head = git.refs.head()
    files = [c.path for c in commit.changes if c.path != INDEX_FILE and not c.path.endswith("/" + INDEX_FILE)]
    stale: list[str] = []
    if status == "pending" and base is not None and head is not None and head != base:
        then, now = git.worktree.committed_blobs(files, base), git.worktree.committed_blobs(files, head)
        stale = [p for p in files if then.get(p) != now.get(p)]
    reason = _first(commit.trailers, "Desk-Reason") if status == "rejected" else None
    if status == "rejected":
        original = git.history.commits([f"{sha}^1"])[0]
        commit = Commit(original.sha, original.author, original.email, commit.date, original.subject,
                        original.trailers, original.paths, original.message, original.changes)
        base = git.refs.object_id(f"{sha}^1^1")
    return Proposal(proposal, sha, base, commit.subject, _first(commit.trailers, "Desk-Op"),
                    _first(commit.trailers, "Desk-Actor"), commit.date, [c.path for c in commit.changes],
                    status, reason, stale)


def list_proposals(desk: DeskFolder, *, rejected: bool = False) -> list[Proposal]:
    """The pending proposals (with `rejected`, the rejected ones too), oldest first."""
    git = desk.git
    gone = {ref.rsplit("/", 1)[-1] for prefix in (REJECTED, ACCEPTED) for ref in git.refs.refs_under(prefix)}
    found = [_proposal(desk, ref.removeprefix(PROPOSALS), sha)
             for ref, sha in git.refs.refs_under(PROPOSALS).items() if ref.removeprefix(PROPOSALS) not in gone]
    if rejected:
        found += [_proposal(desk, ref.removeprefix(REJECTED), sha, "rejected")
                  for ref, sha in git.refs.refs_under(REJECTED).items()]
    return sorted(found, key=lambda p: (p.date, p.id))


def _pending(desk: DeskFolder, proposal: str) -> str:
    _require_id(proposal)
    sha = desk.git.refs.ref(PROPOSALS + proposal)
    landed = desk.git.refs.ref(ACCEPTED + proposal)
    if sha is None or landed is not None:
        gone = ("it was accepted" if landed is not None else "it was rejected"
                if desk.git.refs.ref(REJECTED + proposal) else "there is no such proposal")
        raise DeskError(f"no pending proposal {proposal}: {gone}", hint="`desk review list` shows the pending ones")
    return sha


@dataclass(frozen=True, slots=True)
class ShownProposal:
    """`desk review show`: the proposal, its diff against the branch now, and the three-way view
    when a memory it changes moved on the branch since."""

    proposal: Proposal
    diff: str
    branch_diff: str | None = None  # base -> branch now, for the stale files
    proposal_diff: str | None = None  # base -> proposal, for the stale files
    files: dict[str, str | None] = field(default_factory=dict)  # the proposed memory files' text (None: deleted)

    def to_json(self) -> dict[str, object]:
        return {**self.proposal.to_json(), "diff": self.diff, "branch_diff": self.branch_diff,
                "proposal_diff": self.proposal_diff, "files": self.files}


def show_proposal(desk: DeskFolder, proposal: str) -> ShownProposal:
    """Proposal `proposal` with its diff from the branch now (and the three-way view when stale)."""
    sha = _pending(desk, proposal)
    found = _proposal(desk, proposal, sha)
    git = desk.git
    head = git.refs.head() or sha
    files = [p for p in found.paths if p != INDEX_FILE and not p.endswith("/" + INDEX_FILE)]
    blobs = git.worktree.committed_blobs(files, sha)
    texts = git.objects.read_blobs(set(blobs.values()))
    text = {p: (texts[blobs[p]].decode("utf-8", "replace") if p in blobs else None) for p in files}
    branch = proposed = None
    if found.stale and found.base is not None:
        branch = git.worktree.diff_commits(found.base, head, found.stale)
        proposed = git.worktree.diff_commits(found.base, sha, found.stale)
    return ShownProposal(found, git.worktree.diff_commits(head, sha, files), branch, proposed, text)


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """What accept or reject did: the proposal, its new status and the commit made."""

    proposal: str
    status: str  # accepted | rejected
    commit: str | None
    paths: list[str]
    earlier: bool = False  # asked again: the verdict was given before (a retried accept or reject)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _decided(desk: DeskFolder, proposal: str, status: str) -> ReviewOutcome | None:
    """The verdict already given on `proposal` when it is asked again (a retry answers what was done)."""
    _require_id(proposal)
    git = desk.git
    done = git.refs.ref((ACCEPTED if status == "accepted" else REJECTED) + proposal)
    if done is None or git.refs.ref(PROPOSALS + proposal) is not None:
        return None
    commit = git.history.commits([done if status == "accepted" else f"{done}^1"])[0]
    paths = [c.path for c in commit.changes if c.path != INDEX_FILE and not c.path.endswith("/" + INDEX_FILE)]
    return ReviewOutcome(proposal, status, done, paths, earlier=True)


def _require_person(actor: str, verb: str) -> None:
    if actor != "user":
        raise UsageError(f"the {actor} may not {verb} a proposal: a person reviews what the assistant proposed",
                         hint="a person runs `desk review " + verb + " ID` (the assistant may list and show proposals)")


def _hostile(proposal: str, sha: str, commit: Commit, base: str | None, second: str | None) -> list[Finding]:
    """Why a proposal ref cannot be accepted as it stands (one desk never made, or made by hand)."""
    findings: list[Finding] = []
    if base is None or second is not None:
        findings.append(Finding(commit.paths[0] if commit.paths else INDEX_FILE, 1, "review-shape",
                                f"proposal {proposal} ({sha[:12]}) is not one commit on the branch's history"))
    if _first(commit.trailers, "Desk-Proposal") != proposal:
        findings.append(Finding(INDEX_FILE, 1, "review-unmarked", f"proposal {proposal}'s commit does not carry "
                                f"`Desk-Proposal: {proposal}`: desk did not make it for this id"))
    if not any(MEMORY_FILE.fullmatch(c.path) or (PROJECT_FILE.fullmatch(c.path) and not c.path.endswith(INDEX_FILE))
               for c in commit.changes):
        findings.append(Finding(INDEX_FILE, 1, "review-shape", f"proposal {proposal} changes no memory file"))
    for change in commit.changes:
        if not (MEMORY_FILE.fullmatch(change.path) or PROJECT_FILE.fullmatch(change.path)
                or change.path == INDEX_FILE):
            findings.append(Finding(change.path, 1, "review-path", f"a proposal may change memory files "
                                    f"only; proposal {proposal} changes {change.path}"))
    return findings


def _accepted_message(commit: Commit, proposal: str, actor: str, writes: Mapping[str, bytes | None],
                      project: str | None, edited: bool) -> str:
    """The accepted commit's message: the proposal's subject and desk's own trailers (a proposal ref
    may be hand-made, so its trailers are never copied, only values desk knows)."""
    op, by = _first(commit.trailers, "Desk-Op"), _first(commit.trailers, "Desk-Actor")
    gone, kept = ([_name(p) for p, data in writes.items() if (data is None) == deleted] for deleted in (True, False))
    renamed = op == "rename" and len(gone) == len(kept) == 1
    return commit_message(commit.subject, {
        "Desk-Op": op if op in PROPOSED_OPS else "accept-proposal",
        "Desk-Memory": kept[0] if renamed else ", ".join(map(_name, writes)),
        "Desk-Renamed-From": gone[0] if renamed else None, "Desk-Project": project, "Desk-Actor": actor,
        "Desk-Proposed-By": by if by in ACTORS and by != "user" else None,  # a person's writes are never proposed
        "Desk-Proposal": proposal, "Desk-Reviewed-By": actor, "Desk-Review-Edited": "yes" if edited else None})


def accept_proposal(desk: DeskFolder, proposal: str, *, actor: str = "user", text: str | None = None,
                    edit: Callable[[str, str], str | None] | None = None) -> ReviewOutcome:
    """Land proposal `proposal` on the branch as one commit through the gate (`text`: its one memory
    file replaced, accept --edit). UsageError (exit 2) for the assistant, exit 3 for a proposal
    desk did not make or the gate refuses, ConflictError (exit 4) when its memories moved since."""
    _require_person(actor, "accept")
    if (earlier := _decided(desk, proposal, "accepted")) is not None:
        return earlier
    if edit is not None and text is None:  # the editor runs before the lock is taken
        written = {p: t for p, t in show_proposal(desk, proposal).files.items() if t is not None}
        if len(written) != 1:
            raise UsageError(f"--edit needs a proposal that writes one memory file; {proposal} writes {len(written)}")
        (edited, before), = written.items()
        text = edit(edited, before)
        if text is None or not text.strip():
            raise UsageError(f"the edited {edited} is empty; nothing was changed",
                             hint=f"run `desk review accept {proposal} --edit` again, or reject it")
    with transaction(desk) as tx, head_mirror(desk) as mirror:
        _require_id(proposal)
        git = desk.git
        left, landed = git.refs.ref(PROPOSALS + proposal), git.refs.ref(ACCEPTED + proposal)
        if left is not None and landed is not None:
            # an accept killed between its two refs: the accepted ref stands, delete the proposal's
            git.refs.swap_ref(PROPOSALS + proposal, None, left, f"accept: {proposal}")
            return ReviewOutcome(proposal, "accepted", None, list(git.history.commits([left])[0].paths))
        sha = _pending(desk, proposal)
        commit = git.history.commits([sha])[0]
        base, second = git.refs.object_id(f"{sha}^1"), git.refs.object_id(f"{sha}^2")
        findings = _hostile(proposal, sha, commit, base, second)
        if findings:
            raise InvalidFileError(findings, hint=f"reject it: `desk review reject {proposal} --reason ...`")
        assert base is not None
        files = sorted(c.path for c in commit.changes if c.path != INDEX_FILE and not c.path.endswith("/" + INDEX_FILE))
        head = git.refs.head()
        then = git.worktree.committed_blobs(files, base)
        now = git.worktree.committed_blobs(files, head) if head else {}
        proposed = git.worktree.committed_blobs(files, sha)
        done = _landed(desk, proposal, base, files) if head is not None and head != base else None
        if done is not None:
            # an accept killed after its commit landed, before its refs moved (other commits may
            # have landed since): finish it, never land it twice
            git.refs.swap_ref(ACCEPTED + proposal, done, None, f"accept: {proposal}")
            git.refs.swap_ref(PROPOSALS + proposal, None, sha, f"accept: {proposal}")
            return ReviewOutcome(proposal, "accepted", None, files)
        moved = [p for p in files if then.get(p) != now.get(p)]
        if moved:
            raise ConflictError(f"{', '.join(moved)} changed on the branch since proposal {proposal} was made; "
                                "nothing was changed", hint=f"`desk review show {proposal}` shows both changes; "
                                f"reject it, or make the change yourself")
        data = git.objects.read_blobs(set(proposed.values()))
        writes: dict[str, bytes | None] = {p: (data[proposed[p]] if p in proposed else None) for p in files}
        if text is not None:
            kept = [p for p, v in writes.items() if v is not None]
            if len(kept) != 1:
                raise UsageError(f"--edit needs a proposal that writes one memory file; {proposal} writes {len(kept)}")
            writes[kept[0]] = text.encode("utf-8")
        projects = {found.group(1) for p in files if (found := PROJECT_FILE.fullmatch(p))}
        if projects and (len(projects) > 1 or any(MEMORY_FILE.fullmatch(p) for p in files)):
            raise UsageError(f"proposal {proposal} changes memories of more than one scope; reject it")
        message = _accepted_message(commit, proposal, actor, writes, next(iter(projects), None), text is not None)
        tx.require_clean([*files, *(project_index_path(p) for p in projects)] or [INDEX_FILE])
        memories = {p: (parse_memory(v, p, _name(p)) if v is not None else None) for p, v in writes.items()}
        if projects:
            from desk.memory.reads import project_memories

            project = next(iter(projects))
            current = project_memories(desk, project)
            for p, memory in memories.items():
                current.pop(_name(p), None)
                if memory is not None:
                    current[memory.name] = memory
            writes[project_index_path(project)] = render_index(IndexEntry.of(m) for m in current.values())
            landed = tx.commit(writes, message)
        else:
            from desk.memory.operations import commit_entries

            tx.require_clean([INDEX_FILE])
            changes = {_name(p): (IndexEntry.of(m) if m is not None else None) for p, m in memories.items()}
            landed = commit_entries(desk, tx, mirror, writes, changes, message)
        git.refs.swap_ref(ACCEPTED + proposal, landed, None, f"accept: {proposal}")  # other clones learn it
        git.refs.swap_ref(PROPOSALS + proposal, None, sha, f"accept: {proposal}")
    return ReviewOutcome(proposal, "accepted", landed, files)


def pending_lines(desk: DeskFolder) -> list[str]:
    """One line per pending proposal for `desk context --pending`: its id, subject and each file's
    first body line (or that it removes it)."""
    lines = []
    for found in list_proposals(desk):
        shown = show_proposal(desk, found.id)
        said = [f"removes {path}" if text is None else f"{path}: {_first_line(path, text)}"
                for path, text in shown.files.items()]
        lines.append(f"- PENDING, not yet in memory ({found.id}, {found.subject}): {'; '.join(said)}")
    return lines


def _first_line(path: str, text: str) -> str:
    try:
        return parse_memory(text.encode("utf-8"), path, _name(path)).body.strip().split("\n", 1)[0]
    except (DeskError, ValueError):
        return "(unreadable)"


def already_proposed(desk: DeskFolder, path: str, body: str) -> bool:
    """Whether a pending or rejected proposal already writes `path` with this body."""
    from desk.text.normalize import content_key

    git, wanted = desk.git, content_key(body)
    for prefix in (PROPOSALS, REJECTED):
        for sha in git.refs.refs_under(prefix).values():
            data = git.objects.blob_at(sha, path)
            if data is None:
                continue
            try:
                if content_key(parse_memory(data, path, _name(path)).body) == wanted:
                    return True
            except (DeskError, ValueError):
                continue
    return False


def _landed(desk: DeskFolder, proposal: str, base: str, files: list[str]) -> str | None:
    """The branch's commit since `base`, touching `files`, that accepted `proposal`, or None."""
    for commit in desk.git.history.log(files, rev=f"{base}..HEAD"):
        if _first(commit.trailers, "Desk-Proposal") == proposal and _first(commit.trailers, "Desk-Reviewed-By"):
            return commit.sha
    return None


def reject_proposal(desk: DeskFolder, proposal: str, *, reason: str, actor: str = "user") -> ReviewOutcome:
    """Move proposal `proposal` to `refs/desk/rejected/<id>` (a commit on it carrying the reason; the
    same message lands on the branch as an empty commit), then delete the proposal's ref."""
    _require_person(actor, "reject")
    if not reason or not reason.strip():
        raise UsageError("--reason is required: say why the proposal is rejected")
    if (earlier := _decided(desk, proposal, "rejected")) is not None:
        return earlier
    with transaction(desk) as tx:
        sha = _pending(desk, proposal)
        git = desk.git
        tree = git.refs.object_id(f"{sha}^{{tree}}")
        assert tree is not None
        message = commit_message(f"reject proposal {proposal}", {
            "Desk-Op": "reject-proposal", "Desk-Proposal": proposal, "Desk-Actor": actor, "Desk-Reason": reason})
        kept = git.refs.ref(REJECTED + proposal)
        if kept is not None and git.refs.object_id(f"{kept}^1") == sha:
            rejected = kept  # a reject killed between its two refs: finish it
        else:
            rejected = git.commit_tree(tree, sha, message)
            if not git.refs.swap_ref(REJECTED + proposal, rejected, None, f"reject: {proposal}"):
                raise ConflictError(f"proposal {proposal} was already rejected", hint="`desk review list --rejected`")
        base = git.refs.object_id(f"{sha}^1")
        since = git.history.log(rev=f"{base}..HEAD") if base is not None else git.history.log()
        if not any(_first(c.trailers, "Desk-Op") == "reject-proposal" and _first(c.trailers, "Desk-Proposal") == proposal
                   for c in since):  # a reject killed after its audit commit, other commits since: not twice
            tx.commit({}, message)  # the audit trail (`desk log`): an empty commit on the branch
        git.refs.swap_ref(PROPOSALS + proposal, None, sha, f"reject: {proposal}")
    return ReviewOutcome(proposal, "rejected", rejected, list(git.history.commits([sha])[0].paths))
