"""The closed word lists desk's files and commands use, defined once (the CLI's choices, the library's checks)."""

import re

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

CONFIG_PATH = ".system/desk.json"
# desk.json's `schema_version` (docs/design.md): an older desk is read as it is (`desk migrate`
# upgrades it); a newer one is refused, never read or written as if it were older.
DESK_SCHEMA = 3
READABLE_SCHEMAS = (1, 2, 3)
# desk.json's `recall.meta_fields` when unset: the `meta` keys of an archived event recall searches.
SEARCHABLE_META = ("caption",)


def newer_schema(version: object) -> str | None:
    """The refusal for a desk.json `schema_version` newer than this desk reads, None when readable."""
    if isinstance(version, int) and not isinstance(version, bool) and version > DESK_SCHEMA:
        return (f"this desk has schema version {version}, written by a newer desk; this desk reads "
                f"schema versions {', '.join(map(str, READABLE_SCHEMAS))}")
    return None


# A desk's id as `desk init` makes it: `desk-` and a uuid4's 32 lowercase hex digits.
DESK_ID_RE = re.compile(r"desk-[0-9a-f]{32}")
