"""DESK_PLAIN_GIT=1: desk commits through git's own commands only (issue 28.2, docs/design.md).

desk's fast commit path writes the blobs, the changed trees and the commit object as loose objects
in process (desk.storage.objects) and patches the person's index in process
(desk.storage.index_file). With this switch on, every step is git's own: `git hash-object -w` for
each blob, the tree built in desk's private index (`git read-tree` of the parent when that index
does not already hold it, `git update-index --index-info`, `git write-tree`), `git commit-tree`
(`-S` when commit.gpgSign asks), `git update-ref HEAD NEW OLD`, and `git update-index` of desk's
paths in a copy of the person's index published under git's index lock. The gate, the commits
(trees, messages, identity), the crash markers and the recovery are the same both ways:
`.ci/run` runs the core tests with the switch on as well as off.

Read once, when desk.storage.git is first imported: a process commits one way throughout.
"""

from __future__ import annotations

import os

PLAIN_GIT_ENV = "DESK_PLAIN_GIT"
PLAIN_GIT = os.environ.get(PLAIN_GIT_ENV) == "1"
