"""Desk's methods for review mode (docs/review.md): list, show, accept and reject proposals."""

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
    """`call(desk)`, or on a proposing copy when the review policy proposes the assistant's
    `operation` on a memory of one of `types` (status `proposed`)."""
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
        """The pending proposals, oldest first (with `rejected`, the rejected ones too)."""
        from desk.memory.review import list_proposals
        from desk.results.review import ProposalList

        return ProposalList(list_proposals(self, rejected=rejected))

    def proposal(self, proposal: str) -> ProposalShown:
        """Proposal `proposal`: its diff from the branch now (three-way when a memory moved since)."""
        from desk.memory.review import show_proposal
        from desk.results.review import ProposalShown

        return ProposalShown(show_proposal(self, proposal))

    def accept(self, proposal: str, *, actor: str = "user", text: str | None = None,
               edit: Callable[[str, str], str | None] | None = None) -> ReviewVerdict:
        """Land proposal `proposal` as one commit through the gate; `text` (or `edit(path, text)`)
        replaces its one proposed file. The assistant may not (UsageError, exit 2)."""
        from desk.memory.review import accept_proposal
        from desk.results.review import ReviewVerdict

        return ReviewVerdict(accept_proposal(self, proposal, actor=actor, text=text, edit=edit))

    def reject(self, proposal: str, *, reason: str, actor: str = "user") -> ReviewVerdict:
        """Reject proposal `proposal` (kept on `refs/desk/rejected/<id>`); not by the assistant."""
        from desk.memory.review import reject_proposal
        from desk.results.review import ReviewVerdict

        return ReviewVerdict(reject_proposal(self, proposal, reason=reason, actor=actor))
