"""The `desk` command line (`desk.cli.main`) and the git hooks' entry script (`desk.cli.hook`).

Kept empty so a hook's `python -m desk.cli.hook` does not import click.
"""
