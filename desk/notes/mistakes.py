"""MISTAKES.md, the error book (docs/design.md §8.2): entries `M-0001`, ... with a UTC date, one
commit each; the same lesson again changes nothing; hand-edited entries are kept."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from desk.errors import UsageError
from desk.layout import MEMORY_DIR, MISTAKES_FILE, DeskFolder
from desk.formats.mistakes import MAX_FIELD, Mistake, parse_mistakes
from desk.notes.files import read_for_change
from desk.text.escape import one_line
from desk.text.times import format_time, utc_now
from desk.transaction import commit_message, transaction


@dataclass
class MistakeResult:
    status: str  # created | unchanged
    mistake: Mistake
    commit: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "path": MISTAKES_FILE, "commit": self.commit,
                **self.mistake.to_json()}


def list_mistakes(desk: DeskFolder) -> list[Mistake]:
    data = desk.read_if_present(MISTAKES_FILE)
    return parse_mistakes(data.decode("utf-8")) if data is not None else []


def _clean(name: str, value: str) -> str:
    text = " ".join(one_line(value).split())  # one line per field keeps the file scannable and parseable
    if not text:
        raise UsageError(f"--{name} is empty; say {_PROMPTS[name]}")
    if len(text) > MAX_FIELD:
        raise UsageError(f"--{name} is {len(text)} characters; the limit is {MAX_FIELD}: "
                         "keep the lesson short and reusable")
    return text


_PROMPTS = {"what": "what went wrong", "context": "in what situation", "cause": "why it happened",
            "avoid": "how to avoid it next time"}


def add_mistake(desk: DeskFolder, *, what: str, context: str, cause: str, avoid: str,
                memory: str | None = None, actor: str = "assistant",
                now: dt.datetime | None = None) -> MistakeResult:
    """Add one entry to MISTAKES.md (one commit); the same lesson again is `unchanged`."""
    values = {k: _clean(k, v) for k, v in {"what": what, "context": context, "cause": cause, "avoid": avoid}.items()}
    if memory is not None:
        # Imported here: desk.formats.memory_file loads PyYAML, which a mistake without a
        # memory link never needs.
        from desk.formats.memory_file import name_problem

        problem = name_problem(memory)
        if problem:
            raise UsageError(f"--memory {memory!r}: {problem}")
        if not desk.path(f"{MEMORY_DIR}/{memory}.md").is_file():
            raise UsageError(f"--memory {memory!r}: there is no {MEMORY_DIR}/{memory}.md",
                             hint="create it first with `desk remember`, or leave --memory out")
    day = format_time(now or utc_now(), "day")
    with transaction(desk) as tx:
        present = read_for_change(desk, MISTAKES_FILE)  # a link refused before it reads as an edit
        tx.require_clean([MISTAKES_FILE])
        old = present.decode("utf-8") if present is not None else f"# {MISTAKES_FILE} — the error book\n"
        entries = parse_mistakes(old)
        key = Mistake("", day, memory=memory, line=0, **values).key()
        same = next((entry for entry in entries if entry.key() == key), None)
        if same is not None:
            return MistakeResult("unchanged", same)
        number = max((int(e.id[2:]) for e in entries), default=0) + 1
        entry = Mistake(f"M-{number:04d}", day, memory=memory, line=0, **values)
        text = old.rstrip("\n") + "\n\n" + entry.render()
        entry = Mistake(**{**entry.__dict__, "line": text.count("\n", 0, text.index(f"## {entry.id}")) + 1})
        sha = tx.commit({MISTAKES_FILE: text.encode()}, commit_message(
            f"mistake: {entry.id} {values['what'][:60]}",
            {"Desk-Op": "mistake", "Desk-Actor": actor, "Desk-Mistake": entry.id, "Desk-Memory": memory}))
    return MistakeResult("created", entry, sha)
