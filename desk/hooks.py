"""The git hooks: `desk hooks install | uninstall`, and what the hooks run.

Installed like pre-commit installs its own (`pre_commit/commands/install_uninstall.py`): each hook
is a small shell script (hooks/desk-hook.sh) recognised by a marker line; a foreign hook already
there is kept as `<hook>.legacy` and still runs first; uninstall puts it back; `core.hooksPath`
is refused with the manual alternative, since desk would otherwise write into a folder shared by
other repositories. The script runs the Python that installed it (`python -m desk.hooks HOOK`),
falling back to `desk` on PATH.

The pre-commit hook validates the staged blobs (desk.validate) and, as a fixer, rewrites a stale
MEMORY.md in the work tree and fails so the person can `git add` it. The commit-msg hook checks
the message rules. Neither starts Python for desk's own commits (`DESK_VALIDATED=1`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from desk.errors import DeskError
from desk.git import Git

# pre-merge-commit: a merge without conflicts skips pre-commit, and the union merge of MEMORY.md
# (.gitattributes) can leave its lines out of order; the same checks and fixer run there.
HOOK_TYPES = ("pre-commit", "commit-msg", "pre-merge-commit")
MARKER = "# desk-managed-hook"
LEGACY = ".legacy"
STALE_INDEX_MESSAGE = ("MEMORY.md was regenerated; `git add MEMORY.md` and commit again "
                       "(if you commit named paths, name MEMORY.md too)")


@dataclass
class HooksResult:
    """What install/uninstall did to each hook: `{hook: action}`."""

    folder: Path
    actions: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"folder": str(self.folder), "hooks": self.actions}


def hook_script(hook: str, python: str | None = None) -> str:
    template = resources.files("desk._hooks").joinpath("desk-hook.sh").read_text("utf-8")
    python = python or sys.executable
    return template.replace("@HOOK@", hook).replace("'@PYTHON@'", shlex.quote(python))


def is_ours(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return MARKER.encode() in file.read(400)
    except OSError:
        return False


def only_desk_hooks(git: Git, git_dir: Path) -> bool:
    """True when the commit hooks git would run are desk's own with nothing chained to them.

    desk's own commits ran the same checks in process, so they may then pass --no-verify and save
    the hook shells' start-up; with a foreign hook (chained or under core.hooksPath) they run it.
    """
    if git.config_values().get("core.hookspath"):
        return False
    folder = git_dir / "hooks"
    for hook in ("pre-commit", "commit-msg"):
        path = folder / hook
        if (folder / (hook + LEGACY)).exists() or (path.exists() and not is_ours(path)):
            return False
    return True


def hooks_folder(git: Git) -> Path:
    """The repository's hooks folder; refused (with the manual way) when core.hooksPath is set."""
    configured = git.run("config", "--get", "core.hooksPath", check=False, read_only=True).decode().strip()
    if configured:
        lines = "\n".join(f"    {shlex.quote(sys.executable)} -m desk.hooks {hook} \"$@\" || exit $?"
                          f"    # in {hook}" for hook in HOOK_TYPES)
        raise DeskError(
            f"core.hooksPath is set ({configured}); desk will not write into a hooks folder that "
            "other repositories may share",
            hint="unset it (`git config --unset core.hooksPath`) and run `desk hooks install` again, "
                 f"or add the checks to the hooks in {configured} yourself, one line per hook:\n"
                 f"{lines}")
    path = Path(git.text("rev-parse", "--git-path", "hooks").strip())
    return path if path.is_absolute() else git.root / path


