"""`desk validate`: the one gate every write path passes (DESIGN.md §1, principle 3).

The same rules run in three places: in process before each of desk's own commits
(`validate_writes`, called by `Transaction.commit`), in the git hooks and `desk validate --staged`
(`validate_staged`: the staged blobs, never the work tree), and over the whole desk
(`validate_all`: `desk validate --all`, `desk doctor`). Each rule has an id (docs/guard.md):

  memory files      frontmatter/name rules of desk.memory.file, `memory-path`, `memory-name-case`,
                    warnings `memory-expired`, `memory-no-triggers`
  MEMORY.md         `index-stale`: it must equal the index regenerated from the same memory files
  archive           `archive-append-only`, `archive-record`, `archive-chain` (desk.archive.store)
  commit message    `soul-unauthorized`, `digest-now` (need the message: commit-msg hook, in process)
  secrets           `secret` (desk.text.secrets; allowed only by fingerprint in .system/desk.json)
  any desk file     `symlink`, `binary`, `encoding`, `file-size`, `config`

`--staged` costs in proportion to the change: one `git diff --cached --raw` names the changed blobs,
only those are read and parsed, and the MEMORY.md rule gets the other memories' index entries from
the blob-keyed cache over `git ls-files -s memory/`. Heavy modules (pydantic, YAML) are imported
only when a memory or config file is actually checked, so the commit-msg hook stays cheap.
"""

from __future__ import annotations

import bisect
import datetime as dt
import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from desk.layout import ARCHIVE_PREFIX, CONFIG_PATH, INDEX_FILE, MEMORY_DIR
from desk.errors import Finding
from desk.storage.git import Git, blob_sha, staged_git

if TYPE_CHECKING:
    from desk.layout import DeskFolder

MEMORY_PREFIX = MEMORY_DIR + "/"
CONFIG_FILE = CONFIG_PATH
ROOT_FILES = frozenset({"AGENTS.md", "SOUL.md", "USER.md", "NOW.md", INDEX_FILE, "MISTAKES.md",
                        ".gitattributes", ".gitignore"})
MANAGED_DIRS = (MEMORY_PREFIX, "journal/", "conversations/", ".system/", "users/", "projects/")
UNMANAGED_DIRS = (".system/cache/",)  # derived, git-ignored
SECRET_FILES = frozenset({"NOW.md", "MISTAKES.md", "USER.md"})
SECRET_DIRS = (MEMORY_PREFIX, "journal/")
TEXT_LIMIT = 1 << 20  # 1 MiB for a hand-written text file
LARGE_LIMIT = 64 << 20  # archive files and the generated index grow with the desk
SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"
VALIDATED_ENV = "DESK_VALIDATED"  # set on desk's own commits; the shell hooks skip Python for them

Read = Callable[[list[str]], Mapping[str, bytes]]


@dataclass(frozen=True)
class Change:
    """One path as the commit (or the check) will have it."""

    path: str
    new: bytes | None  # None: deleted
    mode: str = "100644"
    old_blob: str | None = None  # the blob at HEAD, when there was one


@dataclass
class Report:
    """The findings of one validation run, errors and warnings."""

    findings: list[Finding] = field(default_factory=list)
    checked: int = 0
    fixed: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, object]:
        return {"status": "ok" if self.ok else "rejected", "checked": self.checked,
                "errors": len(self.errors), "warnings": len(self.findings) - len(self.errors),
                "findings": [f.to_json() for f in self.findings], "fixed": self.fixed}


def is_managed(path: str) -> bool:
    """Whether desk's rules apply to `path` (the desk's own files, not a person's extras)."""
    if path.startswith(UNMANAGED_DIRS):
        return False
    return path in ROOT_FILES or path.startswith(MANAGED_DIRS)


def memory_name(path: str) -> str | None:
    """The stem of `memory/<stem>.md`, else None."""
    if path.startswith(MEMORY_PREFIX) and path.endswith(".md") and "/" not in path[len(MEMORY_PREFIX):]:
        return path[len(MEMORY_PREFIX):-3]
    return None


# -- the commit message rules -----------------------------------------------------------------


def parse_trailers(message: str) -> dict[str, list[str]]:
    """`Key: value` lines of the message's last paragraph, keys lower-cased (comments dropped)."""
    lines = [line for line in message.splitlines() if not line.startswith("#")]
    paragraphs = "\n".join(lines).strip().split("\n\n")
    if len(paragraphs) < 2:
        return {}
    trailers: dict[str, list[str]] = {}
    for line in paragraphs[-1].splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9-]*):\s*(.*?)\s*$", line)
        if match:
            trailers.setdefault(match.group(1).lower(), []).append(match.group(2))
    return trailers


