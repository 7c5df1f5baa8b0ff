"""`desk validate`: the one gate every write path passes (docs/design.md §1.3).

The same rules run in three places: in process before each of desk's own commits
(`validate_writes`, called by `Transaction.commit`), in the git hooks and `desk validate --staged`
(`validate_staged`: the staged blobs, never the work tree), and over the whole desk
(`validate_all`: `desk validate --all`, `desk doctor`). This module gathers what each place
changes and runs the rules on it: the per-file and commit-message rules of desk.gate.rules, and
the memory-set rules (MEMORY.md regenerated, names unique ignoring case) of desk.gate.index_rule,
and the scopes' generated files (a project's MEMORY.md, a user scope's PREFERENCES.md) of
desk.gate.scope_index. The rule ids are listed in docs/guard.md.

Verdicts are cached by blob id (desk.gate.verdicts), so no run checks the same bytes twice:
`--staged` costs in proportion to the change (one `git diff --cached --raw` names the changed
blobs, only those are read, and only those the cache lacks are checked), and `--all` on an
unchanged desk costs one `git ls-files` (git's stat cache says which files changed) and one pass
over the cache. The rules over the memory set are computed from the verdicts' index lines, never
by parsing again. Heavy modules (pydantic, YAML) are imported only when a memory or config file is
actually checked, so the commit-msg hook stays cheap.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, NamedTuple

from desk.errors import DeskError, Finding, InvalidFileError
from desk.gate.index_rule import MemorySet, Read, check_memory_set, stale_index
from desk.gate.scope_index import FilesUnder, check_scope_indexes, touched_scopes
from desk.gate.rules import (FILE_MODE, GITLINK_MODE, SYMLINK_MODE, FileVerdict, check_message,
                              file_verdict, is_checked, is_managed, message_secret_verdict, needs_old)
from desk.layout import (ARCHIVE_DIR, CONFIG_PATH, CONFLICTS_FILE, INDEX_FILE, MEMORY_PREFIX, DeskFolder,
                         is_attributes_file, memory_name)
from desk.storage.atomic import atomic_write
from desk.gate.whole import LISTED_FOLDER
from desk.gate.whole import validate_all as validate_all  # re-exported: the entry that starts git first
from desk.storage.git import Git, RawChange, StartedListing, WorkTreeListing, blob_sha, sha1_hex, staged_git
from desk.storage.reading import SymlinkError

if TYPE_CHECKING:
    from desk.gate.verdicts import FileKey, VerdictCache
    from desk.formats.memory_file import MemoryFile

VALIDATED_ENV = "DESK_VALIDATED"  # set on desk's own commits; the shell hooks skip Python for them


class Change(NamedTuple):
    """One path as the commit (or the check) will have it.

    This module's records are NamedTuples and a plain class, not dataclasses: each dataclass costs
    ~0.3 ms to create at import, on every hooked commit."""

    path: str
    new: bytes | None  # None: deleted
    mode: str = FILE_MODE
    old_blob: str | None = None  # the blob at HEAD, when there was one
    blob: str | None = None  # the blob id of `new`, when git already named it

    def key(self) -> FileKey:
        """What its verdict is cached under (desk.gate.verdicts): the blob it replaces only where
        the rules read it (`needs_old`), so a memory the hook checked as a change is found by
        `validate --all`, which has no old blob for it."""
        old = self.old_blob or "" if needs_old(self.path) else ""
        return (self.path, self.mode, self.blob or blob_sha(self.new or b""), old)


class Report:
    """The findings of one validation run, errors and warnings."""

    def __init__(self, findings: list[Finding] | None = None, checked: int = 0,
                 fixed: list[str] | None = None, computed: int = 0, reused: int = 0) -> None:
        self.findings: list[Finding] = findings if findings is not None else []
        self.checked = checked
        self.fixed: list[str] = fixed if fixed is not None else []
        self.computed = computed  # files the rules ran on
        self.reused = reused  # files whose verdict came from the cache (desk.gate.verdicts)
        self.continued = False  # `validate --all` redid only what changed since the last run (desk.gate.delta)
        # `{path: correct bytes}` of each stale generated scope file (desk.gate.scope_index): what
        # the pre-commit fixer writes. Not part of the JSON output.
        self.regenerated: dict[str, bytes] = {}

    def __repr__(self) -> str:
        return (f"Report(findings={self.findings!r}, checked={self.checked}, fixed={self.fixed!r}, "
                f"computed={self.computed}, reused={self.reused})")

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


def _run(desk: DeskFolder, changes: list[Change], memory: MemorySet | None, read: Read,
         message: str | None, now: dt.datetime | None, *, cached: bool = False,
         head_config: Callable[[], bytes | None] | None = None,
         files_under: FilesUnder | None = None) -> tuple[Report, bytes | None]:
    """The rules over `changes`; the memory-set rules when memory/ or MEMORY.md changed; the
    scopes' generated files when a scope's files changed (`files_under` lists the commit's files).

    With `cached`, verdicts come from (and go to) the blob-keyed cache. `head_config()` gives
    HEAD's desk.json when the caller has read it already.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    managed = [c for c in changes if is_checked(c.path, c.mode)]
    report = Report(checked=len(managed))
    if not managed and message is None and memory is None:
        return report, None
    desk_id, allow = _config(desk, changes, head_config)
    # MEMORY.md made from a clean HEAD index waits for the memory-set rule: when that finds it is
    # HEAD's index with the changed lines spliced in, only those lines are scanned (docs/guard.md).
    index = next((c for c in managed if c.path == INDEX_FILE and c.new is not None and c.mode == FILE_MODE
                  and memory is not None and memory.base_clean and not cached), None)
    cache = _open_cache(desk, desk_id) if cached else None
    try:
        known = cache.files(c.key() for c in managed if c.new is not None) if cache else {}
        verdicts, fresh = _verdicts([c for c in managed if c is not index], desk_id, read, known, report,
                                    keyed=cache is not None)
        if cache is not None:
            cache.put_files(fresh)
    finally:
        if cache is not None:
            cache.close()
    changed = {c.path for c in changes}
    regenerated = None
    memory_findings: list[Finding] = []
    if memory is not None and (INDEX_FILE in changed or any(p.startswith(MEMORY_PREFIX) for p in changed)):
        contents = {c.path: c.new for c in changes
                    if memory_name(c.path) is not None and c.mode != SYMLINK_MODE}
        lines = {path: _line(verdicts.get(path)) for path in contents}
        added = {c.path for c in changes if c.old_blob is None}
        memory_findings, regenerated = check_memory_set(desk, lines, memory, added, contents)
        memory_findings += _staged_duplicate_keys(contents, memory)
        if index is not None:
            spliced = [line for line in lines.values() if line is not None] if memory.spliced else None
            verdicts[INDEX_FILE] = file_verdict(INDEX_FILE, index.new, desk_id=desk_id, unscanned=spliced)
            report.computed += 1
    if index is not None and INDEX_FILE not in verdicts:  # no memory-set rule ran: the whole file
        verdicts[INDEX_FILE] = file_verdict(INDEX_FILE, index.new, desk_id=desk_id)
        report.computed += 1
    for change in managed:
        report.findings += verdicts[change.path].findings_at(allow, now)
    report.findings += memory_findings
    if files_under is not None and any(touched_scopes(changed)):
        found_scoped, report.regenerated = check_scope_indexes(changed, files_under, read, desk_id, now)
        report.findings += found_scoped
    if message is not None:
        report.findings += check_message(message, changed)
        report.findings += message_secret_verdict(message).findings_at(allow, now)
    return report, regenerated


def _staged_duplicate_keys(contents: Mapping[str, bytes | None], memory: MemorySet) -> list[Finding]:
    """`keyed-duplicate` for the digest memories this commit writes: another memory of the commit
    that holds the same key (looked for among the names the digest gives a key: it, or `k-` it,
    with a hash suffix). Nothing is read unless a changed memory carries a key."""
    keyed = {p: d for p, d in contents.items() if d is not None and b"\nkey:" in d}
    if not keyed:
        return []
    from desk.formats.memory_file import parse_memory
    from desk.gate.keyed import duplicate_keys, key_of

    def parsed(path: str, data: bytes) -> MemoryFile | None:
        try:
            return parse_memory(data, path, memory_name(path))
        except InvalidFileError:
            return None

    mine = {p: m for p, d in keyed.items() if (m := parsed(p, d)) is not None and key_of(m)}
    if not mine:
        return []
    prefixes = tuple({k[:40] for m in mine.values() for k in (m.meta.key or "", "k-" + (m.meta.key or ""))})
    others = {p: b for p, b in memory.all_files().items()
              if p not in contents and (memory_name(p) or "").startswith(prefixes)}
    blobs = memory.read(list(others.values())) if others else {}
    every = dict(mine)
    for path, blob in others.items():
        data = blobs.get(blob)
        if data is not None and (m := parsed(path, data)) is not None:
            every[path] = m
    return duplicate_keys(every, mine, {p: d.decode("utf-8", "replace") for p, d in keyed.items()})


def _line(verdict: FileVerdict | None) -> str | None:
    return verdict.entry[1] if verdict is not None and verdict.entry is not None else None


def _open_cache(desk: DeskFolder, desk_id: str) -> VerdictCache:
    from desk.gate.verdicts import VerdictCache  # SQLite: only the runs that use the cache pay

    return VerdictCache(desk.cache_dir, desk_id)


def _verdicts(changes: list[Change], desk_id: str, read: Read, known: Mapping[FileKey, FileVerdict],
              report: Report, *, keyed: bool = True
              ) -> tuple[dict[str, FileVerdict], dict[FileKey, FileVerdict]]:
    """`{path: verdict}` for `changes`, taken from `known` (the cache) when it has them, and the
    verdicts computed here by their keys (none unless `keyed`; a deletion is not cached: its
    verdict never needs the content)."""
    keys = {c.path: c.key() for c in changes if c.new is not None} if keyed else {}
    olds = read([c.old_blob for c in changes
                 if c.old_blob and needs_old(c.path) and keys.get(c.path) not in known])
    verdicts: dict[str, FileVerdict] = {}
    fresh: dict[FileKey, FileVerdict] = {}
    for change in changes:
        key = keys.get(change.path)
        if key is not None and key in known:
            verdicts[change.path] = known[key]
            report.reused += 1
            continue
        old = olds.get(change.old_blob) if change.old_blob else None
        verdicts[change.path] = file_verdict(change.path, change.new, desk_id=desk_id,
                                             mode=change.mode, old=old)
        report.computed += 1
        if key is not None:
            fresh[key] = verdicts[change.path]
    return verdicts, fresh


def _config(desk: DeskFolder, changes: list[Change],
            head: Callable[[], bytes | None] | None = None) -> tuple[str, frozenset[str]]:
    """desk_id and the allowed secret fingerprints of the content under check, without pydantic.

    The desk.json being committed when the change has one, else HEAD's (`head()`, when the caller
    has read it already): never an unstaged edit in the work tree, which would let a secret
    through a commit that does not allow it. (`validate --all` checks the work tree, so its
    changes carry the work-tree desk.json.) A broken desk.json is reported by the `config` rule.
    """
    found = next((config_values(c.new) for c in changes if c.path == CONFIG_PATH and c.new is not None), None)
    if found:
        return found
    # A broken desk.json under check (its own finding) falls back to HEAD's.
    data = head() if head is not None else desk.git.blob_at("HEAD", CONFIG_PATH)
    return config_values(data) or ("", frozenset())


def config_values(data: bytes | None) -> tuple[str, frozenset[str]] | None:
    """desk_id and the allowed secret fingerprints of desk.json's bytes; None when it is broken."""
    try:
        config = json.loads(data or b"")
        allow = config.get("secrets", {}).get("allow", [])
        return str(config["desk_id"]), frozenset(a for a in allow if isinstance(a, str))
    except (ValueError, KeyError, AttributeError, TypeError):
        return None


def current_config(desk: DeskFolder) -> tuple[str, frozenset[str]]:
    """desk_id and the allowed secret fingerprints of the work tree's desk.json (else HEAD's), read
    without pydantic: `desk doctor` judges history by the allow-list as it stands."""
    try:
        data = desk.read_if_present(CONFIG_PATH)
    except SymlinkError:
        data = None
    return _config(desk, [Change(CONFIG_PATH, data)] if data is not None else [])


def _like(git: Git, extra: Collection[str] = (), gone: Collection[str] = (),
          listed: Callable[[list[str]], list[str]] | None = None) -> Callable[[list[str]], list[str]]:
    """Paths in git's index (or those `listed` gives: HEAD's, from the memory mirror), plus `extra`,
    minus `gone`, equal to the given ones ignoring case."""
    def like(paths: list[str]) -> list[str]:
        found = set(listed(paths)) if listed is not None else git.indexed_like(paths)
        lowered = {p.lower() for p in paths}
        found |= {p for p in extra if p.lower() in lowered}
        return sorted(found - set(gone))
    return like


def _head_contents(desk: DeskFolder, paths: list[str], known: KnownHead | None) -> dict[str, bytes]:
    """`{"HEAD:path": content}` of `paths` at HEAD (absent files left out). A path whose HEAD blob
    `known` names is read from the work tree when the file there has exactly that blob (it is
    then the same bytes); the others, and any file that differs, come from one `git cat-file`."""
    found: dict[str, bytes] = {}
    ask: list[str] = []
    for path in paths:
        if known is None or path not in known.blobs:
            ask.append(path)
            continue
        blob = known.blobs[path]
        if blob is None:
            continue  # not at HEAD
        try:
            data = known.base if path == INDEX_FILE and known.base is not None else desk.read(path)
        except (OSError, SymlinkError):
            data = None
        if data is not None and blob_sha(data) == blob:
            found[f"HEAD:{path}"] = data
        else:
            ask.append(path)
    rev = known.commit if known is not None and known.commit else "HEAD"
    if ask:
        asked = desk.git.read_blobs([f"{rev}:{path}" for path in ask])
        found.update({f"HEAD:{path}": data for path in ask if (data := asked.get(f"{rev}:{path}")) is not None})
    return found


def _reader(git: Git, known: Mapping[str, bytes]) -> Read:
    """Blobs from `known` (already read or about to be written), the rest from git's object store."""
    def read(shas: list[str]) -> Mapping[str, bytes]:
        found = {s: known[s] for s in shas if s in known}
        missing = [s for s in shas if s not in known]
        return {**found, **(git.read_blobs(missing) if missing else {})}
    return read


def staged_changes(git: Git, raw: list[RawChange] | None = None
                   ) -> tuple[list[Change], dict[str, bytes]]:
    """What the commit being made changes, and the blobs read for it in one batch.

    The batch holds each changed desk blob (by sha), the old blobs of archive files and
    desk.json, HEAD's desk.json (the desk id and allow-list), and `HEAD:MEMORY.md` and
    `:MEMORY.md` (the committed and the staged index). `raw` is `git.staged_changes()` when the
    caller has it already.
    """
    raw = git.staged_changes() if raw is None else raw
    wanted = [c.new_blob for c in raw if c.new_blob and c.status != "D" and is_managed(c.path)
              and c.new_mode not in (SYMLINK_MODE, GITLINK_MODE)]
    if any(is_managed(c.path) for c in raw):
        wanted.append(f"HEAD:{CONFIG_PATH}")
    wanted += [c.old_blob for c in raw if c.old_blob and needs_old(c.path)]
    index_staged = any(c.path == INDEX_FILE for c in raw)
    if index_staged or any(c.path.startswith(MEMORY_PREFIX) for c in raw):
        wanted += [f"HEAD:{INDEX_FILE}", f":{INDEX_FILE}"] if index_staged else [f"HEAD:{INDEX_FILE}"]
    blobs = git.read_blobs(wanted)
    if not index_staged and f"HEAD:{INDEX_FILE}" in blobs:  # unchanged: read once (~0.6 MB at 10,000 memories)
        blobs[f":{INDEX_FILE}"] = blobs[f"HEAD:{INDEX_FILE}"]
    changes = [Change(c.path, None if c.status == "D" else blobs.get(c.new_blob or "", b""),
                      c.new_mode, c.old_blob, c.new_blob) for c in raw]
    return changes, blobs


def validate_staged(desk: DeskFolder, git: Git | None = None, *, message: str | None = None,
                    now: dt.datetime | None = None, raw: list[RawChange] | None = None
                    ) -> tuple[Report, bytes | None]:
    """Validate what is staged for commit (the hooks, `desk validate --staged`).

    `git` should keep the hook's GIT_INDEX_FILE (a `git commit -- paths` stages into a temporary
    index). Returns the report and, when the MEMORY.md rule ran, the correct MEMORY.md.
    """
    git = git or staged_git(desk.root)
    changes, blobs = staged_changes(git, raw)
    read = _reader(git, blobs)
    memory = MemorySet(blobs.get(f":{INDEX_FILE}"), blobs.get(f"HEAD:{INDEX_FILE}"),
                       lambda: git.ls_staged(MEMORY_PREFIX), read, _like(git))
    report, regenerated = _run(desk, changes, memory, read, message, now, cached=True,
                               head_config=lambda: blobs.get(f"HEAD:{CONFIG_PATH}"),
                               files_under=lambda spec: git.ls_staged_files([spec]))
    report.findings = _restore_hints(desk, report.findings)
    if any(is_attributes_file(c.path) for c in changes):
        from desk.gate.attributes import check_attributes  # a hook pays for it when .gitattributes changes

        report.findings += check_attributes(git, git.index_paths())
    return report, regenerated


def validate_range(desk: DeskFolder, old: str, new: str, *, now: dt.datetime | None = None
                   ) -> tuple[Report, bytes | None]:
    """The gate over what moving HEAD from `old` (HEAD now) to `new` would change, as if it were
    one commit: what desk sync runs before a fast-forward, which runs no hook (docs/sync.md).

    The same per-file and memory-set rules as `validate_staged`, read from the object store (the
    work tree and the index are never looked at). Costs in proportion to the change: one
    `git diff-tree`, one batch read of the changed blobs.
    """
    git = desk.git
    raw = git.diff_tree(old, new)
    wanted = [c.new_blob for c in raw if c.new_blob and c.status != "D" and is_managed(c.path)
              and c.new_mode not in (SYMLINK_MODE, GITLINK_MODE)]
    wanted += [f"{old}:{CONFIG_PATH}"] + [c.old_blob for c in raw if c.old_blob and needs_old(c.path)]
    touches_memory = any(c.path == INDEX_FILE or c.path.startswith(MEMORY_PREFIX) for c in raw)
    if touches_memory:
        wanted += [f"{old}:{INDEX_FILE}", f"{new}:{INDEX_FILE}"]
    blobs = git.read_blobs(wanted)
    changes = [Change(c.path, None if c.status == "D" else blobs.get(c.new_blob or "", b""),
                      c.new_mode, c.old_blob, c.new_blob) for c in raw]
    read = _reader(git, blobs)

    def like(paths: list[str]) -> list[str]:
        lowered = {p.lower() for p in paths}
        folders = {p.rsplit("/", 1)[0] for p in paths}
        return sorted(p for folder in folders for p in git.ls_tree(new, folder) if p.lower() in lowered)

    memory = None
    if touches_memory:
        memory = MemorySet(blobs.get(f"{new}:{INDEX_FILE}"), blobs.get(f"{old}:{INDEX_FILE}"),
                           lambda: git.ls_tree(new, MEMORY_PREFIX), read, like)
    report, regenerated = _run(desk, changes, memory, read, None, now, cached=True,
                               head_config=lambda: blobs.get(f"{old}:{CONFIG_PATH}"))
    report.findings = _restore_hints(desk, report.findings)
    if any(is_attributes_file(c.path) for c in raw):
        from desk.gate.attributes import tree_attribute_findings

        report.findings += tree_attribute_findings(git, new)
    return report, regenerated


def _restore_hints(desk: DeskFolder, findings: list[Finding]) -> list[Finding]:
    """A broken conflict queue's findings name the last commit whose queue was good (HEAD's copy
    may be the broken one). One `git log` of the queue, and only when it is broken."""
    if not any(f.path == CONFLICTS_FILE and f.severity == "error" for f in findings):
        return findings
    from desk.formats.queue import last_good_hint

    hint = last_good_hint(desk, CONFLICTS_FILE)
    return [f._replace(message=f"{f.message}; {hint}")
            if f.path == CONFLICTS_FILE and f.severity == "error" else f for f in findings]


class KnownHead:
    """What a caller already knows about HEAD (the memory mirror does): the gate then reads none
    of it from git. Facts a caller leaves out are read from git as before.

    `blobs` gives HEAD's blob id (None: no such file) of paths the caller vouches for; a file the
    gate needs the content of (MEMORY.md, desk.json) is read from the work tree and used only when
    its blob id is that one. `like` lists HEAD's memory paths equal to the given ones ignoring
    case (ASCII, as git's `:(icase)` pathspec compares).
    """

    __slots__ = ("commit", "blobs", "like", "index", "index_clean", "base")

    def __init__(self, commit: str | None, blobs: Mapping[str, str | None],
                 like: Callable[[list[str]], list[str]] | None = None, index: bytes | None = None,
                 index_clean: bool = False, base: bytes | None = None) -> None:
        self.commit = commit
        self.blobs = blobs
        self.like = like
        self.index = index  # MEMORY.md for HEAD's memories plus the commit's, rendered by the mirror
        # HEAD's MEMORY.md holds only lines clean of secrets in every view (desk.text.secrets.clean_lines)
        self.index_clean = index_clean
        # HEAD's MEMORY.md as the caller read it (the mirror): used, as the work tree's file is,
        # only when its blob id is the one `blobs` names; it spares reading and hashing it again
        self.base = base


def validate_writes(desk: DeskFolder, writes: Mapping[str, bytes | None], message: str,
                    now: dt.datetime | None = None, known: KnownHead | None = None) -> Report:
    """Validate one of desk's own commits in process: exactly `writes` on top of HEAD (the
    commit `known` describes, when given)."""
    git = desk.git
    if known is not None and all(p in known.blobs for p in writes):
        old_blobs = {p: b for p in writes if (b := known.blobs[p]) is not None}
    else:
        old_blobs = git.committed_blobs(writes)  # one ls-tree; none before the first commit
    changes = [Change(p, data, FILE_MODE, old_blobs.get(p)) for p, data in sorted(writes.items())]
    read = _reader(git, {blob_sha(data): data for data in writes.values() if data is not None})

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
    touches_memory = INDEX_FILE in writes or any(p.startswith(MEMORY_PREFIX) for p in writes)
    # HEAD's MEMORY.md and desk.json: from the work tree when `known` names their blobs and the
    # files hold them, else in one `git cat-file --batch`, not a git process each.
    heads = _head_contents(desk, [INDEX_FILE] * touches_memory + [CONFIG_PATH], known)
    if touches_memory:
        base = heads.get(f"HEAD:{INDEX_FILE}")
        index = writes[INDEX_FILE] if INDEX_FILE in writes else base
        gone = [p for p, data in writes.items() if data is None]
        added = [p for p, data in writes.items() if data is not None]
        like = _like(git, added, gone, known.like if known is not None else None)
        memory = MemorySet(index, base, all_files, read, like,
                           head_index=known.index if known is not None else None,
                           base_clean=known is not None and known.index_clean)
    def files_under(spec: str) -> dict[str, str]:
        head = git.head()
        if spec.endswith("/"):
            files = git.ls_tree(head, spec, recursive=True) if head else {}
        else:
            files = git.committed_blobs([spec]) if head else {}
        for path, data in writes.items():
            if path == spec or spec.endswith("/") and path.startswith(spec):
                if data is None:
                    files.pop(path, None)
                else:
                    files[path] = blob_sha(data)
        return files

    report, _ = _run(desk, changes, memory, read, message, now,
                     head_config=lambda: heads.get(f"HEAD:{CONFIG_PATH}"), files_under=files_under)
    return report


def validate_listed(desk: DeskFolder, started: StartedListing, now: dt.datetime | None = None, *,
                    cached: bool = True) -> Report:
    """`validate_all`'s work, once git was asked for the listing (`started`, of `.system/`).

    One `git ls-files` lists the work tree, naming the blob of every file git's stat cache finds
    unchanged since the index; only the other files are read from disk, and of the unchanged ones
    only those whose verdict the cache lacks. A desk whose listing, changed files and committed
    archive files are all as in an earlier run gets that run's findings back in one lookup.
    `cached=False` runs every rule on every file.
    """
    now = now or dt.datetime.now(dt.timezone.utc)
    if cached:  # the cache's module (SQLite) loads while git lists
        from desk.gate.verdicts import VerdictCache  # noqa: F401
    from desk.gate.attributes import work_tree_attribute_findings
    listing, head_system = started.result()
    found: dict[str, tuple[str, str | None, bytes | None]] = {}  # path: mode, blob, content
    for path in sorted(p for p in listing.elsewhere if is_managed(p) or desk.path(p).is_symlink()):
        entry = _read_work_tree(desk, path)
        if entry is not None:
            found[path] = entry
    changed = sorted(found)
    system = listing.clean(LISTED_FOLDER)  # archive files and desk.json: their HEAD blobs are inputs
    if CONFIG_PATH in system:  # always read: its desk id and allow-list
        config = _read_work_tree(desk, CONFIG_PATH)
        if config is not None:
            found[CONFIG_PATH] = config
    heads = {p: head_system[p] for p in sorted({*found, *system})
             if needs_old(p) and p in head_system}
    config = found.get(CONFIG_PATH)
    desk_id, allow = _config(desk, [Change(CONFIG_PATH, config[2])] if config else [])
    cache = _open_cache(desk, desk_id) if cached else None
    try:
        state = sha1_hex(repr((listing.digest, [(p, found[p][:2]) for p in changed],
                                   sorted(heads.items()))).encode())
        earlier = cache.state(state) if cache else None
        if earlier is not None:
            checked, verdict = earlier
            return Report(work_tree_attribute_findings(
                desk, listing, _restore_hints(desk, verdict.findings_at(allow, now))), checked, reused=checked)
        read_changed = {p: found[p][:2] for p in changed}
        continued = _continued(desk, cache, listing, found, heads, desk_id) if cache is not None else None
        if continued is not None:
            report, verdict, parts = continued
        else:
            for path, (mode, blob) in listing.clean().items():  # the whole index, parsed only now
                if is_checked(path, mode) and path not in found:
                    kind = mode if mode in (SYMLINK_MODE, GITLINK_MODE) else FILE_MODE
                    found[path] = (kind, blob, b"" if kind != FILE_MODE else None)
            report, verdict, parts = _validate_files(desk, found, heads, desk_id, cache)
        if cache is not None:
            cache.put_state(state, report.checked, verdict)
            if parts is not KEEP:  # the base the next run continues (desk.gate.delta), or none
                from desk.gate.delta import Base, encode

                cache.put_base(encode(Base(listing.records, frozenset(listing.elsewhere), read_changed,
                                           heads, report.checked, *parts)) if parts is not None else None)
    finally:
        if cache is not None:
            cache.close()
    report.findings = work_tree_attribute_findings(desk, listing, _restore_hints(desk, verdict.findings_at(allow, now)))
    return report


def _validate_files(desk: DeskFolder, found: dict[str, tuple[str, str | None, bytes | None]],
                    heads: Mapping[str, str], desk_id: str, cache: VerdictCache | None
                    ) -> tuple[Report, FileVerdict, Parts | None]:
    """`validate_all`'s work: every file's verdict (cached ones reused) and the memory-set rules.

    `found` maps each path to `(mode, blob, content)`, content None when it is still to be read.
    Returns the counts, every finding with its condition (desk.gate.rules.FileVerdict) and, when
    the next run may continue this one (desk.gate.delta), the verdicts with findings by path and
    the scopes' findings.
    """
    report = Report()
    read = _reader(desk.git, {})
    verdicts: dict[str, FileVerdict] = {}
    known = cache.all_files() if cache else {}
    current: set[FileKey] = set()
    misses = []
    for path in sorted(found):
        listed = found[path]
        if listed[2] is None:  # unchanged since the index: its verdict may be cached
            key = (path, listed[0], listed[1] or "", heads.get(path, ""))
            if key in known:
                verdicts[path] = known[key]
                current.add(key)
                report.reused += 1
                continue
            reread = _read_work_tree(desk, path)  # keyed by what is read: it may have changed
            if reread is None:
                continue
            found[path] = listed = reread
        misses.append(Change(path, listed[2], listed[0], heads.get(path), listed[1]))
    computed, fresh = _verdicts(misses, desk_id, read, known, report, keyed=cache is not None)
    verdicts.update(computed)
    if cache is not None:
        cache.put_files(fresh)
        current |= {c.key() for c in misses}
        cache.forget_files([key for key in known if key not in current])
    report.checked = len(verdicts) + (INDEX_FILE not in verdicts)  # a missing MEMORY.md is reported
    items = [(f, c) for path in sorted(verdicts)
             for f, c in zip(verdicts[path].findings, verdicts[path].conditions)]
    memory_paths = [p for p in sorted(verdicts)
                    if memory_name(p) is not None and found[p][0] != SYMLINK_MODE]
    lines = {path: _line(verdicts[path]) for path in memory_paths}
    every = {e[0]: e[1] for p in memory_paths if (e := verdicts[p].entry) is not None}
    try:
        index = desk.read_if_present(INDEX_FILE)
    except SymlinkError:
        index = None  # reported by the symlink rule

    by_lower: dict[str, list[str]] = {}
    for path in memory_paths:
        by_lower.setdefault(path.lower(), []).append(path)

    def like(wanted: list[str]) -> list[str]:
        return [p for lower in {w.lower() for w in wanted} for p in by_lower.get(lower, ())]

    memory = MemorySet(index, None, lambda: {}, read, like, all_lines=lambda: every)
    found_set, rendered = check_memory_set(desk, lines, memory, set(memory_paths))
    items += [(f, "") for f in found_set]
    changed = {p for p in memory_paths if found[p][2] is not None}  # read already: not tracked as is
    keyed, keyed_work = _keyed_state(desk, memory_paths, verdicts, changed)
    items += [(f, "") for f in keyed]
    scoped = [(f, "") for f in _work_tree_scope_indexes(desk, found, desk_id)]
    items += scoped
    parts = None
    if rendered is not None and not any(f.rule == "memory-name-case" for f in found_set) and not keyed_work and all(
            name == memory_name(p) and _PLAIN_NAME.fullmatch(name)
            for p in memory_paths if (entry := verdicts[p].entry) is not None for name in (entry[0],)):
        parts = ({p: v for p, v in verdicts.items() if v.findings},
                 FileVerdict(tuple(f for f, _ in scoped), tuple(c for _, c in scoped)), rendered)
    return report, FileVerdict(tuple(f for f, _ in items), tuple(c for _, c in items)), parts


# A memory name whose MEMORY.md line splice_lines places exactly (ASCII: bytes sort as code points;
# no brackets: its line's key is read up to `](`)
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")
Parts = tuple[dict[str, FileVerdict], FileVerdict, bytes]
KEEP: Parts = ({}, FileVerdict((), ()), b"")  # `_continued`'s word for "leave the base as it is"
_KEEP_BASE = 16  # a run continuing a base rewrites it when more paths than this changed since


def _continued(desk: DeskFolder, cache: VerdictCache, listing: WorkTreeListing,
               found: Mapping[str, tuple[str, str | None, bytes | None]], heads: Mapping[str, str],
               desk_id: str) -> tuple[Report, FileVerdict, Parts | None] | None:
    """`_validate_files`' answer from the base the last run left (desk.gate.delta), redoing only
    the memories (and MEMORY.md) that changed since; None when the whole check must run."""
    from desk.gate import delta

    row = cache.base()
    base = delta.decode(*row) if row is not None else None
    moved = delta.changed_memories(base, listing, found, heads) if base is not None else None
    if base is None or moved is None:
        return None
    present = {p: now for p, (_, now) in moved.items() if now is not None}
    added = [p for p, (then, now) in moved.items() if then is None and now is not None]
    if delta.case_clash(listing, added):
        return None
    report = Report()
    report.continued = True
    keys = {p: (p, FILE_MODE, now[1] or "", "") for p, now in present.items()}
    known = cache.files(keys.values())
    verdicts: dict[str, FileVerdict] = {}
    misses = []
    for path in sorted(present):
        if keys[path] in known:
            verdicts[path] = known[keys[path]]
            report.reused += 1
            continue
        listed = found.get(path) if path in listing.elsewhere else None
        if listed is None or listed[2] is None:
            listed = _read_work_tree(desk, path)  # keyed by what is read: it may have changed
            if listed is None or listed[0] != FILE_MODE:
                return None
        misses.append(Change(path, listed[2], FILE_MODE, None, listed[1]))
    computed, fresh = _verdicts(misses, desk_id, _reader(desk.git, {}), known, report)
    cache.put_files(fresh)
    verdicts.update(computed)
    if any(v.keyed or v.entry is not None and (v.entry[0] != memory_name(p) or not _PLAIN_NAME.fullmatch(v.entry[0]))
           for p, v in verdicts.items()):
        return None
    try:
        index = desk.read_if_present(INDEX_FILE)
    except SymlinkError:
        return None
    from desk.formats.memory_index import splice_lines

    lines = {name: _line(verdicts.get(p)) for p in moved if (name := memory_name(p)) is not None}
    try:
        expected = splice_lines(base.rendered, lines)
    except (ValueError, UnicodeError):
        expected = None
    if index is None or expected is None:
        return None
    cache.forget_files([(p, FILE_MODE, then[1] or "", "") for p, (then, _) in moved.items()
                        if then is not None and keys.get(p) != (p, FILE_MODE, then[1] or "", "")],
                       others=False)
    per_file = {p: v for p, v in base.per_file.items() if p not in moved}
    per_file.update((p, v) for p, v in verdicts.items() if v.findings)
    stale = [] if expected == index else [stale_index(index, expected)]
    items = [(f, c) for p in sorted(per_file) for f, c in zip(per_file[p].findings, per_file[p].conditions)]
    items += [(f, "") for f in stale]
    items += list(zip(base.scoped.findings, base.scoped.conditions))
    removed = sum(1 for then, now in moved.values() if then is not None and now is None)
    report.checked = base.checked + len(added) - removed
    report.reused = report.checked - report.computed  # the others' verdicts as the base found them
    # The base stays valid whatever this run found (it describes its own state): it is replaced
    # only when enough changed since it that the next run would redo much (writing the listing
    # and the index again costs ~2-3 ms at 10,000 files).
    return report, FileVerdict(tuple(f for f, _ in items), tuple(c for _, c in items)), (
        (per_file, base.scoped, expected) if len(moved) > _KEEP_BASE else KEEP)


def _work_tree_scope_indexes(desk: DeskFolder, found: Mapping[str, tuple[str, str | None, bytes | None]],
                             desk_id: str) -> list[Finding]:
    """desk.gate.scope_index over every scope in the work tree (clock-free, so a cached run's
    findings stay true)."""
    files = {p: blob for p, (mode, blob, _) in found.items() if mode == FILE_MODE and blob}
    if not any(touched_scopes(files)):
        return []
    known = {blob: data for _, blob, data in found.values() if blob and data is not None}

    def files_under(spec: str) -> dict[str, str]:
        return {p: b for p, b in files.items() if p == spec or spec.endswith("/") and p.startswith(spec)}

    findings, _ = check_scope_indexes(sorted(files), files_under, _reader(desk.git, known), desk_id,
                                      dt.datetime.now(dt.timezone.utc))
    return findings


def _keyed_state(desk: DeskFolder, memory_paths: list[str], verdicts: Mapping[str, FileVerdict],
                 changed: Collection[str]) -> tuple[list[Finding], bool]:
    """desk.gate.keyed's rules over the work tree: one active revision per key, evidence in the
    archive, open cases that still describe their domain.

    Cheap on a desk without keyed memories: each memory's verdict (cached by blob) says whether
    it holds a `key:` or `evidence:` line, so only those are read (a `git grep` over every memory
    file cost 60-110 ms at 10,000 memories), the queue is taken as its own verdict found it, and
    YAML, pydantic and the rules load only when there is work.
    """
    keyed = {path for path in memory_paths if verdicts[path].keyed} | set(changed)
    datas = {}
    for path in memory_paths:
        if path not in keyed or verdicts[path].entry is None:
            continue  # does not parse: its own finding says so
        try:
            data = desk.read(path)
        except (OSError, DeskError):  # a symlink has its own finding
            continue
        if b"\nkey:" in data or b"\nevidence:" in data:
            datas[path] = data
    try:
        queue_data = desk.read_if_present(CONFLICTS_FILE) or b""
    except DeskError:  # a symlink: its own finding
        queue_data = b""
    cases = []
    queue_verdict = verdicts.get(CONFLICTS_FILE)
    if queue_data and queue_verdict is not None and not any(
            f.severity == "error" for f in queue_verdict.findings):
        cases = json.loads(queue_data)["cases"]
    if not datas and not any(c.get("status") == "open" for c in cases):
        return [], False
    from desk.formats.memory_file import parse_memory
    from desk.gate.keyed import archive_ids, keyed_findings

    memories, texts = {}, {}
    for path, data in datas.items():
        try:
            memories[path] = parse_memory(data, path, memory_name(path))
        except InvalidFileError:
            continue
        texts[path] = data.decode("utf-8", "replace")
    known = None
    if any(m.meta.evidence for m in memories.values()):
        folder = desk.path(ARCHIVE_DIR)
        known = archive_ids(desk.read(f"{ARCHIVE_DIR}/{p.name}") for p in sorted(folder.glob("*.jsonl"))
                            if not p.is_symlink())
    return keyed_findings(memories, texts, cases, known, queue_data.decode("utf-8", "replace"),
                          CONFLICTS_FILE), True


def _read_work_tree(desk: DeskFolder, path: str) -> tuple[str, str | None, bytes | None] | None:
    """`(mode, blob, content)` of a work-tree file as a commit would take it; None when it is gone."""
    full = desk.path(path)
    if full.is_symlink():
        return (SYMLINK_MODE, None, b"")
    if full.is_dir():
        return (GITLINK_MODE, None, b"")  # a repository of its own (git lists it as a folder)
    try:
        data = desk.read(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # deleted in the work tree, not yet committed
    except SymlinkError:
        return (SYMLINK_MODE, None, b"")  # a folder on its way is a link
    return (FILE_MODE, blob_sha(data), data)


def fix_index(desk: DeskFolder, regenerated: bytes, staged: bytes | None) -> bool:
    """Write the regenerated MEMORY.md into the work tree (`desk validate --staged --fix`, what the
    pre-commit framework runs); True if changed. Only over the staged MEMORY.md: a work-tree
    MEMORY.md that differs from it is the person's own and is never written over."""
    from desk.storage.reading import SymlinkError, read_regular

    path = desk.path(INDEX_FILE)
    try:
        current: bytes | None = read_regular(path, desk.root)
    except (FileNotFoundError, SymlinkError):
        current = None
    if current == regenerated or current != staged:
        return False
    atomic_write(path, regenerated)
    return True


def require_valid(desk: DeskFolder, writes: Mapping[str, bytes | None], message: str,
                  now: dt.datetime | None = None, known: KnownHead | None = None) -> Report:
    """`validate_writes`, raising InvalidFileError (exit 3) when any rule fails."""
    report = validate_writes(desk, writes, message, now, known)
    if not report.ok:
        raise InvalidFileError(report.errors, hint="nothing was committed; fix the findings above")
    return report
