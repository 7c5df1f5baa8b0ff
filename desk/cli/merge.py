"""`python -m desk.cli.merge DRIVER BASE OURS THEIRS PATH`: the merge driver git runs (`%O %A %B %P`).

A thin edge like the hooks' entry script: the merge itself is `desk.sync.drivers.run_driver`,
which writes the result into OURS and exits 0, or exits 1 (git keeps the conflict) when it finds
no safe merge (markers only in MISTAKES.md, git's own); it prints `stopping_notice`'s line.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from desk.sync.drivers import DRIVERS, run_driver, stopping_notice

    if len(argv) != 5 or argv[0] not in DRIVERS:
        print(f"usage: python -m desk.cli.merge {{{'|'.join(DRIVERS)}}} BASE OURS THEIRS PATH", file=sys.stderr)
        return 2
    from desk.storage.git import Git

    git = Git(Path.cwd(), hook_env=True)
    with contextlib.suppress(Exception):  # a notice that cannot be made must not stop the merge
        if notice := stopping_notice(git):
            print(f"desk: {notice}", file=sys.stderr)
    try:
        return run_driver(argv[0], argv[1], argv[2], argv[3], argv[4], git.git_dir())
    except Exception as exc:  # noqa: BLE001 - a driver must never leave a half-written file: git keeps the conflict
        print(f"desk: merge driver {argv[0]} for {argv[4]}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
