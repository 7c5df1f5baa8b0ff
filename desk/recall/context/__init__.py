"""`desk context`: the read contract of docs/context.md, rendered deterministically within budgets.

A `ContextRequest` (request.py) names the read: `wake` (the project's AGENTS.md, AGENTS.md, SOUL.md,
NOW.md, MISTAKES.md, the user's USER.md, profile and preferences, MEMORY.md, the project's own
MEMORY.md, recent facts) or `spot` (NOW.md, MISTAKES.md, the newest journal days); a query adds the
bodies of the memories whose triggers it hits (memories.py; no hit, nothing injected). Nothing of
another user's scope or another project's is read. Each section is trimmed to its budget and
whatever is trimmed is named (sections.py); every stored text is escaped for what it sits in
(`desk.text.escape`), and desk's headings carry a boundary token derived from the rendered content
(result.py). The output is a pure function of the files, the archive's facts, the request and
`as_of`: same inputs, same bytes.
"""

from desk.recall.context.build import build_context
from desk.recall.context.memories import NOTICE, trigger_hits
from desk.recall.context.request import BUDGET_KEYS, ContextRequest
from desk.recall.context.result import ContextResult, render_markdown
from desk.recall.context.sections import Section

__all__ = ["BUDGET_KEYS", "NOTICE", "ContextRequest", "ContextResult", "Section", "build_context", "render_markdown",
           "trigger_hits"]