def check_message(message: str, changed: Collection[str]) -> list[Finding]:
    """Rules that need the commit message: who may change SOUL.md, what a digest may touch."""
    trailers = parse_trailers(message)
    findings = []
    actors = {value.lower() for value in trailers.get("desk-actor", [])}
    authorized = [value for value in trailers.get("desk-authorized-by", []) if value]
    if "SOUL.md" in changed and "assistant" in actors and not authorized:
        findings.append(Finding(
            "SOUL.md", 1, "soul-unauthorized",
            "the assistant may not change SOUL.md silently; add a `Desk-Authorized-By: <person>` "
            "trailer naming who allowed it, or leave SOUL.md out of this commit"))
    ops = {value.lower() for value in trailers.get("desk-op", [])}
    if "digest" in ops and "NOW.md" in changed:
        findings.append(Finding(
            "NOW.md", 1, "digest-now",
            "a digest commit (Desk-Op: digest) never changes NOW.md, which belongs to the "
            "assistant's work; leave NOW.md out of the digest commit"))
    return findings


# -- per-file rules ---------------------------------------------------------------------------


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def check_file(change: Change, *, desk_id: str, allow: Collection[str], now: dt.datetime,
               old: bytes | None = None) -> list[Finding]:
    """The rules for one changed path (its content as it will be committed)."""
    path, data = change.path, change.new
    if data is not None and change.mode == SYMLINK_MODE:
        return [Finding(path, 1, "symlink", "desk files must be regular files, not symlinks; "
                        "replace the link with the file itself")]
    if data is not None and change.mode == GITLINK_MODE:
        return [Finding(path, 1, "binary", "a submodule cannot live inside a desk folder; remove it")]
    if path.startswith(ARCHIVE_PREFIX) and path.endswith(".jsonl"):
        return _check_archive(path, old, data, desk_id)
    if data is None:
        return []
    limit = LARGE_LIMIT if path in (INDEX_FILE,) or path.startswith(".system/") else TEXT_LIMIT
    if len(data) > limit:
        return [Finding(path, 1, "file-size", f"file is {len(data)} bytes; the limit is {limit}: "
                        "split it or move the bulk out of the desk")]
    if memory_name(path) is not None:
        return _check_memory(path, data, allow, now)
    if path.startswith(MEMORY_PREFIX) and not path.endswith("/.gitkeep"):
        return [Finding(path, 1, "memory-path", "memory/ holds only <name>.md files; move this "
                        "file out of memory/")]
    nul = data.find(b"\0")
    if nul >= 0:
        return [Finding(path, _line_at(data, nul), "binary",
                        "file holds NUL bytes; desk stores text only: move binary files out of the desk")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [Finding(path, _line_at(data, exc.start), "encoding",
                        f"invalid UTF-8 at byte {exc.start}; save the file as UTF-8")]
    findings = []
    if path == CONFIG_FILE:
        findings += _check_config(data, old)
    if path in SECRET_FILES or path.startswith(SECRET_DIRS):
        findings += secret_findings(path, text, allow)
    return findings


def secret_findings(path: str, text: str, allow: Collection[str]) -> list[Finding]:
    from desk.text.secrets import scan

    return [Finding(path, s.line, "secret",
                    f"{s.kind} ({s.preview}); remove it from the file, or if it is not a secret "
                    f"allow exactly this finding: add \"{s.fingerprint}\" to secrets.allow in "
                    f"{CONFIG_FILE}") for s in scan(text, allow=allow)]


def _check_memory(path: str, data: bytes, allow: Collection[str], now: dt.datetime) -> list[Finding]:
    from desk.errors import InvalidFileError
    from desk.memory.file import name_problem, parse_memory

    stem = memory_name(path) or ""
    problem = name_problem(stem)
    if problem:
        return [Finding(path, 1, "memory-name", f"file name {stem!r}: {problem}; rename the file")]
    findings: list[Finding] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = ""  # parse_memory reports the encoding
    try:
        memory = parse_memory(data, path, stem)
    except InvalidFileError as exc:
        return list(exc.findings) + secret_findings(path, text, allow)
    if memory.is_expired(now):
        findings.append(Finding(path, 1, "memory-expired",
                                "memory has expired and is no longer injected; `desk forget "
                                f"{stem}` or move `expires` later", "warning"))
    if not memory.meta.triggers:
        findings.append(Finding(path, 1, "memory-no-triggers",
                                "memory has no triggers, so recall never injects its body; add "
                                "`triggers: [word, ...]`", "warning"))
    findings += secret_findings(path, text, allow)
    return findings


def _check_archive(path: str, old: bytes | None, new: bytes | None, desk_id: str) -> list[Finding]:
    if new is None:
        return [Finding(path, 1, "archive-append-only",
                        "archive files are never deleted; restore it (`git restore --staged "
                        f"--worktree -- {path}`)")]
    from desk.archive.store import check_archive_change

    return check_archive_change(path, old, new, desk_id)


def _check_config(data: bytes, old: bytes | None) -> list[Finding]:
    """desk.json parses and validates, and keeps the desk_id it had."""
    import json

    from pydantic import ValidationError

    from desk.config import DeskConfig

    try:
        config = DeskConfig.model_validate(json.loads(data))
    except json.JSONDecodeError as exc:
        return [Finding(CONFIG_FILE, exc.lineno, "config", f"invalid JSON: {exc.msg}")]
    except ValidationError as exc:
        return [Finding(CONFIG_FILE, 1, "config", f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}")
                for e in exc.errors()]
    try:
        before = json.loads(old).get("desk_id") if old else None
    except (ValueError, AttributeError):
        before = None  # the committed file was broken: nothing to compare against
    if before and config.desk_id != before:
        return [Finding(CONFIG_FILE, 1, "config", f"desk_id changed from {before!r}; a desk keeps "
                        "its id for life (archive records carry it)")]
    return []


# -- the rules over the memory set ----------------------------------------------------------


@dataclass
class MemorySet:
    """What the memory-set rules need about the commit; the costly parts are fetched on demand."""

    index: bytes | None  # the MEMORY.md being committed
    base_index: bytes | None  # MEMORY.md at HEAD, patched by the fast path (None: no fast path)
    all_files: Callable[[], dict[str, str]]  # every memory `{path: blob}` of the commit
    read: Read
    like: Callable[[list[str]], list[str]]  # the commit's memory paths equal to these ignoring case


def check_memory_set(desk: DeskFolder, changed: Mapping[str, bytes | None], memory: MemorySet,
                     added: Collection[str] = ()) -> tuple[list[Finding], bytes | None]:
    """`memory-name-case` for the changed memory files and `index-stale` for the commit's MEMORY.md.

    Returns the findings and the correct MEMORY.md. Fast path, in proportion to the change: the
    committed MEMORY.md with the changed memories' lines replaced. Only when that does not match
    (HEAD's index was itself stale, or the person's index differs) is the index regenerated from
    every memory file, through the blob-keyed cache so only unseen blobs are parsed.
    """
    findings = []
    # Only a new path can clash: a changed one clashed already when it was added.
    present = [p for p, data in changed.items() if data is not None and p in added]
    if present:
        by_lower: dict[str, list[str]] = {}
        for path in memory.like(present):
            by_lower.setdefault(path.lower(), []).append(path)
        for path in sorted(present):
            others = [p for p in by_lower.get(path.lower(), []) if p != path]
            if others:
                findings.append(Finding(path, 1, "memory-name-case",
                                        f"name differs from {others[0]} only in case; names must be "
                                        "unique ignoring case: rename one of them"))
    if memory.base_index is not None:
        patched = _patched_index(desk, memory.base_index, changed)
        if patched is not None and patched == memory.index:
            return findings, patched
        expected = _head_index_with(desk, changed)
    else:
        expected = _full_index(desk, memory.all_files(), memory.read)
    if memory.index != expected:
        line = _first_difference(memory.index or b"", expected)
        findings.append(Finding(INDEX_FILE, line, "index-stale",
                                "MEMORY.md does not match memory/; it is generated: run `desk "
                                "reindex` (the pre-commit hook regenerates it in the work tree)"))
    return findings, expected


def _entry(desk: DeskFolder, path: str, data: bytes) -> object | None:
    """The index entry of one memory file (cached by blob), or None when it is invalid."""
    from desk.errors import InvalidFileError
    from desk.memory.index import load_entries

    sha = blob_sha(data)
    try:
        entries = load_entries(desk, {path: sha}, lambda shas: {sha: data})
    except InvalidFileError:
        return None
    return next(iter(entries.values()), None)


def _patched_index(desk: DeskFolder, base: bytes, changed: Mapping[str, bytes | None]) -> bytes | None:
    """HEAD's MEMORY.md with the changed memories' lines replaced; None if it cannot be read.

    The committed index is sorted by name, so each changed line is found and placed by bisection:
    the cost grows with the change, not with the desk.
    """
    from desk.memory.index import EMPTY, HEADER

    head = (HEADER + "\n").encode()
    if not base.startswith(head):
        return None
    body = base[len(head):]
    lines = [] if body == EMPTY.encode() else body.split(b"\n")[:-1]

    def key(line: bytes) -> bytes:
        return line[3:line.index(b"](")]

    try:
        for path, data in sorted(changed.items()):
            name = memory_name(path)
            if name is None:
                continue
            entry = _entry(desk, path, data) if data is not None else None
            at = bisect.bisect_left(lines, name.encode(), key=key)
            if at < len(lines) and key(lines[at]) == name.encode():
                del lines[at]
            if entry is not None:
                new = entry.line().encode()  # type: ignore[attr-defined]
                lines.insert(bisect.bisect_left(lines, key(new), key=key), new)
    except ValueError:
        return None  # not an index line: let the full regeneration decide
    return head + (b"\n".join(lines) + b"\n" if lines else EMPTY.encode())


def _head_index_with(desk: DeskFolder, changed: Mapping[str, bytes | None]) -> bytes:
    """MEMORY.md for HEAD's memories plus `changed`, from desk.memory.mirror's mirror of HEAD.

    Used when HEAD's own MEMORY.md was stale or the commit's index differs: the mirror is kept in
    step with one `git diff-tree`, so this too costs in proportion to the change.
    """
    from desk.memory.mirror import head_mirror

    changes = {}
    for path, data in changed.items():
        name = memory_name(path)
        if name is not None:
            changes[name] = _entry(desk, path, data) if data is not None else None
    with head_mirror(desk) as state:
        return state.render_index(changes, strict=False)  # type: ignore[arg-type]


def _full_index(desk: DeskFolder, files: Mapping[str, str], read: Read) -> bytes:
    """MEMORY.md regenerated from every valid memory file (invalid ones have their own findings)."""
    from desk.errors import InvalidFileError
    from desk.memory.index import load_entries, render_index

    valid = {p: b for p, b in files.items() if memory_name(p) is not None}
    for _ in range(len(valid) + 1):
        try:
            return render_index(load_entries(desk, valid, read).values())
        except InvalidFileError as exc:
            bad = {f.path for f in exc.findings} & set(valid)
            if not bad:
                raise
            valid = {p: b for p, b in valid.items() if p not in bad}
    return render_index([])


def _first_difference(a: bytes, b: bytes) -> int:
    for number, (x, y) in enumerate(zip(a.split(b"\n"), b.split(b"\n")), start=1):
        if x != y:
            return number
    return min(a.count(b"\n"), b.count(b"\n")) + 1


# -- the three entry points ---------------------------------------------------------------


def _run(desk: DeskFolder, changes: list[Change], memory: MemorySet | None, read: Read,
         message: str | None, now: dt.datetime | None) -> tuple[Report, bytes | None]:
    """The rules over `changes`; the memory-set rules when memory/ or MEMORY.md changed."""
    now = now or dt.datetime.now(dt.timezone.utc)
    managed = [c for c in changes if is_managed(c.path)]
    report = Report(checked=len(managed))
    if not managed and message is None and memory is None:
        return report, None
    desk_id, allow = _config(desk, changes)
    olds = read([c.old_blob for c in managed
                 if c.old_blob and (c.path.startswith(ARCHIVE_PREFIX) or c.path == CONFIG_FILE)])
    for change in managed:
        old = olds.get(change.old_blob) if change.old_blob else None
        report.findings += check_file(change, desk_id=desk_id, allow=allow, now=now, old=old)
    changed = {c.path for c in changes}
    regenerated = None
    if memory is not None and (INDEX_FILE in changed or any(p.startswith(MEMORY_PREFIX) for p in changed)):
        memory_changes = {c.path: c.new for c in changes
                          if memory_name(c.path) is not None and c.mode != SYMLINK_MODE}
        added = {c.path for c in changes if c.old_blob is None}
        found, regenerated = check_memory_set(desk, memory_changes, memory, added)
        report.findings += found
    if message is not None:
        report.findings += check_message(message, changed)
    return report, regenerated


def _config(desk: DeskFolder, changes: list[Change]) -> tuple[str, frozenset[str]]:
    """desk_id and the allowed secret fingerprints of the content under check, without pydantic.

    The desk.json being committed when the change has one, else HEAD's: never an unstaged edit
    in the work tree, which would let a secret through a commit that does not allow it.
    (`validate --all` checks the work tree, so its changes carry the work-tree desk.json.)
    A broken desk.json is reported by the `config` rule.
    """
    import json

    def load(data: bytes | None) -> tuple[str, frozenset[str]] | None:
        try:
            config = json.loads(data or b"")
            allow = config.get("secrets", {}).get("allow", [])
            return str(config["desk_id"]), frozenset(a for a in allow if isinstance(a, str))
        except (ValueError, KeyError, AttributeError, TypeError):
            return None

    found = next((load(c.new) for c in changes if c.path == CONFIG_FILE and c.new is not None), None)
    # A broken desk.json under check (its own finding) falls back to HEAD's.
    return found or load(desk.git.blob_at("HEAD", CONFIG_FILE)) or ("", frozenset())


def _like(git: Git, extra: Collection[str] = (), gone: Collection[str] = ()) -> Callable[[list[str]], list[str]]:
    """Paths in git's index equal to the given ones ignoring case (one `git ls-files`)."""
    def like(paths: list[str]) -> list[str]:
        specs = [f":(icase,literal){p}" for p in paths]
        out = git.run("ls-files", "-z", "--", *specs, read_only=True)
        found = {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}
        lowered = {p.lower() for p in paths}
        found |= {p for p in extra if p.lower() in lowered}
        return sorted(found - set(gone))
    return like


def staged_changes(git: Git) -> tuple[list[Change], dict[str, bytes]]:
    """What the commit being made changes, and the blobs read for it in one batch.

    The batch holds each changed desk blob (by sha), the old blobs of archive files and
    desk.json, and `HEAD:MEMORY.md` and `:MEMORY.md` (the committed and the staged index).
    """
    out = git.run("diff", "--cached", "--raw", "-z", "--no-renames", "--no-abbrev", read_only=True)
    records = out.split(b"\0")
    raw = []
    for meta, path in zip(records[0::2], records[1::2]):
        if not meta:
            break
        old_mode, new_mode, old_sha, new_sha, status = meta.decode().lstrip(":").split()
        raw.append((path.decode("utf-8", "surrogateescape"), new_mode, old_sha, new_sha, status))
    null = "0" * 40
    wanted = [sha for path, mode, _, sha, status in raw
              if status != "D" and is_managed(path) and mode not in (SYMLINK_MODE, GITLINK_MODE)]
    wanted += [old for path, _, old, _, _ in raw
               if old != null and (path.startswith(ARCHIVE_PREFIX) or path == CONFIG_FILE)]
    if any(path == INDEX_FILE or path.startswith(MEMORY_PREFIX) for path, *_ in raw):
        wanted += [f"HEAD:{INDEX_FILE}", f":{INDEX_FILE}"]
    blobs = git.read_blobs(wanted)
    changes = [Change(path, None if status == "D" else blobs.get(sha, b""), mode,
                      None if old_sha == null else old_sha)
               for path, mode, old_sha, sha, status in raw]
    return changes, blobs


def validate_staged(desk: DeskFolder, git: Git | None = None, *, message: str | None = None,
                    now: dt.datetime | None = None) -> tuple[Report, bytes | None]:
    """Validate what is staged for commit (the hooks, `desk validate --staged`).

    `git` should keep the hook's GIT_INDEX_FILE (a `git commit -- paths` stages into a temporary
    index). Returns the report and, when the MEMORY.md rule ran, the correct MEMORY.md.
    """
    git = git or staged_git(desk.root)
    changes, blobs = staged_changes(git)

    def read(shas: list[str]) -> Mapping[str, bytes]:
        found = {s: blobs[s] for s in shas if s in blobs}
        missing = [s for s in shas if s not in blobs]
        return {**found, **(git.read_blobs(missing) if missing else {})}

    memory = MemorySet(blobs.get(f":{INDEX_FILE}"), blobs.get(f"HEAD:{INDEX_FILE}"),
                       lambda: git.ls_staged(MEMORY_PREFIX), read, _like(git))
    return _run(desk, changes, memory, read, message, now)


def validate_writes(desk: DeskFolder, writes: Mapping[str, bytes | None], message: str,
                    now: dt.datetime | None = None) -> Report:
    """Validate one of desk's own commits in process: exactly `writes` on top of HEAD."""
    git = desk.git
    # One ls-tree names the committed blobs (none before the first commit: git fails, output empty).
    old = git.run("ls-tree", "-z", "--full-tree", "HEAD", "--", *writes, check=False, read_only=True)
    old_blobs = {}
    for record in old.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            old_blobs[path.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
    changes = [Change(p, data, "100644", old_blobs.get(p)) for p, data in sorted(writes.items())]
    new_blobs = {blob_sha(data): data for data in writes.values() if data is not None}

    def read(shas: list[str]) -> Mapping[str, bytes]:
        found = {s: new_blobs[s] for s in shas if s in new_blobs}
        missing = [s for s in shas if s not in new_blobs]
        return {**found, **(git.read_blobs(missing) if missing else {})}

    def all_files() -> dict[str, str]:
        head = git.head()
        files = git.ls_tree(head, MEMORY_PREFIX) if head else {}
        for path, data in writes.items():
            if path.startswith(MEMORY_PREFIX):
                if data is None:
                    files.pop(path, None)
                else:
                    files[path] = blob_sha(data)
        return files

    memory = None
    if INDEX_FILE in writes or any(p.startswith(MEMORY_PREFIX) for p in writes):
        base = git.read_blobs([f"HEAD:{INDEX_FILE}"]).get(f"HEAD:{INDEX_FILE}")
        index = writes[INDEX_FILE] if INDEX_FILE in writes else base
        gone = [p for p, data in writes.items() if data is None]
        added = [p for p, data in writes.items() if data is not None]
        memory = MemorySet(index, base, all_files, read, _like(git, added, gone))
    report, _ = _run(desk, changes, memory, read, message, now)
    return report


def validate_all(desk: DeskFolder, now: dt.datetime | None = None) -> Report:
    """Every desk file in the work tree (tracked or not ignored): `desk validate --all`."""
    git = desk.git
    out = git.run("ls-files", "-z", "--cached", "--others", "--exclude-standard", read_only=True)
    paths = sorted({p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p})
    head = git.head()
    archive_head = git.ls_tree(head, ARCHIVE_PREFIX) if head else {}
    config_head = git.ls_tree(head, ".system") if head else {}
    changes = []
    contents: dict[str, bytes] = {}
    for path in paths:
        if not is_managed(path):
            continue
        full = desk.path(path)
        if full.is_symlink():
            changes.append(Change(path, b"", SYMLINK_MODE))
            continue
        try:
            data = full.read_bytes()
        except FileNotFoundError:
            continue  # deleted in the work tree, not yet committed
        contents[blob_sha(data)] = data
        changes.append(Change(path, data, "100644",
                              archive_head.get(path) or config_head.get(path)))

    def read(shas: list[str]) -> Mapping[str, bytes]:
        found = {s: contents[s] for s in shas if s in contents}
        missing = [s for s in shas if s not in contents]
        return {**found, **(git.read_blobs(missing) if missing else {})}

    files = {c.path: blob_sha(c.new) for c in changes
             if memory_name(c.path) is not None and c.new is not None and c.mode != SYMLINK_MODE}
    index_path = desk.path(INDEX_FILE)
    index = index_path.read_bytes() if index_path.is_file() else None

    def like(wanted: list[str]) -> list[str]:
        lowered = {p.lower() for p in wanted}
        return [p for p in files if p.lower() in lowered]

    memory = MemorySet(index, None, lambda: files, read, like)
    if INDEX_FILE not in {c.path for c in changes}:
        changes.append(Change(INDEX_FILE, None))  # a missing MEMORY.md is reported, not skipped
    report, _ = _run(desk, changes, memory, read, None, now)
    return report


def fix_index(desk: DeskFolder, regenerated: bytes) -> bool:
    """Write the regenerated MEMORY.md into the work tree (the pre-commit fixer); True if changed."""
    from desk.storage.atomic import atomic_write

    path = desk.path(INDEX_FILE)
    if path.is_file() and path.read_bytes() == regenerated:
        return False
    atomic_write(path, regenerated)
    return True


def require_valid(desk: DeskFolder, writes: Mapping[str, bytes | None], message: str,
                  now: dt.datetime | None = None) -> Report:
    """`validate_writes`, raising InvalidFileError (exit 3) when any rule fails."""
    from desk.errors import InvalidFileError

    report = validate_writes(desk, writes, message, now)
    if not report.ok:
        raise InvalidFileError(report.errors, hint="nothing was committed; fix the findings above")
    return report
