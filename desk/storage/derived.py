"""Every cache and record desk derives from a desk: the one list (docs/design.md "Derived state").

Each lives in the git folder and can be thrown away at any time. An answer is kept under the
content ids it was derived from (`key`) and the fingerprint of the code that made it (`builders`
and their imports, desk.storage.code_print): a SQLite cache with another fingerprint is emptied
when opened, a record file carries it in its first line. `desk doctor --rebuild` drops them all."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from desk.storage.code_print import MEMO_FILE, code_print

CACHE_FOLDER = "desk-cache"  # in .git/ (desk.layout.CACHE_FOLDER)


@dataclass(frozen=True, slots=True)
class Derived:
    """One cache or record: where it lives (`path`, under .git/), what its answers are keyed by,
    the modules whose code makes it, and how it is made again."""

    name: str
    path: str
    key: str
    builders: tuple[str, ...]
    rebuild: str

    def fingerprint(self, git_dir: Path | None = None) -> str:
        """The code version of this cache (its builders' import graph; see the module docstring)."""
        return _fingerprint(self.builders, git_dir)


REGISTRY = (
    Derived("entries", f"{CACHE_FOLDER}/entries.sqlite",
            "a memory's blob id (its parsed entry); a memory file's stat (its blob id); the HEAD commit "
            "the mirror of memory/ was brought up to (each memory's blob, index line and last commit)",
            ("desk.formats.memory_index", "desk.gate.mirror"),
            "the next mutation or read: entries parsed from their blobs, the mirror caught up from its "
            "commit with `git log --raw`, or from `git ls-tree` and the whole history when that commit is gone"),
    Derived("context", f"{CACHE_FOLDER}/context.sqlite",
            "the view of memory/: HEAD's memory tree, the index's stat and the untracked files, with the "
            "expiry times it spans; parsed files: their bytes and the scope they are read for",
            ("desk.recall.context",),
            "the next `desk context`: the view rendered from the entries, files parsed again"),
    Derived("verdicts", f"{CACHE_FOLDER}/verdicts.sqlite",
            "a file's verdict: path, mode, blob id, the blob it replaces and the desk id; whole-desk "
            "findings: the state's id; history findings: the commit id; folders with no temporary "
            "files: their inode and mtime",
            ("desk.gate.validate", "desk.guard.doctor"),
            "the next `desk validate --all`, commit hook or `desk doctor`: the rules run again"),
    Derived("search", f"{CACHE_FOLDER}/search.sqlite",
            "HEAD's memory and archive trees, each memory file's blob id and stat, each archive file's "
            "size and the hash of what it held; an as-of commit's view: the commit id and the cache's generation",
            ("desk.recall.search_cache", "desk.recall.past_view"),
            "the next `desk recall`: every memory and archive file indexed again"),
    Derived("embeddings", f"{CACHE_FOLDER}/embeddings.sqlite",
            "a search record's id and the embedder's name", ("desk.recall.hybrid",),
            "the next hybrid `desk recall` embeds what it lacks (none is made without an embedder)"),
    Derived("head-ids", f"{CACHE_FOLDER}/head-ids",
            "the HEAD commit id and packed-refs' stat (never used while a replace ref may apply)",
            ("desk.recall.git_state",), "the next read asks `git cat-file` and records the answer"),
    Derived("memory-untracked", f"{CACHE_FOLDER}/memory-untracked",
            "memory/'s and git's index's stat", ("desk.recall.git_state",),
            "the next read asks `git ls-files --others` and records the answer"),
    Derived("code-prints", f"{CACHE_FOLDER}/{MEMO_FILE}",
            "each desk source file's path, size, mtime and ctime", ("desk.storage.code_print",),
            "the next fingerprint parses the sources again"),
    Derived("private-index", "desk-index.base",
            "the commit whose tree desk's private index (.git/desk-index) holds", ("desk.storage.git",),
            "the next mutation reads HEAD's tree into the private index (`git read-tree`)"),
    Derived("desk-id", "desk-id",
            "nothing: the committed desk id never changes (the gate keeps it fixed)", ("desk.layout",),
            "the next read of the desk id asks git for HEAD's .system/desk.json"),
)

# desk's files in .git/ that are not derived (never dropped by a rebuild): what no command could
# make again from the desk (the journal of desk's own last commits, an interrupted sync's record and
# the bytes it rescued, the serve token), the locks, and the private index (its key is registered).
NOT_DERIVED = ("desk-published.json", "desk-sync-integrating.json", "desk-rescued", "desk-serve-token",
               "desk-clone-id", "desk-pending-", "desk-edit", "desk.lock", "desk-archive.lock", "desk-index",
               "desk-index.lock", "desk-index-lock.json", "desk-person-index", "desk-git-children-",
               "desk-hook-index-", "desk-tree-index-")

# Records an older desk kept in .git/ (for its in-process commits, and its copy of git's config
# lookup); desk no longer reads them.
RETIRED = ("desk-tree-segments.json", "desk-blob-segments.json", "desk-tree-kept", "desk-index-walk.json",
           "desk-config.json")


@lru_cache(maxsize=None)
def _fingerprint(builders: tuple[str, ...], git_dir: Path | None) -> str:
    """Once per process: the code this process runs is the code it loaded, whatever a source
    file says later."""
    return code_print(builders, git_dir / CACHE_FOLDER if git_dir is not None else None)


def registered(name: str) -> Derived:
    """The registry's entry `name`, by its name or its file's name (`search.sqlite`)."""
    for entry in REGISTRY:
        if name in (entry.name, entry.path.rpartition("/")[2]):
            return entry
    raise KeyError(name)


def drop_all(git_dir: Path) -> list[str]:
    """Remove every registered file (and SQLite's side files) and every retired record from
    `git_dir`; the paths removed, relative to it. The caller holds the desk lock."""
    removed = []
    for name in [entry.path for entry in REGISTRY] + list(RETIRED):
        for suffix in ("", "-wal", "-shm") if name.endswith(".sqlite") else ("",):
            with suppress(FileNotFoundError):
                (git_dir / f"{name}{suffix}").unlink()
                removed.append(f"{name}{suffix}")
    return removed
