"""Desk's methods for review mode (docs/review.md): list, show, accept and reject proposals, and
`reviewed`, the path every memory write of the API takes so that the policy decides whether the
assistant's write lands or is proposed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from desk.api.base import DeskBase

if TYPE_CHECKING:
    from desk.layout import DeskFolder
    from desk.memory.operations import MutationResult
    from desk.results.review import ProposalList, ProposalShown, ReviewVerdict


def reviewed(desk: DeskFolder, actor: str, operation: str, types: Iterable[str | None], name: str, path: str,
             call: Callable[[DeskFolder], MutationResult]) -> MutationResult:
    """`call(desk)`, or, when the review policy proposes the assistant's `operation` on a memory
    of one of `types`, `call` on a proposing copy: its commit becomes a proposal and the result's
    status is `proposed`, with the proposal's id."""
    from desk.memory.operations import MutationResult
    from desk.memory.review import proposing
    from desk.transaction import Proposed

    target = proposing(desk, actor, operation, types)
    try:
        return call(target)
    except Proposed as done:
        return MutationResult("proposed", name, path, done.commit, proposal=done.proposal)


class ReviewMethods(DeskBase):
    """The proposals the assistant made under review mode, and a person's verdict on each."""

    def proposals(self, *, rejected: bool = False) -> ProposalList:
        """The pending proposals, oldest first (with `rejected`, the rejected ones too). Anyone may
        list them, the assistant included."""
        from desk.memory.review import list_proposals
        from desk.results.review import ProposalList

        return ProposalList(list_proposals(self, rejected=rejected))

    def proposal(self, proposal: str) -> ProposalShown:
        """Proposal `proposal`: the unified diff from the branch as it is now, the proposed files'
        text, and the three-way view when a memory it changes moved on the branch since.
        DeskError (exit 1) when there is no such pending proposal."""
        from desk.memory.review import show_proposal
        from desk.results.review import ProposalShown

        return ProposalShown(show_proposal(self, proposal))

    def accept(self, proposal: str, *, actor: str = "user", text: str | None = None,
               edit: Callable[[str, str], str | None] | None = None) -> ReviewVerdict:
        """Land proposal `proposal` as one commit with desk's own trailers (`Desk-Actor` who accepted,
        `Desk-Proposed-By`, `Desk-Proposal`, `Desk-Reviewed-By`; never copied from the proposal), through
        the gate; `text` replaces its one proposed file, or `edit(path, proposed text)` returns the
        replacement (accept --edit: it runs before the desk is locked; None or blank aborts, exit 2). The assistant may not
        (UsageError, exit 2); a proposal touching anything but memory files or not made by desk is
        refused (exit 3); one whose memory changed on the branch since, too (ConflictError, exit 4)."""
        from desk.memory.review import accept_proposal
        from desk.results.review import ReviewVerdict

        return ReviewVerdict(accept_proposal(self, proposal, actor=actor, text=text, edit=edit))

    def reject(self, proposal: str, *, reason: str, actor: str = "user") -> ReviewVerdict:
        """Reject proposal `proposal`: kept on `refs/desk/rejected/<id>` with `reason`. The
        assistant may not (UsageError, exit 2)."""
        from desk.memory.review import reject_proposal
        from desk.results.review import ReviewVerdict

        return ReviewVerdict(reject_proposal(self, proposal, reason=reason, actor=actor))
