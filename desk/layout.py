"""Finding a desk on disk and the paths inside it."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import DeskError, NotADeskError
from desk.vocabulary import CONFIG_PATH as CONFIG_PATH  # re-exported: every path inside a desk is named here
from desk.vocabulary import DESK_ID_RE as DESK_ID_RE
from desk.vocabulary import DESK_SCHEMA as DESK_SCHEMA
from desk.vocabulary import newer_schema as newer_schema

if TYPE_CHECKING:
    from desk.storage.git import Git
    from desk.config import DeskConfig

# Every path inside a desk, defined once (docs/design.md §2 lays them out).
AGENTS_FILE = "AGENTS.md"
SOUL_FILE = "SOUL.md"
RULE_FILES = (AGENTS_FILE, SOUL_FILE)  # what memory must not repeat (docs/design.md §8.4's write gate)
USER_FILE = "USER.md"
NOW_FILE = "NOW.md"
INDEX_FILE = "MEMORY.md"  # the generated index of memory/; "index" means this file only
MISTAKES_FILE = "MISTAKES.md"
MEMORY_DIR = "memory"
MEMORY_PREFIX = MEMORY_DIR + "/"
JOURNAL_DIR = "journal"
CONVERSATIONS_DIR = "conversations"
GITATTRIBUTES = ".gitattributes"
LISTED_FOLDER = ".system/"  # `validate --all` lists HEAD's tree of it too (the gate's `needs_old`)
DESK_ID_CACHE = "desk-id"  # in .git/: the committed desk_id (DeskFolder.desk_id)
CONFLICTS_FILE = ".system/conflicts.json"
# Derived caches live in `.git/desk-cache/`, where no commit or clone can put a file or a link.
CACHE_FOLDER = "desk-cache"  # in .git/
ARCHIVE_DIR = ".system/archive"  # append-only raw events, one file per UTC day per clone
ARCHIVE_PREFIX = ARCHIVE_DIR + "/"
LOCK_FILE = "desk.lock"
# in .git/: the paths desk's last commits changed (desk.transaction.PUBLISHED_FILE writes it)
PUBLISHED_RECORD = "desk-published.json"

# User scopes (docs/scopes.md): the owner's is the desk's top level, every other user's `users/<scope-id>/`.
OWNER_SCOPE = "owner"
USERS_DIR = "users"
PREFS_DIR = "prefs"
PREFS_INDEX_FILE = "PREFERENCES.md"

# Project scopes (docs/scopes.md): `projects/<name>/memory/<memory>.md` and `projects/<name>/MEMORY.md`.
PROJECTS_DIR = "projects"
PROJECT_MAX = 64

def is_attributes_file(path: str) -> bool:
    """Whether `path` is a `.gitattributes` file (at any depth: git reads each one in its folder)."""
    return path.rsplit("/", 1)[-1] == GITATTRIBUTES


NOT_A_FILE = "(not a regular file)"  # what worktree_blob says of a symlink or folder


def memory_name(path: str) -> str | None:
    """The memory name in a desk path `memory/<name>.md`, or None for any other path."""
    folder, _, file = path.rpartition("/")
    if folder != MEMORY_DIR or not file.endswith(".md"):
        return None
    return file[:-3]


# desk path -> template file name (dotfiles are stored without their dot so packaging keeps them)
TEMPLATE_FILES = {**{name: name for name in (AGENTS_FILE, SOUL_FILE, USER_FILE, NOW_FILE, MISTAKES_FILE)},
                  GITATTRIBUTES: "dot-gitattributes", ".gitignore": "dot-gitignore"}


def template_bytes(name: str) -> bytes:
    """The template file `name` (templates/, shipped in the wheel as desk._templates)."""
    from importlib import resources

    return resources.files("desk._templates").joinpath(name).read_bytes()


def scope_id(user: str | None) -> str:
    """The scope of user id `user`: OWNER_SCOPE for None or blank, else `u-` and 16 hex digits of a
    SHA-256 of the normalised id (NFKC, format characters dropped, trimmed, case-folded)."""
    if not user:
        return OWNER_SCOPE
    import unicodedata

    from desk.storage.hashing import sha256_hex

    normal = unicodedata.normalize("NFKC", user).strip().casefold()
    # Invisible format characters (zero-width, direction controls) never tell two people apart.
    normal = "".join(c for c in normal if unicodedata.category(c) != "Cf").strip()
    if not normal:
        return OWNER_SCOPE
    return "u-" + sha256_hex(normal.encode())[:16]


def is_scope_id(value: str) -> bool:
    """Whether `value` is a scope id `scope_id` can make (the owner's, or `u-` and 16 hex digits)."""
    return value == OWNER_SCOPE or (len(value) == 18 and value.startswith("u-")
                                    and all(c in "0123456789abcdef" for c in value[2:]))


def scope_root(scope: str) -> str:
    """The folder prefix of scope `scope`: "" for the owner, else `users/<scope>/`."""
    return "" if scope == OWNER_SCOPE else f"{USERS_DIR}/{scope}/"


def profile_path(scope: str) -> str:
    return scope_root(scope) + USER_FILE


def prefs_index_path(scope: str) -> str:
    return scope_root(scope) + PREFS_INDEX_FILE


def pref_path(scope: str, key: str) -> str:
    return f"{scope_root(scope)}{PREFS_DIR}/{key}.md"


def scope_file(path: str) -> tuple[str, str, str | None] | None:
    """`(kind, scope, key)` with kind `profile`, `pref` (key: the stem), `prefs-index` or `other`;
    None for paths outside the user scopes."""
    parts = path.split("/")
    if parts[0] == USERS_DIR and len(parts) >= 3:
        scope, rest = parts[1], parts[2:]
    elif parts[0] in (USER_FILE, PREFS_INDEX_FILE, PREFS_DIR):
        scope, rest = OWNER_SCOPE, parts
    else:
        return None
    if rest == [USER_FILE]:
        return "profile", scope, None
    if rest == [PREFS_INDEX_FILE]:
        return "prefs-index", scope, None
    if len(rest) == 2 and rest[0] == PREFS_DIR and rest[1].endswith(".md"):
        return "pref", scope, rest[1][:-3]
    return "other", scope, None


def project_problem(name: str) -> str | None:
    """Why `name` cannot be a project name (a slug that becomes a folder), or None."""
    import re

    if not name:
        return "the project name is empty"
    if len(name) > PROJECT_MAX:
        return f"the project name is {len(name)} characters; the limit is {PROJECT_MAX}"
    if not re.fullmatch(r"[a-z0-9]+(?:[-_][a-z0-9]+)*", name):
        return "a project name is lowercase words (a-z, 0-9) joined by '-' or '_', e.g. billing-api"
    from desk.text.names import RESERVED_STEMS  # the one name rule's Windows device names

    if name in RESERVED_STEMS:
        return f"{name!r} is a reserved device name on Windows; the folder would not check out there"
    return None


def project_memory_path(project: str, name: str) -> str:
    return f"{PROJECTS_DIR}/{project}/{MEMORY_DIR}/{name}.md"


def project_index_path(project: str) -> str:
    return f"{PROJECTS_DIR}/{project}/{INDEX_FILE}"


def project_file(path: str) -> tuple[str, str, str | None] | None:
    """What a path under projects/ is: `(kind, project, name)` with kind `memory` (name: the stem),
    `index` or `other`; None outside projects/."""
    parts = path.split("/")
    if parts[0] != PROJECTS_DIR or len(parts) < 3:
        return None
    project, rest = parts[1], parts[2:]
    if rest == [INDEX_FILE]:
        return "index", project, None
    if len(rest) == 2 and rest[0] == MEMORY_DIR and rest[1].endswith(".md"):
        return "memory", project, rest[1][:-3]
    return "other", project, None


def is_desk(path: Path) -> bool:
    return (path / CONFIG_PATH).is_file() and (path / ".git").exists()


def find_desk(start: Path | None = None, explicit: Path | None = None) -> DeskFolder:
    """The desk at `explicit`, else the desk enclosing `start` (the cwd), else `$DESK_HOME`;
    `DeskFolder.found_by` says which (`explicit`, `cwd`, `env`)."""
    if explicit is not None:
        return _desk_at(explicit, "explicit", "--desk")
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if is_desk(folder):
            return DeskFolder(folder, found_by="cwd")
    if os.environ.get("DESK_HOME"):
        return _desk_at(Path(os.environ["DESK_HOME"]), "env", "$DESK_HOME")
    raise NotADeskError(f"no desk in {here} or any folder above it",
                        hint="pass --desk PATH, set $DESK_HOME, or create one with `desk init`")


def _desk_at(given: Path, found_by: str, source: str) -> DeskFolder:
    root = given.expanduser().resolve()
    if is_desk(root):
        return DeskFolder(root, found_by=found_by)
    named = str(root) if found_by == "explicit" else f"{root} ({source})"
    enclosing = next((f for f in root.parents if is_desk(f)), None)
    if enclosing is not None:  # `desk init` there would be refused as nested
        raise NotADeskError(f"{named} is not a desk: it is inside the desk at {enclosing}",
                            hint=f"name the desk itself: `--desk {enclosing}`")
    raise NotADeskError(f"{named} is not a desk (no {CONFIG_PATH} in a git repository)",
                        hint=f"create one with `desk init {given}`")


@dataclass
class DeskFolder:
    """A desk: a git work tree with `.system/desk.json` at its root. Compared by `root` alone."""

    root: Path
    # trailers every commit made through this object carries (desk.api.Desk.with_trailers)
    trailers: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    found_by: str = field(default="explicit", compare=False)  # explicit | cwd | env (find_desk)
    # review mode: the proposal id while a write is proposed instead of committed
    proposing: str | None = field(default=None, compare=False, repr=False)

    @cached_property
    def git(self) -> Git:
        from desk.storage.git import Git  # here: `desk archive append` never runs git

        return Git(self.root)

    _config: tuple[tuple[int, int, int], DeskConfig] | None = field(default=None, init=False, compare=False,
                                                                   repr=False)

    @property
    def config(self) -> DeskConfig:
        """`.system/desk.json`, read again when its stat changed (a long-running `desk serve`)."""
        from desk.config import load_config

        try:
            info = os.stat(self.root / CONFIG_PATH)
            seen = (info.st_ino, info.st_size, info.st_mtime_ns)
        except OSError:
            return load_config(self.root)  # absent or unreadable: load_config says why
        if self._config is None or self._config[0] != seen:
            self._config = (seen, load_config(self.root))
        return self._config[1]

    @cached_property
    def desk_id(self) -> str:
        """The desk's id as committed (never an uncommitted edit), cached in `.git/desk-id`."""
        cache = self.git_dir / DESK_ID_CACHE
        with suppress(OSError, UnicodeDecodeError):
            cached = cache.read_text("ascii").strip()
            if DESK_ID_RE.fullmatch(cached):
                return cached
        committed = self.git.objects.blob_at("HEAD", CONFIG_PATH)
        data = committed if committed is not None else self.read(CONFIG_PATH)
        try:
            value = json.loads(data)["desk_id"]
        except (ValueError, KeyError, TypeError):
            value = None
        if not isinstance(value, str) or not DESK_ID_RE.fullmatch(value):
            return self.config.desk_id  # let the validating loader report what is wrong
        if committed is not None:
            from desk.storage.atomic import write_derived

            write_derived(cache, (value + "\n").encode("ascii"))  # not kept where the desk is read-only
        return value

    def require_known_schema(self) -> None:
        """DeskError (exit 1) when desk.json says a newer desk wrote this one: never write to it."""
        try:
            version = json.loads(self.read(CONFIG_PATH)).get("schema_version")
        except (OSError, ValueError, AttributeError):
            return  # a missing or broken desk.json is reported where it is read
        refusal = newer_schema(version)
        if refusal:
            raise DeskError(refusal, hint="upgrade desk (`pip install -U desk`); nothing was changed")

    @cached_property
    def git_dir(self) -> Path:
        dot_git = self.root / ".git"
        if dot_git.is_dir():  # what Git.git_dir finds first (self.git never sees GIT_DIR), without loading git
            return dot_git
        return self.git.git_dir()  # a linked work tree or a submodule: git says

    @property
    def lock_path(self) -> Path:
        return self.git_dir / LOCK_FILE

    @property
    def cache_dir(self) -> Path:
        """Where the derived caches live: `.git/desk-cache/`."""
        return self.git_dir / CACHE_FOLDER

    def path(self, relative: str) -> Path:
        return self.root / relative

    def read(self, relative: str) -> bytes:
        """A desk file's bytes, never through a symlink (SymlinkError)."""
        from desk.storage.reading import read_regular

        return read_regular(self.root / relative, self.root)

    def read_text(self, relative: str, errors: str = "strict") -> str:
        """`read` decoded as UTF-8."""
        return self.read(relative).decode("utf-8", errors)

    def read_if_present(self, relative: str) -> bytes | None:
        """`read`, or None when the file does not exist (a symlink is still refused)."""
        try:
            return self.read(relative)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def read_checked(self, relative: str, what: str) -> bytes | None:
        """`read_if_present`, a symlink or folder refused as InvalidFileError (rule `symlink`)."""
        from desk.errors import Finding, InvalidFileError
        from desk.storage.reading import SymlinkError

        try:
            return self.read_if_present(relative)
        except (SymlinkError, IsADirectoryError):
            raise InvalidFileError([Finding(relative, 1, "symlink", f"{what} must be a regular file, not a "
                                            "symlink or inside a linked folder")]) from None

    def worktree_blob(self, relative: str) -> str | None:
        """The git blob id of the work tree's file, None when absent, NOT_A_FILE for a link or folder."""
        full = self.root / relative
        try:
            mode = os.lstat(full).st_mode
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(mode):
            return NOT_A_FILE
        from desk.storage.git import blob_sha
        from desk.storage.reading import SymlinkError

        try:
            return blob_sha(self.read(relative))
        except SymlinkError:
            return NOT_A_FILE  # swapped for a link (or a folder on its way is one) meanwhile
