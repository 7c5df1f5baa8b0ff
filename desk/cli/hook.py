"""`python -m desk.cli.hook HOOK [ARGS]`: the entry script every installed desk hook runs (no click)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from desk.errors import DeskError


def main(argv: list[str], *, checked: bool = False) -> int:
    """Run one hook; the exit code is git's verdict (0 lets the commit through). `checked`: the
    commit-msg hook's first look was taken already (`start`)."""
    from desk.formats.hook_files import HOOK_ENTRY, HOOK_TYPES

    if not argv or argv[0] not in HOOK_TYPES:
        print(f"usage: python -m {HOOK_ENTRY} {{{'|'.join(HOOK_TYPES)}}} [ARGS]", file=sys.stderr)
        return 2
    if argv[0] == "commit-msg" and argv[1:] and not checked and not _needs_full_check(argv[1]):
        return 0
    from desk.guard.hooks import hook_root, run_hook

    if argv[0] in ("post-merge", "post-rewrite"):
        return after_merge(argv[0], argv[1:])
    try:
        run = run_hook(argv[0], hook_root(), argv[1:])
    except DeskError as exc:
        return _report(argv[0], exc, exc.exit_code)
    for finding in run.findings:
        label = "" if finding.severity == "error" else " (warning)"
        print(f"{finding}{label}", file=sys.stderr)
    for note in run.notes:
        print(note, file=sys.stderr)
    return run.code


def _needs_full_check(message_file: str) -> bool:
    """The commit-msg hook's first look (desk.gate.message), before the rules are imported."""
    from desk.gate.message import needs_full_check

    try:
        with open(message_file, encoding="utf-8", errors="replace") as file:
            return needs_full_check(file.read())
    except OSError:
        return True  # the full check says what is wrong


def after_merge(hook: str, args: list[str]) -> int:
    """post-merge / post-rewrite: settle the merge in one desk commit and report what arrived
    (git ignores these hooks' exit codes)."""
    from desk.guard.hooks import hook_root
    from desk.sync.settle import hook_after_merge

    if os.environ.get("DESK_SYNC"):
        return 0  # desk sync settles its own merges (and holds the desk lock meanwhile)
    if hook == "post-rewrite" and args[:1] != ["rebase"]:
        return 0  # an amend rewrites one local commit: its own hooks already ran
    try:
        lines = hook_after_merge(hook_root())
    except DeskError as exc:
        return _report(hook, exc, 0)
    for line in lines:
        print(line, file=sys.stderr)
    return 0


def _report(hook: str, exc: DeskError, code: int) -> int:
    print(f"desk: {hook}: {exc.message}", file=sys.stderr)
    if exc.hint:
        print(f"hint: {exc.hint}", file=sys.stderr)
    return code


def exit_now(code: int) -> NoReturn:
    """Leave at once with `code`, output flushed, skipping the interpreter's teardown (no atexit
    work is pending)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def start(argv: list[str]) -> NoReturn:
    """What an installed hook runs (or its fast start, desk.setup.hooks.fast_start): one hook, then out."""
    if argv[:1] == ["commit-msg"] and argv[1:] and not _needs_full_check(argv[1]):
        exit_now(0)  # before the gate's modules load: most messages need none of it
    from desk.guard.hooks import leave_open_at_exit

    leave_open_at_exit()  # exit_now ends the process: no checkpoint of the verdict cache on close
    exit_now(main(argv, checked=True))


if __name__ == "__main__":
    start(sys.argv[1:])
