"""`desk conversations render`: Markdown views of archived inbound/outbound events.

`conversations/YYYY-MM-DD/<session>.md` is a pure function of the archive (docs/design.md §8.2),
committed in one commit; a view a person edited is not overwritten. Direction controls show as
`<U+202E>` (desk.text.direction.visible).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from desk.archive.store import ArchiveEvent, iter_events
from desk.layout import ARCHIVE_DIR, CONVERSATIONS_DIR, DeskFolder
from desk.text.direction import visible
from desk.text.names import path_name_problem
from desk.text.times import parse_time
from desk.transaction import commit_message, transaction
from desk.vocabulary import CONVERSATION_KINDS

NO_SESSION = "no-session"
# A view is a text file the gate limits (desk/gate/rules.py TEXT_LIMIT), so a long message shows its
# start and a full view its first messages, each cut saying where the rest is (the archive).
MESSAGE_CHARS = 16_000
VIEW_BYTES = 768 * 1024


@dataclass
class RenderResult:
    status: str  # committed | unchanged
    commit: str | None = None
    files: list[str] = field(default_factory=list)  # written (changed) views
    views: int = 0  # views rendered, changed or not
    events: int = 0

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def view_path(day: str, session: str | None) -> str:
    """`conversations/<day>/<session>.md`; a session id that is not a safe file name gets a hash."""
    if session is None:
        stem = NO_SESSION
    elif path_name_problem(session, limit=80) is None and session != NO_SESSION:
        stem = session
    else:
        slug = re.sub(r"[^a-z0-9._-]+", "-", session.lower()).strip("-._")[:40] or "session"
        stem = f"{slug}-{hashlib.sha256(session.encode()).hexdigest()[:8]}"
        if path_name_problem(stem, limit=80):  # `aux.md` -> `aux.md-…`: still a device stem
            stem = f"session-{stem}"
    return f"{CONVERSATIONS_DIR}/{day}/{stem}.md"


def _quote(text: str) -> str:
    # Block-quoted, so a heading or fence inside a message cannot break the view's structure.
    return "\n".join(f"> {line}" if line else ">" for line in visible(text).splitlines()) or ">"


def _inline(text: str) -> str:
    """A session or actor name as one line of inline code: it cannot add headings or emphasis."""
    flat = visible(" ".join(text.split())).replace("`", "'")
    return f"`{flat}`"


def render_view(day: str, session: str | None, events: list[ArchiveEvent]) -> bytes:
    """The Markdown view of one session's messages on one day, at most VIEW_BYTES (module docstring)."""
    title = _inline(session) if session is not None else "(no session)"
    head = [f"# Conversation {title} — {day}", "",
            f"<!-- Generated from {ARCHIVE_DIR} by `desk conversations render`; do not edit. "
            "The archive is the source of truth. -->", ""]
    out = "\n".join(head) + "\n"
    size = len(out.encode())
    for shown, event in enumerate(events):
        block = _message(event.record)
        if size + len(block.encode()) > VIEW_BYTES:
            left = len(events) - shown
            until = dt.date.fromisoformat(day) + dt.timedelta(days=1)
            where = f" --session {shlex.quote(_inline(session)[1:-1])}" if session is not None else ""
            out += (f"_{left} more message{'s' if left != 1 else ''} of this day not shown: a view is at most "
                    f"{VIEW_BYTES // 1024} KiB; the archive holds them all (`desk archive list --since {day} "
                    f"--until {until.isoformat()}{where}`)._\n")
            break
        out += block
        size += len(block.encode())
    return (out.rstrip("\n") + "\n").encode()


def _message(rec: dict[str, Any]) -> str:
    """One message: its header line and its content as a block quote, cut at MESSAGE_CHARS."""
    who = _inline(rec.get("actor") or ("user" if rec["kind"] == "inbound" else "assistant"))
    stamp = str(rec["at"])[11:19]
    content = rec.get("content")
    if content is None and rec.get("payload") is not None:
        content = json.dumps(rec["payload"], ensure_ascii=False, sort_keys=True)
    content = content or ""
    lines = [f"**{who}** · {stamp}Z · {visible(str(rec['kind']))} · `{visible(str(rec['id']))}`", "", _quote(content[:MESSAGE_CHARS]), ""]
    if len(content) > MESSAGE_CHARS:
        lines[-1:] = ["", f"_… {len(content) - MESSAGE_CHARS} more characters: `desk archive show {rec['id']}`_", ""]
    return "\n".join(lines) + "\n"


def render_views(desk: DeskFolder, *, date: str | None = None, session: str | None = None
                 ) -> tuple[dict[str, bytes], int]:
    """Every view of `date` (a UTC day; default: every day) and `session`, rendered from the
    archive alone: `({path: bytes}, events)`. The same records give the same bytes in every clone,
    so desk sync regenerates a view both clones changed from the merged archive."""
    since = until = None
    if date is not None:
        since = parse_time(date, "--date").replace(hour=0, minute=0, second=0, microsecond=0)
        until = since + dt.timedelta(days=1)  # the whole UTC day of the date (or time) given
    groups: dict[str, list[ArchiveEvent]] = {}
    sessions: dict[str, tuple[str, str | None]] = {}
    count = 0
    for event in iter_events(desk, since=since, until=until, kinds=CONVERSATION_KINDS, session=session):
        day = str(event.record["at"])[:10]
        sess = event.record.get("session")
        path = view_path(day, sess)
        groups.setdefault(path, []).append(event)
        sessions[path] = (day, sess)
        count += 1
    return {path: render_view(*sessions[path], events) for path, events in sorted(groups.items())}, count


def render_conversations(desk: DeskFolder, *, date: str | None = None, session: str | None = None,
                         actor: str = "assistant") -> RenderResult:
    """Regenerate the views for `date` (a UTC day; default: every day) and `session`; one commit."""
    views, count = render_views(desk, date=date, session=session)
    result = RenderResult("unchanged", views=len(views), events=count)
    with transaction(desk) as tx:
        changed = {p: data for p, data in views.items()
                   if desk.read_if_present(p) != data}
        if not changed:
            return result
        tx.require_clean(sorted(changed))  # a view a person edited is theirs until committed
        n = len(changed)
        message = commit_message(
            f"conversations: render {n} view{'s' if n != 1 else ''}",
            {"Desk-Op": "conversations", "Desk-Actor": actor, "Desk-Date": date,
             "Desk-Session": session})
        result.commit = tx.commit(changed, message)
    result.status, result.files = "committed", sorted(changed)
    return result
