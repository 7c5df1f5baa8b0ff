"""Which hooks git would run here, asked of git's config and the hooks folder: whether they are
desk's alone, where the folder is, which of desk's are installed (`desk doctor`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from desk.errors import DeskError
from desk.formats.hook_files import HOOK_ENTRY, HOOK_TYPES, LEGACY, SAFE_PATH, is_ours, recorded_python

if TYPE_CHECKING:
    from desk.storage.git import Git


def only_desk_hooks(git: Git, git_dir: Path) -> bool:
    """True when the commit hooks git would run are desk's own with nothing chained: desk's commits,
    having run the same checks in process, may then pass --no-verify."""
    if git.config.values().get("core.hookspath"):
        return False
    folder = git_dir / "hooks"
    for hook in ("pre-commit", "commit-msg"):
        path = folder / hook
        if (folder / (hook + LEGACY)).exists() or (path.exists() and not is_ours(path)):
            return False
    return True


def hooks_folder(git: Git) -> Path:
    """The repository's hooks folder; refused (with the manual way) when core.hooksPath is set."""
    configured = git.config.values().get("core.hookspath", "").strip()
    if configured:
        import shlex  # only for the refusal's message: a hook run never loads it

        lines = "\n".join(f"    {shlex.quote(sys.executable)} {SAFE_PATH} -m {HOOK_ENTRY} {hook} \"$@\" || exit $?"
                          f"    # in {hook}" for hook in HOOK_TYPES)
        raise DeskError(
            f"core.hooksPath is set ({configured}); desk will not write into a hooks folder that "
            "other repositories may share",
            hint="unset it (`git config --unset core.hooksPath`) and run `desk hooks install` again, "
                 f"or add the checks to the hooks in {configured} yourself, one line per hook:\n"
                 f"{lines}")
    git_dir = git.git_dir()
    if git_dir == git.root / ".git" and not (git_dir / "commondir").exists():
        return git_dir / "hooks"  # what `git rev-parse --git-path hooks` says here, without asking
    return git.git_path("hooks")


def installed(root: Path, git: Git | None = None) -> dict[str, str]:
    """Each of desk's hooks: `ok`, `missing`, `outdated` (running an entry or a Python start that is no
    longer desk's) or `moved` (the Python it names is gone). Empty when core.hooksPath is set."""
    try:
        if git is None:
            from desk.storage.git import Git

            git = Git(root)
        folder = hooks_folder(git)
    except DeskError:
        return {}
    found = {}
    for hook in HOOK_TYPES:
        path = folder / hook
        if not is_ours(path):
            found[hook] = "missing"
        else:
            text = path.read_text("utf-8", "replace")
            python = recorded_python(text)
            found[hook] = ("outdated" if f"{SAFE_PATH} -m {HOOK_ENTRY} " not in text
                           else "moved" if python and not os.access(python, os.X_OK) else "ok")
    return found
