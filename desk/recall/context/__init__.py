"""`desk context`: the read contract of docs/context.md, rendered deterministically within budgets.

Two reads, one `mode` parameter (the CLI's `--mode wake|spot`; docs/context.md says why one
option and not a flag per read: the MCP `context` tool and `Desk.context` take the same value):

- `wake` (seed 002 "Read A/B", the default): the project's AGENTS.md (when given), the desk's
  AGENTS.md, SOUL.md, NOW.md, MISTAKES.md, USER.md, the user's profile line and preferences,
  MEMORY.md (active memories only), the `--project` scope's own MEMORY.md (when given), then at
  most `context.recent_facts` recent facts (seed 000: facts not yet memories, never a keyed fact,
  `desk.digest.recent`). `user` selects whose USER.md and preferences are read (the owner's by
  default; nothing of any other user's scope is read), `project` which project's memories are
  added to the desk-wide ones (never another project's): docs/scopes.md, desk.recall.context.scopes.
- `spot` (seed 002 "Read C", the key-turn spot check): NOW.md, MISTAKES.md and the newest
  `journal_days` journal days on or before `as_of`; nothing of SOUL.md, USER.md or MEMORY.md.

In both, a query adds the bodies of the memories whose triggers it hits (docs/design.md §8.4: no
hit, nothing injected), each with its provenance, inside one block that carries the notice that
memory is background that may be out of date.

Budgets (estimated tokens, `desk.text.tokens`) come per section from `.system/desk.json` `budgets` and
can be overridden per call; the total budget is spent in read order. Whatever is trimmed is named in
the output, never dropped silently; MISTAKES.md keeps its highest-value entries (importance, then
query terms, then newest). Every stored text is escaped for what it sits in (`desk.text.escape`):
Markdown sections cannot open a heading of desk's levels, a desk note or a desk element, memory
text in the XML block cannot close it, and the headings carry a boundary token derived from the
rendered content. The output is a pure function of the files, the archive's facts, the query, the
budgets and `as_of`: same inputs, same bytes.
"""

from desk.recall.context.build import build_context
from desk.recall.context.memories import BLOCK, NOTICE, trigger_hits
from desk.recall.context.request import BUDGET_KEYS, MODES, READ_ORDER, ContextRequest
from desk.recall.context.result import ContextResult, render_markdown
from desk.recall.context.sections import Section

__all__ = ["BLOCK", "BUDGET_KEYS", "MODES", "NOTICE", "READ_ORDER", "ContextRequest", "ContextResult", "Section",
           "build_context", "render_markdown", "trigger_hits"]
