"""The closed word lists desk's files and commands use, defined once.

Plain tuples with no imports, so the CLI can build its `--help` choices from them without
loading the library, and the library validates against the same lists.
"""

MEMORY_TYPES = ("preference", "decision", "convention", "pitfall", "fact", "reference")
MEMORY_SOURCES = ("user", "agent", "digest", "import")
MEMORY_SCOPES = ("durable", "session")  # the write gate refuses `session`
ACTORS = ("user", "assistant")  # who made a change: the Desk-Actor trailer
FACT_KINDS = ("decision", "convention", "pitfall", "outcome")
NOW_SECTIONS = ("doing", "blocked", "next", "reminders")
CONVERSATION_KINDS = ("inbound", "outbound")  # archive kinds a conversation view shows
RECALL_KINDS = ("memory", "conversation", "all")
RANKERS = ("default", "coverage", "seed", "bm25")
CONTEXT_FORMATS = ("markdown", "json")
IMPORT_FORMATS = ("claude-code", "openclaw", "markdown", "mem0", "chat-export", "jsonl")  # desk import FORMAT
EXPORT_FORMATS = ("claude-code", "openclaw", "markdown", "jsonl")  # desk export FORMAT
CONTEXT_MODES = ("wake", "spot")  # desk context --mode: the wake-up read, the key-turn spot check
REASON_MAX = 2000  # characters of a free-text why: `forget --reason`, `resolve --rationale`