def install(root: Path, python: str | None = None) -> HooksResult:
    """Install desk's pre-commit and commit-msg hooks in the repository at `root`."""
    from desk.atomic import atomic_write

    folder = hooks_folder(Git(root))
    folder.mkdir(parents=True, exist_ok=True)
    result = HooksResult(folder)
    for hook in HOOK_TYPES:
        path, legacy = folder / hook, folder / (hook + LEGACY)
        action = "installed"
        if path.exists() or path.is_symlink():
            if is_ours(path):
                action = "updated"
            elif legacy.exists() or legacy.is_symlink():
                raise DeskError(f"{path} and {legacy} both exist and neither is desk's",
                                hint=f"merge them into one, then run `desk hooks install` again")
            else:
                os.replace(path, legacy)
                action = "installed (kept the existing hook as " + legacy.name + ", run first)"
        atomic_write(path, hook_script(hook, python).encode())
        os.chmod(path, 0o755)
        result.actions[hook] = action
    return result


def uninstall(root: Path) -> HooksResult:
    """Remove desk's hooks and put back any hook they had replaced."""
    folder = hooks_folder(Git(root))
    result = HooksResult(folder)
    for hook in HOOK_TYPES:
        path, legacy = folder / hook, folder / (hook + LEGACY)
        if not path.exists() or not is_ours(path):
            result.actions[hook] = "not desk's; left alone" if path.exists() else "not installed"
            continue
        path.unlink()
        if legacy.exists() or legacy.is_symlink():
            os.replace(legacy, path)
            result.actions[hook] = "removed (restored the previous hook)"
        else:
            result.actions[hook] = "removed"
    return result


def installed(root: Path) -> dict[str, bool]:
    """Which of desk's hooks are in place (for `desk doctor`); empty when core.hooksPath is set."""
    try:
        folder = hooks_folder(Git(root))
    except DeskError:
        return {}
    return {hook: is_ours(folder / hook) for hook in HOOK_TYPES}


# -- what the hooks run -------------------------------------------------------------------


def run_pre_commit(root: Path) -> int:
    """Validate the staged change; fix a stale MEMORY.md in the work tree. Returns the exit code."""
    from desk.desk import Desk, is_desk
    from desk.validate import fix_index, staged_git, validate_staged

    if not is_desk(root):
        return 0
    desk = Desk(root)
    report, regenerated = validate_staged(desk, staged_git(root))
    _print_findings(report.findings)
    stale = any(f.rule == "index-stale" for f in report.findings)
    if stale and regenerated is not None:
        fix_index(desk, regenerated)
        print(f"desk: {STALE_INDEX_MESSAGE}", file=sys.stderr)
    if not report.ok:
        print("desk: pre-commit: commit refused; fix the findings above and commit again "
              "(`desk validate --staged` shows them again)", file=sys.stderr)
        return 3
    return 0


def run_commit_msg(root: Path, message_file: str) -> int:
    """The message rules (SOUL.md by the assistant, digest and NOW.md) against the staged paths."""
    from desk.validate import check_message, staged_git

    message = Path(message_file).read_text("utf-8", "replace")
    out = staged_git(root).run("diff", "--cached", "--name-only", "-z", read_only=True)
    changed = {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}
    findings = check_message(message, changed)
    _print_findings(findings)
    if findings:
        print("desk: commit-msg: commit refused; see above", file=sys.stderr)
        return 3
    return 0


def _print_findings(findings: list) -> None:  # type: ignore[type-arg]
    for finding in findings:
        label = "" if finding.severity == "error" else " (warning)"
        print(f"{finding}{label}", file=sys.stderr)


def main(argv: list[str]) -> int:
    """`python -m desk.hooks HOOK [ARGS]`: the entry the installed hook scripts call."""
    if not argv or argv[0] not in HOOK_TYPES:
        print(f"usage: python -m desk.hooks {{{'|'.join(HOOK_TYPES)}}} [ARGS]", file=sys.stderr)
        return 2
    root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                               text=True).stdout.strip() or ".").resolve()
    try:
        if argv[0] in ("pre-commit", "pre-merge-commit"):
            return run_pre_commit(root)
        if len(argv) < 2:
            print("desk: commit-msg hook: missing the message file argument", file=sys.stderr)
            return 2
        return run_commit_msg(root, argv[1])
    except DeskError as exc:
        print(f"desk: {argv[0]}: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
