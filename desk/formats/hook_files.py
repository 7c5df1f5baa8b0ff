"""desk's hook and attribute files: what a hook and a merge driver start, the hook's marker, the
`.gitattributes` lines desk keeps, and the setup a clone lacks (read as files, no git)."""

from __future__ import annotations

from pathlib import Path


# git starts hooks in the work tree, which a remote controls: `-P` keeps it off sys.path, so a
# committed `desk/` or `yaml.py` is never imported in place of the real one.
SAFE_PATH = "-P"
HOOK_ENTRY = "desk.cli.hook"  # `python -P -m desk.cli.hook HOOK`: what an installed hook runs
# pre-merge-commit: a clean merge skips pre-commit; post-merge/post-rewrite settle what a pull left.
HOOK_TYPES = ("pre-commit", "commit-msg", "pre-merge-commit", "post-merge", "post-rewrite")
MERGE_ENTRY = "desk.cli.merge"  # `python -P -m desk.cli.merge DRIVER %O %A %B %P`: what a merge driver runs
# .gitattributes patterns -> desk's merge driver (`merge=desk-<driver>`; desk.sync.drivers merges)
MERGE_ATTRIBUTES = (
    ("MEMORY.md", "index"),
    ("memory/*.md", "memory"),
    ("NOW.md", "now"),
    ("MISTAKES.md", "mistakes"),
    (".system/conflicts.json", "conflicts"),
    (".system/archive/*.jsonl", "append"),
    (".system/adjudications*.jsonl", "append"),
    ("conversations/**", "derived"),
    ("journal/*.md", "derived"),
    ("projects/*/MEMORY.md", "index"),
    ("projects/*/memory/*.md", "memory"),
    ("prefs/*.md", "pref"),
    ("users/*/prefs/*.md", "pref"),
    ("PREFERENCES.md", "generated"),
    ("users/*/PREFERENCES.md", "generated"),
)
MERGE_DRIVERS = tuple(dict.fromkeys(driver for _, driver in MERGE_ATTRIBUTES))
# archive lines in `git diff` as text (after an older desk's `-diff`, so it wins)
ARCHIVE_DIFF = (".system/archive/*.jsonl", "diff=desk-archive")
# desk compares its files byte for byte: `-text` keeps core.autocrlf from turning their line ends to CRLF
TEXT_PINS = ("AGENTS.md", "SOUL.md", "USER.md", "NOW.md", "MEMORY.md", "MISTAKES.md", "PREFERENCES.md",
             ".gitattributes", ".gitignore", "memory/**", "journal/**", "conversations/**", ".system/**",
             "users/**", "projects/**", "prefs/**")


def driver_for(path: str) -> str | None:
    """The driver desk's `.gitattributes` lines give `path`."""
    import fnmatch

    for pattern, driver in MERGE_ATTRIBUTES:
        if pattern.endswith("/**"):
            if path.startswith(pattern[:-2]):
                return driver
        elif "/" in path.rstrip("/") and "/" not in pattern:
            continue
        elif fnmatch.fnmatchcase(path, pattern) and path.count("/") == pattern.count("/"):
            return driver
    return None


def desk_attribute_lines() -> list[tuple[str, str]]:
    """Every `(pattern, attribute)` line desk's `.gitattributes` holds, the `-text` pins last (they win)."""
    return ([(p, f"merge=desk-{d}") for p, d in MERGE_ATTRIBUTES] + [ARCHIVE_DIFF]
            + [(p, "-text") for p in TEXT_PINS])


def missing_attributes(text: str) -> list[tuple[str, str]]:
    """The `desk_attribute_lines` a `.gitattributes` text lacks (a desk made before they existed)."""
    present = {tuple(line.split()[:2]) for line in text.splitlines() if len(line.split()) >= 2}
    return [(p, a) for p, a in desk_attribute_lines() if (p, a) not in present]


def attributes_with_missing(text: str) -> bytes | None:
    """`.gitattributes` with the desk lines it lacks appended, None when it lacks none."""
    missing = missing_attributes(text)
    if not missing:
        return None
    lines = "".join(f"{pattern} {attribute}\n" for pattern, attribute in missing)
    if any(a == "-text" for _, a in missing) and "-text" not in text:
        lines = lines.replace(f"{TEXT_PINS[0]} -text", PIN_COMMENT + f"{TEXT_PINS[0]} -text", 1)
    return (text + ("" if not text or text.endswith("\n") else "\n") + lines).encode()


PIN_COMMENT = ("# desk's files byte for byte, whatever core.autocrlf says: no end-of-line conversion "
               "(docs/sync.md)\n")

MARKER = "# desk-managed-hook"
LEGACY = ".legacy"


def is_ours(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return MARKER.encode() in file.read(400)
    except OSError:
        return False


def read_text_or_empty(path: Path) -> str:
    try:
        return path.read_text("utf-8", "replace")
    except OSError:
        return ""


def missing_setup(root: Path, git_dir: Path) -> list[str]:
    """What this clone lacks of desk's hooks and merge drivers; file reads only (every command asks)."""
    missing = []
    config = read_text_or_empty(git_dir / "config")
    if "hookspath" not in config.lower():
        missing += [h for h in HOOK_TYPES if not is_ours(git_dir / "hooks" / h)]
    missing += [f"merge driver desk-{d}" for d in MERGE_DRIVERS if f'[merge "desk-{d}"]' not in config]
    missing += [f"merge driver {d} (it starts Python with the work tree on its path)" for d in unsafe_drivers(config)]
    return missing


def recorded_python(hook_text: str) -> str | None:
    """The Python an installed hook names (its `DESK_PYTHON=` line), None when it names none."""
    import shlex

    line = next((line for line in hook_text.splitlines() if line.startswith("DESK_PYTHON=")), "")
    words = shlex.split(line[len("DESK_PYTHON="):])
    return words[0] if words else None


def driver_python(command: str) -> str | None:
    """The Python a merge driver's command names: `PY=PYTHON; ...`, or an older desk's first word."""
    import shlex

    try:
        first = shlex.split(command)[0] if command.strip() else None
    except ValueError:
        return None
    return first.removeprefix("PY=").removesuffix(";") if first else None


def unsafe_drivers(config: str) -> list[str]:
    """desk's merge drivers in a `.git/config` text that start Python without `-P` (docs/guard.md)."""
    unsafe, section = [], ""
    for line in config.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
        elif (section.startswith('[merge "desk-') and stripped.replace(" ", "").startswith("driver=")
              and f"-m {MERGE_ENTRY} " in stripped and f"{SAFE_PATH} -m {MERGE_ENTRY} " not in stripped):
            unsafe.append(section[len('[merge "'):].rstrip('"]'))
    return unsafe
