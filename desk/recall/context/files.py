"""The files a context read shows: read without following a link, and named with their blobs
and, when HEAD holds exactly that blob, HEAD's commit (docs/context.md, "Provenance")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from desk.errors import DeskError, Finding, InvalidFileError, UsageError
from desk.layout import DeskFolder
from desk.recall.context.sections import Section
from desk.storage.git import blob_sha

if TYPE_CHECKING:
    from desk.memory.past import Past

T = TypeVar("T")


def read_file(path: Path, shown: str, read: dict[str, bytes | None], rel: str | None,
              root: Path | None = None) -> str:
    """A section's file, never read through a symbolic link (on the way inside the desk, `root`, too):
    the section says it was refused, and everything else still loads."""
    from desk.storage.reading import SymlinkError, read_regular

    try:
        data = read_regular(path, root)
    except FileNotFoundError:
        if rel is not None:
            read[rel] = None
        return f"_({shown} does not exist)_\n"
    except SymlinkError:
        return (f"_({shown} was not read: it is a symbolic link, and desk never reads through one; "
                "`desk validate --all` names it and says how to put the file back)_\n")
    except OSError as exc:
        raise UsageError(f"cannot read {shown}: {exc}",
                         hint="check the file's permissions, or leave it out") from None
    if rel is not None:
        read[rel] = data
    elif b"\0" in data or not _utf8(data):  # the caller's own file (--project-agents): text only
        raise UsageError(f"--project-agents {shown}: not a UTF-8 text file",
                         hint="give the project's AGENTS.md (Markdown, UTF-8), or leave the option out")
    return data.decode("utf-8", "replace").rstrip() + "\n"


def past_blob(desk: DeskFolder, past: Past, rel: str) -> bytes | None:
    """`rel` as the commit of a read as of a time holds it (None: absent then)."""
    return desk.git.objects.blob_at(past.commit, rel) if past.commit else None


def committed_files(desk: DeskFolder, commit: str | None, folder: str, parse: Callable[[bytes, str, str], T],
                    problems: list[Finding]) -> list[T]:
    """`parse(bytes, path, stem)` of each `.md` file directly in `folder` as `commit` holds it
    (`--as-of`); the findings of those that do not parse go to `problems`."""
    files = {p: b for p, b in desk.git.worktree.ls_tree(commit, folder).items() if p.endswith(".md")} if commit else {}
    data = desk.git.objects.read_blobs(set(files.values()))
    found = []
    for path, blob in sorted(files.items()):
        try:
            found.append(parse(data[blob], path, path.rsplit("/", 1)[1][:-3]))
        except InvalidFileError as exc:
            problems.extend(exc.findings)
    return found


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def stamp_sources(desk: DeskFolder, sections: list[Section], read: Mapping[str, bytes | None],
                  known: Mapping[str, str | None] | None) -> str | None:
    """Give each desk file source its blob and, when HEAD holds exactly that, HEAD's commit
    (`known`: HEAD's ids git gave with memory/'s state; else one `cat-file --batch-check`)."""
    names = ["HEAD", *(f"HEAD:{rel}" for rel in read)]
    if known is not None and known.get("HEAD") is not None and all(n in known for n in names):
        ids: Mapping[str, str | None] = known
    else:
        try:
            ids = desk.git.objects.object_ids(names)
        except DeskError:
            ids = {}
    head = ids.get("HEAD")
    for section in sections:
        for source in section.sources:
            rel = source["path"]
            if rel not in read or "commit" in source:
                continue
            data = read[rel]
            blob = blob_sha(data) if data is not None else None
            committed = blob is not None and ids.get(f"HEAD:{rel}") == blob
            source.update(blob=blob, commit=head if committed else None, committed=committed)
    return head
