"""Desk's reads: recall, context and stats."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desk.api.base import DeskBase, Progress, Time

if TYPE_CHECKING:
    from desk.results import Context, Recalled, Stats


class ReadMethods(DeskBase):
    """Read the desk: recall, context, stats."""

    def recall(self, query: str, *, limit: int = 5, kind: str = "all", as_of: Time | None = None,
               ranker: str = "default", progress: Progress | None = None,
               project: str | None = None, all_scopes: bool = False, embedder: Any = None,
               embed_progress: Progress | None = None, now: Time | None = None) -> Recalled:
        """Search memories and archived conversations for `query`; read-only (docs/recall.md).

        `as_of`: the desk as committed then (docs/time.md); `now`: the time the ranking treats as
        now. The search cache stays warm on this object until `close()`. `embedder` turns on
        hybrid recall. UsageError (exit 2) for an empty query or a limit outside 1..10.
        """
        asked = started = None
        if as_of is not None:  # its `git log` walks the history while the search modules load
            from desk.memory.past import start_at

            started = start_at(self, as_of)
        if self._search_cache is None:  # a cold recall: git works while the search modules load
            from desk.recall.git_state import search_git_state

            asked = search_git_state(self)
        from desk.recall.search import recall
        from desk.recall.search_cache import SearchCache
        from desk.results.read import Recalled

        if self._search_cache is None:
            self._search_cache = SearchCache(self)
            self._search_cache.take_asked(asked)
        past = started() if started is not None else None
        dense = None
        if embedder is not None:
            from desk.recall.hybrid import DenseIndex, check_embedder, load_embedder

            self._dense = self._dense or {}
            dense = self._dense.get(embedder if isinstance(embedder, str) else id(embedder))
            if dense is None:
                made = load_embedder(embedder) if isinstance(embedder, str) else check_embedder(embedder)
                dense = self._dense[embedder if isinstance(embedder, str) else id(embedder)] = DenseIndex(self, made)
            dense.progress = embed_progress
        return Recalled(recall(self, query, limit=limit, kind=kind, as_of=past.when if past else now,
                               ranker=ranker, cache=self._search_cache, progress=progress, project=project,
                               all_scopes=all_scopes, dense=dense, past=past))

    def context(self, *, mode: str = "wake", query: str | None = None, budget: int | None = None,
                section_budgets: Mapping[str, int] | None = None,
                project_agents: str | Path | None = None, as_of: Time | None = None,
                journal_days: int | None = None, user: str | None = None,
                project: str | None = None, pending: bool = False, now: Time | None = None) -> Context:
        """What the assistant reads, within the budgets (docs/context.md): `mode` `wake` or `spot`;
        `user`'s profile and preferences, `project`'s memories, review mode's `pending` proposals;
        `as_of` reads the desk as committed then, USER.md, preferences and project memories too
        (docs/time.md). UsageError (exit 2) for an unknown mode or budget section.
        """
        from desk.recall.git_state import context_git_state

        # git works while the context modules load; build_context owns the processes from here
        asked = context_git_state(self, mode, query, user, project)
        started = None
        try:
            if as_of is not None:  # its `git log` too
                from desk.memory.past import start_at

                started = start_at(self, as_of)
            from desk.recall.context import ContextRequest, build_context
            from desk.results.read import Context
            from desk.text.times import utc_now

            past = None
            if as_of is not None or now is not None:
                from desk.recall.search import parse_as_of  # recall's modules only for a given time

                when = parse_as_of(as_of if as_of is not None else now)
                past = started() if started is not None else None
            else:
                when = utc_now()
        except BaseException:
            if asked is not None:
                asked.close()
            raise

        def facts(count: int, memories: Mapping[str, Any]) -> Any:
            from desk.digest.recent import recent_facts

            return recent_facts(self, as_of=when, count=count, memories=memories, project=project)

        request = ContextRequest(
            mode=mode, query=query, budget=budget, section_budgets=section_budgets or {},
            project_agents=Path(project_agents) if project_agents is not None else None,
            as_of=when, journal_days=journal_days, user=user, project=project, past=past)
        result = build_context(self, request, facts=facts, git_state=asked)
        if pending:
            result.sections.append(_pending_section(self, self.config.budgets.recalled))
        return Context(result)

    def stats(self, *, unverified_days: int = 180, now: dt.datetime | None = None) -> Stats:
        """Memories by type, the resident index's token cost, stale memories, archive size."""
        from desk.recall.stats import desk_stats
        from desk.results.read import Stats

        return Stats(desk_stats(self, now=now, unverified_days=unverified_days))


def _pending_section(desk: DeskBase, budget: int) -> Any:
    """`desk context --pending`'s section: the pending proposals, cut to `budget` tokens."""
    from desk.memory.review import pending_lines
    from desk.recall.context.sections import Section
    from desk.text.escape import markdown_block
    from desk.text.tokens import estimate_tokens

    lines, kept, left = pending_lines(desk), list[str](), list[str]()
    for line in lines:
        if estimate_tokens("\n".join([*kept, line])) <= budget:
            kept.append(line)
        else:
            left.append(line.split(":", 1)[0])
    text = markdown_block("\n".join(kept) + "\n") if kept else "_(no pending proposals)_\n"
    return Section("pending", "pending proposals (review mode: not in memory until a person accepts)",
                   None, text, budget, left_out=left)
