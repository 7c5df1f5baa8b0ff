"""One desk on many machines: `desk clone`, `desk sync`, the merge drivers and what runs after a merge.

- `drivers`: the merge drivers git runs per file (`python -m desk.cli.merge KIND ...`): pure
  three-way merges that never leave conflict markers, and a pending list in `.git/` of what the
  merge could not settle on its own (a memory changed on both sides, a derived view to render).
- `cases`: turning a both-sides change into a conflict case in `.system/conflicts.json`.
- `settle`: after any merge (desk sync, a person's `git pull`, a rebase): resolve what is left,
  open the cases, regenerate derived files, and check what came in.
- `remote`: fetch, push, ancestry through GitPython (imported lazily).
- `run`: `desk sync` and `desk clone`.
"""
