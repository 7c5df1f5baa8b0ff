"""The write gate of docs/design.md §8.4: what may become a long-term memory (a rejection says why
and changes nothing)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from desk.errors import RejectedError
from desk.layout import RULE_FILES, DeskFolder, project_memory_path
from desk.formats.memory_file import MemoryFile
from desk.formats.memory_index import memory_path
from desk.text.normalize import content_key, normalize

# Shorter bodies match too much by accident ("yes" is in every AGENTS.md).
MIN_RULE_MATCH = 12


class GateRejection(RejectedError):
    """A memory the gate refused; `reason` is a stable code (`session_only`, `already_recorded`)."""

    def __init__(self, reason: str, message: str, hint: str) -> None:
        super().__init__(message, hint)
        self.reason = reason


def rule_texts(desk: DeskFolder) -> dict[str, str]:
    """The text of AGENTS.md and SOUL.md by path (those that exist): what memory must not repeat."""
    texts = {path: desk.read_if_present(path) for path in RULE_FILES}
    return {path: data.decode("utf-8", "replace") for path, data in texts.items() if data is not None}


def check_memory(memory: MemoryFile, scope: str, same_body: Callable[[str, str], list[str]],
                 rule_files: Mapping[str, str]) -> None:
    """Raise GateRejection unless `memory` is durable and not already recorded (`same_body` lists the
    other memories with a body; `rule_files` holds AGENTS.md and SOUL.md)."""
    if scope != "durable":
        raise GateRejection(
            "session_only",
            f"{memory.name}: scope is {scope!r}; only durable facts become memories",
            "keep session-only notes in NOW.md (`desk now append`), or pass --scope durable "
            "if this holds across sessions")
    duplicates = same_body(content_key(memory.body), memory.name)
    if duplicates:
        project = memory.meta.project  # `same_body` looks in the memory's own scope
        where = memory_path(duplicates[0]) if project is None else project_memory_path(project, duplicates[0])
        scoped = "" if project is None else f" --project {project}"
        raise GateRejection(
            "already_recorded",
            f"{memory.name}: the same fact is already recorded in {where}",
            f"update that memory instead (`desk remember {duplicates[0]}{scoped} ...`)")
    text = normalize(memory.body)
    if len(text) >= MIN_RULE_MATCH:
        for path, rules in sorted(rule_files.items()):
            if text in normalize(rules):
                raise GateRejection(
                    "already_recorded",
                    f"{memory.name}: {path} already says this; memory does not mirror the rules",
                    f"leave it in {path}, or reword the memory if it adds something new")
