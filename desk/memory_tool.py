"""A backend for Anthropic's client-side memory tool (`memory_20250818`) over a desk (docs/agents.md).

`/memories/NAME.md` is the memory file `memory/NAME.md` (or the project's); each write is one
commit by the assistant through the write gate. The desk's top-level files can be viewed, never
written. Paths are confined to `/memories` (no traversal, encoding, control characters or
symlinks); a refusal is an error result for the model, never an exception, and changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desk.api import Desk
from desk.errors import DeskError

ACTOR = "assistant"
READ_ONLY = ("AGENTS.md", "SOUL.md", "USER.md", "NOW.md", "MEMORY.md", "MISTAKES.md")
WHY_READ_ONLY = {
    "SOUL.md": "SOUL.md is the persona the people who own this desk write; the assistant never "
               "changes it. Tell the person what you would change and why",
    "AGENTS.md": "AGENTS.md holds the rules people set for the assistant; tell the person what "
                 "you would change and why",
    "USER.md": "USER.md is the owner's profile, which the owner edits",
    "MEMORY.md": "MEMORY.md is generated from the memory files; create, edit or delete "
                 "/memories/NAME.md instead",
    "NOW.md": "NOW.md is written with `desk now set/append` (or the MCP tools now_set/now_append)",
    "MISTAKES.md": "MISTAKES.md is written with `desk mistake add` (or the MCP tool mistake_add)",
}
SNIPPET_LINES = 4


@dataclass(frozen=True)
class ToolResult:
    """What goes back to the model: the text, and whether it is an error."""

    content: str
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"content": self.content, "is_error": self.is_error}

    def tool_result(self, tool_use_id: str) -> dict[str, Any]:
        """The `tool_result` content block for the next Messages API request."""
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": self.content,
                **({"is_error": True} if self.is_error else {})}


class Refused(Exception):
    """A command the tool will not run; the message is the text the model reads."""


class MemoryTool:
    """Runs memory-tool commands against one desk (`run(input)` for one tool_use input)."""

    def __init__(self, desk: Desk, *, root: str = "/memories", client: str = "memory-tool",
                 project: str | None = None) -> None:
        self.desk = desk.with_trailers({"Desk-Client": client})  # every commit names the harness
        self.root = "/" + root.strip("/")
        self.project = project  # the memory files are that project's (projects/<project>/memory/)
        self.folder = "memory" if project is None else f"projects/{project}/memory"

    def run(self, call: dict[str, Any]) -> ToolResult:
        """One tool_use `input` ({"command": ..., ...}) → its result; never raises for bad input."""
        command = call.get("command")
        handlers: dict[str, Callable[..., str]] = {"view": self.view, "create": self.create, "str_replace": self.str_replace,
                    "insert": self.insert, "delete": self.delete, "rename": self.rename}
        if command not in handlers:
            return ToolResult(f"Error: unknown command {command!r}; use one of {', '.join(handlers)}", True)
        try:
            args = {k: v for k, v in call.items() if k != "command"}
            return ToolResult(handlers[command](**args))
        except TypeError as exc:
            return ToolResult(f"Error: bad arguments for {command}: {exc}", True)
        except Refused as exc:
            return ToolResult(str(exc), True)
        except DeskError as exc:
            text = f"Error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else "")
            return ToolResult(text + "\nNothing was changed.", True)

    # -- paths ---------------------------------------------------------------------------------

    def _resolve(self, path: Any) -> str | None:
        """None for the directory itself, else the file name in it; refuse anything else."""
        if not isinstance(path, str):
            raise Refused(f"Error: path must be a string, not {type(path).__name__}")
        if any(ord(c) < 32 or c in "\\%\x7f" for c in path):
            raise Refused(f"Error: the path {path!r} has a backslash, a percent-encoding or a control "
                          f"character; give a plain path under {self.root}")
        if path.rstrip("/") == self.root:
            return None
        if not path.startswith(self.root + "/"):
            raise Refused(f"Error: the path {path} is outside {self.root}; every path must start with "
                          f"{self.root}/")
        parts = path[len(self.root) + 1:].split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise Refused(f"Error: the path {path} has an empty, `.` or `..` segment; traversal is refused")
        if len(parts) != 1:
            raise Refused(f"Error: {self.root} is flat: there are no subdirectories ({path}); use "
                          f"{self.root}/NAME.md")
        return parts[0]

    def _memory(self, path: Any) -> str:
        """The memory name a writable path names."""
        file = self._resolve(path)
        if file is None:
            raise Refused(f"Error: {self.root} is the directory; give a file, e.g. {self.root}/report-style.md")
        if file in READ_ONLY:
            raise Refused(f"Error: {path} is read-only here: {WHY_READ_ONLY[file]}.")
        if not file.endswith(".md") or len(file) == 3:
            raise Refused(f"Error: memory files are NAME.md (a lowercase slug such as report-style.md), "
                          f"not {file!r}")
        return file[:-3]

    def _real_file(self, relative: str) -> Path:
        """The desk file, refused when a symlink is anywhere on the way."""
        root = Path(os.path.realpath(self.desk.root))
        target = self.desk.root / relative
        if os.path.realpath(target) != str(root / relative) or target.is_symlink():
            raise Refused(f"Error: {relative} is reached through a symlink; desk refuses to follow it")
        return target

    def _read(self, path: str, file: str) -> str:
        relative = file if file in READ_ONLY else f"{self.folder}/{file}"
        target = self._real_file(relative)
        try:
            return target.read_text("utf-8")
        except FileNotFoundError:
            raise Refused(f"The path {path} does not exist. Please provide a valid path.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise Refused(f"Error: cannot read {path}: {exc}") from None

    # -- commands ------------------------------------------------------------------------------

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        """The directory listing (what MEMORY.md lists, with sizes), or a file with line numbers."""
        file = self._resolve(path)
        if file is None:
            return self._listing()
        lines = self._read(path, file).splitlines()
        start, end = 1, len(lines)
        if view_range is not None:
            if (not isinstance(view_range, list) or len(view_range) != 2
                    or not all(isinstance(n, int) for n in view_range)):
                raise Refused("Error: view_range must be [start, end] (1-based; end -1 for the last line)")
            start, end = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
            if not 1 <= start <= max(len(lines), 1) or end < start or end > len(lines):
                raise Refused(f"Error: view_range {view_range} is outside the file's lines [1, {len(lines)}]")
        shown = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines[start - 1:end], start))
        return f"Here's the content of {path} with line numbers:\n{shown}"

    def _listing(self) -> str:
        rows = [(f"{e['name']}.md", self._size(str(e["path"])))
                for e in self.desk.list(project=self.project).to_json()["memories"]]
        rows += [(f"{file} (read-only)", self._size(file)) for file in READ_ONLY if (self.desk.root / file).is_file()]
        total = sum(size for _name, size in rows)
        body = "\n".join(f"{_human(size)}\t{self.root}/{name}" for name, size in rows)
        return (f"Here're the files and directories up to 2 levels deep in {self.root}, excluding "
                f"hidden items and node_modules:\n{_human(total)}\t{self.root}\n{body}").rstrip("\n")

    def _size(self, relative: str) -> int:
        try:
            return (self.desk.root / relative).lstat().st_size
        except OSError:
            return 0

    def create(self, path: str, file_text: str) -> str:
        """Write a whole memory file (frontmatter and body); one commit through the gate."""
        name = self._memory(path)
        self._real_file(f"{self.folder}/{name}.md")
        result = self.desk.remember_file(name, _text_arg(file_text, "file_text"), actor=ACTOR,
                                         project=self.project)
        status = result.to_json()["status"]
        if status == "unchanged":
            return f"{path} already holds exactly this text; nothing changed."
        return _proposed(result.to_json(), path) or (
            f"File {'created' if status == 'created' else 'overwritten'} successfully at: {path}")

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        """Replace the one occurrence of `old_str` in the memory file; one commit through the gate."""
        name = self._memory(path)
        text = self._read(path, f"{name}.md")
        old_str, new_str = _text_arg(old_str, "old_str"), _text_arg(new_str, "new_str")
        count = text.count(old_str) if old_str else 0
        if count == 0:
            raise Refused(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
        if count > 1:
            lines = [str(n) for n, line in enumerate(text.splitlines(), 1) if old_str in line]
            raise Refused(f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in "
                          f"lines: {', '.join(lines) or '?'}. Please ensure it is unique")
        new_text = text.replace(old_str, new_str, 1)
        done = self.desk.remember_file(name, new_text, actor=ACTOR, project=self.project).to_json()
        at = text[:text.index(old_str)].count("\n")
        return _proposed(done, path) or "The memory file has been edited.\n" + _snippet(
            new_text, at, new_str.count("\n") + 1)

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        """Insert `insert_text` after line `insert_line` (0: at the top); one commit through the gate."""
        name = self._memory(path)
        text = self._read(path, f"{name}.md")
        lines = text.splitlines(keepends=True)
        if not isinstance(insert_line, int) or isinstance(insert_line, bool) or not 0 <= insert_line <= len(lines):
            raise Refused(f"Error: Invalid `insert_line` parameter: {insert_line!r}. It should be within "
                          f"the range of lines of the file: [0, {len(lines)}]")
        insert_text = _text_arg(insert_text, "insert_text")
        added = insert_text if insert_text.endswith("\n") else insert_text + "\n"
        if lines and not lines[-1].endswith("\n") and insert_line == len(lines):
            lines[-1] += "\n"
        done = self.desk.remember_file(name, "".join(lines[:insert_line]) + added + "".join(lines[insert_line:]),
                                       actor=ACTOR, project=self.project).to_json()
        return _proposed(done, path) or f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        """Forget the memory (one commit; git history keeps it)."""
        name = self._memory(path)
        if not self._real_file(f"{self.folder}/{name}.md").is_file():
            raise Refused(f"The path {path} does not exist. Please provide a valid path.")
        done = self.desk.forget(name, reason="memory tool: delete", actor=ACTOR, project=self.project).to_json()
        return _proposed(done, path) or f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        """Rename a memory in one commit (file and `name:`); git history follows it."""
        old, new = self._memory(old_path), self._memory(new_path)
        if self.project is not None:  # desk.rename is desk-wide
            raise Refused(f"Error: rename is not available in project {self.project!r}; create "
                          f"{new_path} with the file's text, then delete {old_path}")
        source, target = self._real_file(f"{self.folder}/{old}.md"), self._real_file(f"{self.folder}/{new}.md")
        if not source.is_file():
            raise Refused(f"The path {old_path} does not exist. Please provide a valid path.")
        if target.exists():
            raise Refused(f"Error: The destination {new_path} already exists")
        done = self.desk.rename(old, new, actor=ACTOR).to_json()
        return _proposed(done, old_path) or f"Successfully renamed {old_path} to {new_path}"


def _proposed(result: dict[str, Any], path: str) -> str | None:
    """What the model is told when review mode turned its write into a proposal, else None."""
    if result["status"] != "proposed":
        return None
    return (f"Proposed (review mode): a person reviews this change to {path} before it counts; "
            f"proposal {result['proposal']}. The file is unchanged until it is accepted.")


def _text_arg(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise Refused(f"Error: {field} must be a string, not {type(value).__name__}")
    return value


def _snippet(text: str, first: int, count: int) -> str:
    """The edited lines with a little context, numbered as `view` numbers them."""
    lines = text.splitlines()
    start = max(first - SNIPPET_LINES, 0)
    end = min(first + count + SNIPPET_LINES, len(lines))
    return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines[start:end], start + 1))


def _human(size: int) -> str:
    """A size as `du -h` prints it: 512, 1.5K, 2.0M."""
    if size < 1024:
        return str(size)
    value = size / 1024
    for unit in ("K", "M"):
        if value < 1024:
            return f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}G"
