"""`desk context`: the read contract of docs/context.md, rendered deterministically within budgets.

A `ContextRequest` names the read (`wake` or `spot`, a query, budgets, a user, a project, a time);
`build_context` reads each section, escaped and trimmed to its budget (whatever is trimmed is
named), and the memories whose triggers the query hits. Same inputs, same bytes.
"""

from desk.recall.context.build import build_context
from desk.recall.context.memories import NOTICE, trigger_hits
from desk.recall.context.request import BUDGET_KEYS, ContextRequest
from desk.recall.context.result import ContextResult, render_markdown
from desk.recall.context.sections import Section

__all__ = ["BUDGET_KEYS", "NOTICE", "ContextRequest", "ContextResult", "Section", "build_context", "render_markdown",
           "trigger_hits"]
