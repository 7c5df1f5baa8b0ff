"""Review mode's results (docs/review.md): the proposals, one shown in full, a verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from desk.results.base import Outcome, Wrapped, commit_suffix, counted, preview

if TYPE_CHECKING:
    from desk.memory.review import Proposal, ReviewOutcome, ShownProposal


@dataclass(frozen=True)
class ProposalList(Outcome):
    """`desk review list`: each proposal's id, what it does and how to review it."""

    proposals: list[Proposal]

    def to_json(self) -> dict[str, Any]:
        return {"proposals": [p.to_json() for p in self.proposals]}

    def text(self) -> str:
        if not self.proposals:
            return "no pending proposals"
        lines = [f"{counted(len(self.proposals), 'proposal')}:"]
        for p in self.proposals:
            state = "" if p.status == "pending" else f" [{p.status}: {preview(p.reason)}]"
            moved = f" (changed on the branch since: {', '.join(p.stale)})" if p.stale else ""
            lines.append(f"  {p.id}  {preview(p.subject)}  by {p.actor or '?'}  {p.date}{state}{moved}")
        lines.append("review one: `desk review show ID`, then `desk review accept ID` or "
                     "`desk review reject ID --reason R`")
        return "\n".join(lines)


class ProposalShown(Wrapped["ShownProposal"]):
    """`desk review show ID`: the diff against the branch now, three-way when a memory moved."""

    def text(self) -> str:
        shown, p = self.value, self.value.proposal
        lines = [f"proposal {p.id}: {p.subject} (by {p.actor or '?'}, {p.date}; base {str(p.base)[:7]})"]
        if p.stale:
            lines += [f"changed on the branch since the proposal: {', '.join(p.stale)} "
                      "(accept refuses: reject it, or make the change yourself)",
                      "", "--- the branch since the proposal's base:", shown.branch_diff or "(no change)",
                      "--- the proposal against its base:", shown.proposal_diff or "(no change)",
                      "--- the proposal against the branch now:"]
        lines.append(shown.diff.rstrip("\n") or "(no difference from the branch)")
        lines.append(f"accept: `desk review accept {p.id}` (--edit to change it first); "
                     f"reject: `desk review reject {p.id} --reason R`")
        return "\n".join(lines)


class ReviewVerdict(Wrapped["ReviewOutcome"]):
    """`desk review accept` / `reject`: what happened to the proposal."""

    def text(self) -> str:
        r = self.value
        if r.earlier:
            return f"proposal {r.proposal} was already {r.status}{commit_suffix(r.commit)}; nothing was changed"
        where = "landed" if r.status == "accepted" else f"kept on refs/desk/rejected/{r.proposal}"
        return f"{r.status}: proposal {r.proposal} ({', '.join(r.paths)}) {where}{commit_suffix(r.commit)}"
