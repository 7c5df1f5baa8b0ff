"""ChatGPT and Claude data exports: `conversations.json` (or its folder), read as
docs/import-export.md says. A ChatGPT thread is followed from `current_node` back to the root (the
thread the person saw); user messages become `inbound` records, assistant ones `outbound`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from desk.interchange.foreign import read_json, refuse
from desk.interchange.items import RecordItem, Source

ROLES = {"user": ("inbound", "user"), "human": ("inbound", "user"), "assistant": ("outbound", "assistant")}


def read(path: Path) -> Source:
    if path.is_dir():
        path = path / "conversations.json"
        if not path.is_file():
            raise refuse(str(path), "no conversations.json in this folder",
                         hint="unzip the export and give its folder or its conversations.json")
    rel = path.name
    data = read_json(path, rel)
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list):
        raise refuse(rel, "expected a JSON array of conversations")
    source = Source("chat-export", str(path))
    for i, conv in enumerate(data):
        where = f"{rel}: conversation {i}"
        if not isinstance(conv, dict):
            raise refuse(where, "not an object")
        if isinstance(conv.get("mapping"), dict):
            _chatgpt(conv, where, source)
        elif isinstance(conv.get("chat_messages"), list):
            _claude(conv, where, source)
        else:
            raise refuse(where, "neither a ChatGPT conversation (`mapping`) nor a Claude one (`chat_messages`)")
    return source


def _epoch(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 253402300800:
        raise refuse(where, f"create_time {value!r} is not a time in epoch seconds")
    return dt.datetime.fromtimestamp(value, dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _chatgpt(conv: dict[str, Any], where: str, source: Source) -> None:
    ident = conv.get("id") or conv.get("conversation_id")
    if not isinstance(ident, str) or not ident:
        raise refuse(where, "`id` is missing or not a string")
    mapping: dict[str, Any] = conv["mapping"]
    start = _epoch(conv.get("create_time"), where)
    leaf = conv.get("current_node")
    if isinstance(leaf, str) and leaf in mapping:
        thread, seen = [], set()
        while isinstance(leaf, str) and leaf in mapping and leaf not in seen:
            seen.add(leaf)
            thread.append(mapping[leaf])
            leaf = mapping[leaf].get("parent") if isinstance(mapping[leaf], dict) else None
        thread.reverse()
    else:  # no current node: every message, in time order
        thread = sorted((n for n in mapping.values() if isinstance(n, dict)),
                        key=lambda n: _time_key(n.get("message")))
    for node in thread:
        message = node.get("message") if isinstance(node, dict) else None
        if not isinstance(message, dict):
            continue
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if role not in ROLES:
            continue
        content = message.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        text = "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip()) \
            if isinstance(parts, list) else ""
        if not text:
            continue
        msg_id = message.get("id") or node.get("id")
        at = _epoch(message.get("create_time"), f"{where}, message {msg_id}") or start
        if not isinstance(msg_id, str) or at is None:
            raise refuse(f"{where}, message {msg_id}", "a message needs an `id` and a `create_time`")
        kind, actor = ROLES[role]
        source.records.append(RecordItem(kind, text, f"chatgpt:{ident}:{msg_id}", f"{where}, message {msg_id}",
                                         session=f"chatgpt:{ident}", actor=actor, at=at))


def _time_key(message: Any) -> float:
    value = message.get("create_time") if isinstance(message, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _claude(conv: dict[str, Any], where: str, source: Source) -> None:
    ident = conv.get("uuid")
    if not isinstance(ident, str) or not ident:
        raise refuse(where, "`uuid` is missing or not a string")
    start = conv.get("created_at") if isinstance(conv.get("created_at"), str) else None
    for n, message in enumerate(conv["chat_messages"]):
        if not isinstance(message, dict):
            raise refuse(f"{where}, message {n}", "not an object")
        role = message.get("sender")
        if role not in ROLES:
            continue
        raw = message.get("text")
        text: str = raw if isinstance(raw, str) else ""
        if not text.strip() and isinstance(message.get("content"), list):
            text = "\n\n".join(b["text"] for b in message["content"]
                               if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
        if not text.strip():
            continue
        msg_id = message.get("uuid") if isinstance(message.get("uuid"), str) else str(n)
        at = message.get("created_at") if isinstance(message.get("created_at"), str) else start
        if at is None:
            raise refuse(f"{where}, message {n}", "a message needs a `created_at` time")
        kind, actor = ROLES[role]
        source.records.append(RecordItem(kind, text.strip(), f"claude:{ident}:{msg_id}", f"{where}, message {n}",
                                         session=f"claude:{ident}", actor=actor, at=at))
