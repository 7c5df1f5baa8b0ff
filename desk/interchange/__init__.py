"""Bring memory in from other tools and take it out again: `desk import` and `desk export`.

`readers/` turn one foreign format (Claude Code, OpenClaw, Markdown vaults, mem0, chat exports)
into plain items (`items.py`); `plan.py` decides, against the desk, what each item becomes
(create / update / unchanged / rejected, and archive records new or already there);
`importing.py` carries a plan out in one commit; `exporting.py` writes the desk's memories in
the formats other tools read. docs/import-export.md describes every format and its source.
"""
