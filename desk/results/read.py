"""Results of the read verbs (recall, context, stats)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from desk.results.base import Wrapped

if TYPE_CHECKING:
    from desk.recall.context import ContextResult
    from desk.recall.hits import RecallResult
    from desk.recall.stats import DeskStats


class Recalled(Wrapped["RecallResult"]):
    """recall's ranked hits with scope, provenance and score breakdown."""

    def text(self) -> str:
        from desk.recall.render import render_text

        return render_text(self.value)

    def xml(self) -> str:
        """docs/design.md §8.1's `<recalled_context>` block (empty when nothing was hit)."""
        from desk.recall.render import render_xml

        return render_xml(self.value)


class Context(Wrapped["ContextResult"]):
    """What the assistant loads at the start of a session; `.text()` is the Markdown to inject."""

    def text(self) -> str:
        from desk.recall.context import render_markdown

        return render_markdown(self.value)


class Stats(Wrapped["DeskStats"]):
    """Counts, the resident index's token cost, stale memories, archive size."""

    def text(self) -> str:
        from desk.recall.stats import render_text

        return render_text(self.value)
