"""`desk stats`: what the desk holds and what it costs to keep resident (docs/design.md §8.4): the
index's tokens (paid every session), the bodies' (paid when a trigger hits), memories by type,
expired and long-unverified memories, and the archive's size."""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from desk.errors import Finding
from desk.layout import ARCHIVE_DIR, INDEX_FILE, DeskFolder
from desk.gate.entries import entries_in_worktree, invalid_paths
from desk.text.plural import counted
from desk.text.times import format_time, parse_time, utc_now
from desk.text.tokens import estimate_tokens

UNVERIFIED_DAYS = 180


@dataclass
class DeskStats:
    memories: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    index_tokens: int = 0
    index_bytes: int = 0
    body_tokens: int = 0
    expired: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    unverified_days: int = UNVERIFIED_DAYS
    archive_files: int = 0
    archive_bytes: int = 0
    archive_events: int = 0
    cache_bytes: int = 0
    as_of: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "as_of": self.as_of,
            "memories": {"total": self.memories, "by_type": self.by_type,
                         "expired": self.expired, "unverified": self.unverified,
                         "broken": self.broken,
                         "unverified_after_days": self.unverified_days},
            "tokens": {"index_resident": self.index_tokens, "bodies_on_disk": self.body_tokens,
                       "index_bytes": self.index_bytes,
                       "estimator": "desk.text.tokens.estimate_tokens (CJK char = 1, ASCII word = len/4)"},
            "archive": {"files": self.archive_files, "bytes": self.archive_bytes,
                        "events": self.archive_events},
            "cache_bytes": self.cache_bytes,
        }


def desk_stats(desk: DeskFolder, *, now: dt.datetime | None = None,
               unverified_days: int = UNVERIFIED_DAYS) -> DeskStats:
    """Count memories, token costs, stale memories and the archive. Read-only."""
    now = now or utc_now()
    stats = DeskStats(unverified_days=unverified_days, as_of=format_time(now))
    invalid: list[Finding] = []
    entries = entries_in_worktree(desk, invalid)
    stats.broken = invalid_paths(invalid)
    stats.memories = len(entries)
    stats.by_type = dict(sorted(Counter(e.type for e in entries.values()).items()))
    data = desk.read_if_present(INDEX_FILE)
    if data is not None:
        stats.index_bytes = len(data)
        stats.index_tokens = estimate_tokens(data.decode("utf-8", "replace"))
    cutoff = now - dt.timedelta(days=unverified_days)
    stats.expired = [n for n in sorted(entries) if entries[n].is_expired(now)]
    stats.unverified = [n for n, e in sorted(entries.items()) if e.updated is None or parse_time(e.updated) < cutoff]
    stats.body_tokens = sum(e.body_tokens for e in entries.values())
    folder = desk.path(ARCHIVE_DIR)
    if folder.is_dir():
        for item in sorted(os.scandir(folder), key=lambda i: i.name):
            if item.name.endswith(".jsonl") and item.is_file(follow_symlinks=False):
                stats.archive_files += 1
                stats.archive_bytes += item.stat().st_size
                stats.archive_events += desk.read(f"{ARCHIVE_DIR}/{item.name}").count(b"\n")
    if desk.cache_dir.is_dir():
        stats.cache_bytes = sum(p.stat().st_size for p in desk.cache_dir.rglob("*") if p.is_file())
    return stats


def render_text(stats: DeskStats) -> str:
    types = ", ".join(f"{k} {v}" for k, v in stats.by_type.items()) or "none"
    lines = [
        f"memories: {stats.memories} ({types})",
        f"resident index: {counted(stats.index_tokens, 'token')} (MEMORY.md, loaded every session)",
        f"memory bodies: {counted(stats.body_tokens, 'token')} on disk (injected only when a trigger hits)",
        f"expired: {len(stats.expired)}" + (f" ({', '.join(stats.expired[:10])})" if stats.expired else ""),
        f"unverified for {stats.unverified_days}+ days: {len(stats.unverified)}"
        + (f" ({', '.join(stats.unverified[:10])})" if stats.unverified else ""),
        *([f"broken (do not parse, left out): {', '.join(stats.broken)}"] if stats.broken else []),
        f"archive: {counted(stats.archive_events, 'event')} in {counted(stats.archive_files, 'file')}, "
        f"{counted(stats.archive_bytes, 'byte')}",
        f"search cache: {stats.cache_bytes} bytes (derived, in .git/desk-cache)",
    ]
    return "\n".join(lines)
