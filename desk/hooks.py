"""Hooks installed by desk 0.1.0 run `python -m desk.hooks`; `desk hooks install` rewrites them."""

import sys

from desk.cli.hook import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
