"""Hooks installed by desk 0.1.0 run `python -m desk.hooks`; this keeps them working.

New installs run `python -m desk.cli.hook`; `desk doctor` reports old hooks as outdated, and
`desk hooks install` (or `desk doctor --repair`) rewrites them.
"""

import sys

from desk.cli.hook import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
