"""`desk restore NAME [--from REV]`: a forgotten or overwritten memory back from git history, in one commit.

The version at `--from` (under an older name before a real rename, desk.memory.follow), else the
newest that differs from the one committed now; it comes back byte for byte (but a renamed
`name:`) and passes the write gate like every write.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from contextlib import nullcontext
from dataclasses import dataclass

from desk.errors import DeskError, InvalidFileError, RejectedError, UsageError, quoted
from desk.formats.memory_file import MemoryFile, parse_memory, require_name
from desk.formats.memory_index import memory_path
from desk.gate import memory_gate as gate
from desk.gate.mirror import head_mirror
from desk.layout import INDEX_FILE, DeskFolder, project_memory_path
from desk.memory import follow
from desk.memory.operations import _commit_memory, _head_blobs, _require_actor, commit_project, project_state
from desk.memory.reads import no_memory, require_project
from desk.text.times import format_time, utc_now
from desk.transaction import transaction


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What `restore` did: `restored` (one commit) or `unchanged` (that version is the current one)."""

    status: str
    name: str
    path: str
    restored_from: str  # the full id of the commit whose version of the file came back
    from_path: str  # the memory's path at that commit (an older name before a rename)
    commit: str | None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"status": self.status, "name": self.name, "path": self.path,
                                   "commit": self.commit, "restored_from": self.restored_from,
                                   "from_path": self.from_path, "reason": None}
        if self.warnings:
            data["warnings"] = list(self.warnings)
        return data


@dataclass(frozen=True, slots=True)
class _Version:
    commit: str
    path: str
    data: bytes  # the bytes to write at the memory's path now
    memory: MemoryFile


def restore(desk: DeskFolder, name: str, *, from_rev: str | None = None, actor: str = "user",
            project: str | None = None, now: dt.datetime | None = None) -> RestoreResult:
    """Bring memory `name` (of `project`, when given) back from history in one commit. UsageError
    (exit 2) for a bad `from_rev`, DeskError (exit 1) when there is no such version, RejectedError
    (exit 3) when the gate refuses it, ConflictError (exit 4) over uncommitted edits."""
    if project is not None:
        require_project(project)
    _require_actor(actor)
    require_name(name)
    path = memory_path(name) if project is None else project_memory_path(project, name)
    with transaction(desk) as tx, head_mirror(desk) if project is None else nullcontext() as mirror:
        if mirror is None:
            assert project is not None
            memories, same_body = project_state(desk, tx, project, name, path)
            current = desk.read_if_present(path)
        else:
            tx.require_clean([path, INDEX_FILE], _head_blobs(mirror, name))
            current = desk.read(path) if mirror.blob(name) is not None else None
            same_body = mirror.same_body
        rev = None if from_rev is None else _commit_of(desk, from_rev, name, project)
        version = _pick(desk, name, path, rev, from_rev, current, project)
        if version.data == current:
            return RestoreResult("unchanged", name, path, version.commit, version.path, None)
        try:
            gate.check_memory(version.memory, "durable", same_body, gate.rule_texts(desk))
            subject = f"restore: {name} from {version.commit[:7]}" + ("" if project is None else f" (project {project})")
            trailers = {"Desk-Op": "restore", "Desk-Memory": name, "Desk-Project": project, "Desk-Actor": actor,
                        "Desk-Restored-From": version.commit}
            if mirror is None:
                assert project is not None
                sha = commit_project(tx, memories, project, version.memory, version.data, subject, trailers)
            else:
                sha = _commit_memory(desk, tx, mirror, version.memory, subject, trailers, version.data)
        except RejectedError as exc:  # the version breaks a rule today: say which, and what else to do
            exc.hint = "; or ".join(filter(None, [exc.hint, _another(name, project)]))
            raise
    warnings: tuple[str, ...] = ()
    when = (now or utc_now()).replace(microsecond=0)
    if version.memory.is_expired(when):
        assert version.memory.meta.expires is not None
        warnings = (f"{name} expired at {format_time(version.memory.meta.expires)}: it is listed but never "
                    f"injected; `desk set {name} --expires TIME` or `--no-expires` brings it back into use",)
    return RestoreResult("restored", name, path, version.commit, version.path, sha, warnings)


def _flag(project: str | None) -> str:
    return "" if project is None else f" --project {project}"


def _another(name: str, project: str | None) -> str:
    return (f"restore another version (`desk history {name}{_flag(project)}` lists them, "
            "`--from COMMIT` picks one)")


def _commit_of(desk: DeskFolder, rev: str, name: str, project: str | None) -> str:
    """The full id of the commit `rev` names; UsageError (exit 2) naming `--from` otherwise."""
    found = None if rev.startswith("-") or "\n" in rev else desk.git.refs.object_id(rev + "^{commit}")
    if found is None:
        raise UsageError(f"--from {quoted(rev)}: no such commit in this desk",
                         hint=f"give a commit from `desk history {name}{_flag(project)}`, e.g. HEAD~1")
    return found


def _pick(desk: DeskFolder, name: str, path: str, rev: str | None, from_rev: str | None,
          current: bytes | None, project: str | None) -> _Version:
    """The version to restore: the memory at `rev`, or (None) the newest that differs from `current`."""
    segments = follow.segments(desk.git, path)
    if not segments:
        if project is None:
            raise no_memory(desk, name)
        raise DeskError(f"no commit ever held a memory named {name!r} in project {project!r}",
                        hint=f"see the names with `desk list --project {project}`")
    if rev is not None:
        for segment in segments:
            if segment.until is not None and not desk.git.refs.is_ancestor(rev, segment.until):
                continue  # after the rename, the old name is not this memory's
            data = desk.git.objects.blob_at(rev, segment.path)
            if data is not None:
                return _version(rev, segment.path, data, name, path, project)
        held = next((c.sha for s in segments for c in s.commits
                     if desk.git.objects.blob_at(c.sha, s.path) is not None), None)
        assert from_rev is not None
        raise DeskError(f"--from {quoted(from_rev)}: memory {name!r} did not exist at that commit ({rev[:7]})",
                        hint=f"pick a commit from `desk history {name}{_flag(project)}`"
                             + (f", e.g. {held[:7]}" if held else ""))
    for segment in segments:
        for commit in segment.commits:
            data = desk.git.objects.blob_at(commit.sha, segment.path)
            if data is None:
                continue  # this commit deleted it (a forget) or renamed it away
            version = _version(commit.sha, segment.path, data, name, path, project)
            if version.data != current:
                return version
    raise DeskError(f"memory {name!r} has no earlier version to restore: every version in its history "
                    "is the one committed now", hint=f"see them with `desk history {name}{_flag(project)}`")


def _version(commit: str, source: str, data: bytes, name: str, path: str, project: str | None) -> _Version:
    """The file at `source` in `commit` as memory `name` at `path` (under an older name, its `name:`
    follows the rename); InvalidFileError (exit 3) when that version does not parse."""
    try:
        memory = parse_memory(data, source, posixpath.basename(source).removesuffix(".md"))
    except InvalidFileError as exc:
        exc.hint = f"that version ({source} at {commit[:7]}) does not pass the rules; {_another(name, project)}"
        raise
    if source == path:
        return _Version(commit, source, data, memory)
    memory = MemoryFile(memory.meta.replace(name=name), memory.body)
    return _Version(commit, source, memory.render(), memory)
