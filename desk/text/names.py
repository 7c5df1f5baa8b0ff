"""The one rule for a name that becomes a file name in a desk: a lowercase slug Windows accepts too
(no device stem, no trailing `.`), matched against the whole string."""

from __future__ import annotations

import re

SLUG_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
# Device names Windows refuses as file stems, whatever the extension (`con.md`, `con.txt`).
RESERVED_STEMS = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
                            *(f"lpt{i}" for i in range(10))})


def path_name_problem(name: str, *, limit: int) -> str | None:
    """Why `name` cannot be a desk file name (without its `.md`), or None when it can."""
    if not name:
        return "name is empty"
    if len(name) > limit:
        return f"name is {len(name)} characters; the limit is {limit}"
    if not SLUG_RE.fullmatch(name):
        return "name must be a lowercase slug: a-z, 0-9, '.', '_', '-', starting with a letter or digit"
    if name.endswith("."):
        return "name must not end with '.'"
    if name.endswith(".md"):  # `x.md` would be the file `x.md.md`: the suffix is desk's to add
        return "name must not end with '.md' (desk adds the file's .md itself)"
    if name.split(".")[0] in RESERVED_STEMS:
        return f"{name!r} is a reserved device name on Windows"
    return None
