"""`validate --all` and the doctor over the work tree (`validate_listed`): every desk file, from one
`git ls-files` that desk.gate.whole starts before the gate loads."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from desk.errors import DeskError, Finding, InvalidFileError
from desk.gate.checks import (Change, Report, blob_reader, commit_config, file_verdicts, open_cache,
                              restore_hints, verdict_line)
from desk.gate.index_rule import MemorySet, check_memory_set
from desk.gate.scope_index import check_scope_indexes, touched_scopes
from desk.gate.rules import (FILE_MODE, GITLINK_MODE, SYMLINK_MODE, FileVerdict, is_checked, is_managed,
                             needs_old)
from desk.layout import (ARCHIVE_DIR, CONFIG_PATH, CONFLICTS_FILE, INDEX_FILE, LISTED_FOLDER, DeskFolder,
                         memory_name)
from desk.storage.git import StartedListing, blob_sha, sha1_hex
from desk.storage.reading import SymlinkError

if TYPE_CHECKING:
    from desk.gate.verdicts import FileKey, VerdictCache


def validate_listed(desk: DeskFolder, started: StartedListing, now: dt.datetime | None = None, *,
                    cached: bool = True) -> Report:
    """`validate_all`'s work, once git was asked for the listing (`started`, of `.system/`).

    Only the files git's stat cache cannot vouch for are read, and of the others only those whose
    verdict the cache lacks; a desk as in an earlier run gets its findings back in one lookup.
    `cached=False` runs every rule on every file."""
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
    desk_id, allow = commit_config(desk, [Change(CONFIG_PATH, config[2])] if config else [])
    cache = open_cache(desk, desk_id) if cached else None
    try:
        state = sha1_hex(repr((listing.digest, [(p, found[p][:2]) for p in changed],
                                   sorted(heads.items()))).encode())
        earlier = cache.state(state) if cache else None
        if earlier is not None:
            checked, verdict = earlier
            return Report(work_tree_attribute_findings(
                desk, listing, restore_hints(desk, verdict.findings_at(allow, now))), checked, reused=checked)
        for path, (mode, blob) in listing.clean().items():  # the whole index, parsed only now
            if is_checked(path, mode) and path not in found:
                kind = mode if mode in (SYMLINK_MODE, GITLINK_MODE) else FILE_MODE
                found[path] = (kind, blob, b"" if kind != FILE_MODE else None)
        report, verdict = _validate_files(desk, found, heads, desk_id, cache)
        if cache is not None:
            cache.put_state(state, report.checked, verdict)
    finally:
        if cache is not None:
            cache.close()
    report.findings = work_tree_attribute_findings(desk, listing, restore_hints(desk, verdict.findings_at(allow, now)))
    return report


def _validate_files(desk: DeskFolder, found: dict[str, tuple[str, str | None, bytes | None]],
                    heads: Mapping[str, str], desk_id: str, cache: VerdictCache | None
                    ) -> tuple[Report, FileVerdict]:
    """Every file's verdict (cached ones reused) and the memory-set rules; `found` maps each path to
    `(mode, blob, content)`, content None while unread."""
    report = Report()
    read = blob_reader(desk.git, {})
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
    computed, fresh = file_verdicts(misses, desk_id, read, known, report, keyed=cache is not None)
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
    lines = {path: verdict_line(verdicts[path]) for path in memory_paths}
    every = {e[0]: e[1] for p in memory_paths if (e := verdicts[p].entry) is not None}
    try:
        index = desk.read_if_present(INDEX_FILE)
    except SymlinkError:
        index = None  # reported by the symlink rule

    def like(wanted: list[str]) -> list[str]:
        lowered = {w.lower() for w in wanted}
        return [p for p in memory_paths if p.lower() in lowered]

    memory = MemorySet(index, None, lambda: {}, read, like, all_lines=lambda: every)
    found_set, _ = check_memory_set(desk, lines, memory, set(memory_paths))
    changed = {p for p in memory_paths if found[p][2] is not None}  # read already: not tracked as is
    items += [(f, "") for f in [*found_set, *_keyed_state(desk, memory_paths, verdicts, changed),
                                *_work_tree_scope_indexes(desk, found, desk_id)]]
    return report, FileVerdict(tuple(f for f, _ in items), tuple(c for _, c in items))


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

    findings, _ = check_scope_indexes(sorted(files), files_under, blob_reader(desk.git, known), desk_id,
                                      dt.datetime.now(dt.timezone.utc))
    return findings


def _keyed_state(desk: DeskFolder, memory_paths: list[str], verdicts: Mapping[str, FileVerdict],
                 changed: Collection[str]) -> list[Finding]:
    """desk.gate.keyed's rules over the work tree. Only memories whose cached verdict says they hold a
    `key:` or `evidence:` line are read, and the rules load only when there is work."""
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
        return []
    from desk.formats.memory_file import parse_memory
    from desk.gate.keyed import archive_ids, keyed_findings

    memories, texts = {}, {}
    for path, data in datas.items():
        try:
            memories[path] = parse_memory(data, path, memory_name(path))
        except InvalidFileError:
            continue
        texts[path] = data.decode("utf-8", "replace")
    for case in cases:  # a merge's open case is stale when its file no longer holds the kept version
        path = case.get("key")
        if case.get("status") == "open" and case.get("origin") == "sync" and isinstance(path, str) \
                and path not in texts and memory_name(path) is not None:
            try:
                held = desk.read_if_present(path)
            except DeskError:  # a symlink: its own finding
                continue
            if held is not None:
                texts[path] = held.decode("utf-8", "replace")
    known = None
    if any(m.meta.evidence for m in memories.values()):
        folder = desk.path(ARCHIVE_DIR)
        known = archive_ids(desk.read(f"{ARCHIVE_DIR}/{p.name}") for p in sorted(folder.glob("*.jsonl"))
                            if not p.is_symlink())
    return keyed_findings(memories, texts, cases, known, queue_data.decode("utf-8", "replace"),
                          CONFLICTS_FILE)


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
