"""What a foreign source holds, in desk's terms, before the desk is consulted: memories, archive
records, the source's versions of desk files, and proposals. Names, descriptions and triggers are
derived by fixed rules, so the same source always yields the same plan."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass, field

from desk.formats.memory_file import DESCRIPTION_MAX, NAME_MAX, TRIGGER_MAX, name_problem

MAX_TRIGGERS = 6
_STOPWORDS = frozenset("""a an and are as at be by for from has have how in is it its of on or that the this
to was were what when where which who why will with you your we our not no yes do does use using
must should can could would may about into over""".split())


@dataclass
class MemoryItem:
    """One memory candidate: `title` is what its name is derived from; `origin` its provenance."""

    title: str
    body: str
    type: str
    description: str
    origin: str
    triggers: list[str] = field(default_factory=list)
    importance: int | None = None
    name: str | None = None  # the source's own slug (a desk export, a Claude Code file), if any


@dataclass
class RecordItem:
    """One archived conversation message; `origin` is unique within its format (re-import key)."""

    kind: str
    content: str
    origin: str
    where: str  # `file:line` or `file: conversation N`, for an error that names it
    session: str | None = None
    actor: str | None = None
    at: str | None = None


@dataclass
class Proposal:
    """A foreign file desk does not write on import: where it would belong, and why not."""

    target: str
    origin: str
    note: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class DeskFileItem:
    """The source's text for the desk file `target`, written where that file is still its `desk
    init` template, proposed otherwise."""

    target: str
    origins: list[str]
    text: str


@dataclass
class Source:
    """Everything one reader found in SOURCE."""

    format: str
    path: str
    memories: list[MemoryItem] = field(default_factory=list)
    records: list[RecordItem] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    desk_files: list[DeskFileItem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # what the reader left out, and why
    profile: dict[str, str] = field(default_factory=dict)  # its user's profile fields (`--user`)
    profile_lines: dict[str, int] = field(default_factory=dict)  # USER.md's line of each, for errors


def slugify(text: str, fallback_seed: str, prefix: str = "note") -> str:
    """A memory name from a title: ASCII lowercase words joined by `-`, at most NAME_MAX; a title
    with no ASCII letters gets `<prefix>-<8 hex of the seed>`, stable for the same item."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")
    slug = slug[:NAME_MAX - 9].rstrip("-.")  # room for a collision suffix
    if not re.search(r"[a-z]", slug) or name_problem(slug):  # "11" from "晚上 11 点…" says nothing
        digest = hashlib.sha256(fallback_seed.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        slug = f"{prefix}-{digest}" if not re.search(r"[a-z]", slug) else f"{slug}-{digest}"
    return slug


def one_line(text: str, limit: int = DESCRIPTION_MAX) -> str:
    """The first non-empty line of `text` without Markdown markers, cut to `limit` characters."""
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:#+|[-*+]|\d+[.)])\s+", "", line)
        line = "".join(c for c in line if unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp"))
        line = " ".join(line.split())
        if line:
            return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"
    return ""


def derive_triggers(tags: list[str], *texts: str) -> list[str]:
    """Triggers from the source's tags, else the distinct content words of the title/description."""
    found: list[str] = []
    for tag in tags:
        tag = one_line(str(tag).lstrip("#"), TRIGGER_MAX)
        if tag and tag.casefold() not in (t.casefold() for t in found):
            found.append(tag)
    if found:
        return found[:MAX_TRIGGERS * 2]
    for text in texts:
        for word in re.findall(r"[^\W_]+(?:[-'][^\W_]+)*", text.casefold()):
            if (len(word) >= 3 or not word.isascii()) and word not in _STOPWORDS \
                    and not word.isdigit() and word not in found:
                found.append(word[:TRIGGER_MAX])
            if len(found) >= MAX_TRIGGERS:
                return found
    return found


def tag_list(value: object) -> list[str]:
    """Tags as a list: a YAML list, or a comma/space separated string (basic-memory, Obsidian)."""
    if isinstance(value, str):
        return [t for t in re.split(r"[,\s]+", value) if t.strip("#")]
    if isinstance(value, (list, tuple)):
        return [str(t) for t in value if isinstance(t, (str, int)) and str(t).strip("#")]
    return []
