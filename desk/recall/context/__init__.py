"""`desk context`: the read contract of docs/context.md (the read itself is desk.recall.context.build)."""

from desk.recall.context.build import (BUDGET_KEYS, LATER_BUDGETS, MODES, OPTION_DEFAULTS, READ_ORDER, ContextResult,
                                       _configured_budgets, _index_text, budgets_for, build_context,
                                       configured_options, render_markdown)
from desk.recall.context.memories import BLOCK, NOTICE, _memory_xml, trigger_hits
from desk.recall.context.sections import Section, _trim_entries

__all__ = ["BLOCK", "BUDGET_KEYS", "LATER_BUDGETS", "MODES", "NOTICE", "OPTION_DEFAULTS", "READ_ORDER",
           "ContextResult", "Section", "_configured_budgets", "_index_text", "_memory_xml", "_trim_entries",
           "budgets_for", "build_context", "configured_options", "render_markdown", "trigger_hits"]
