"""git's merge-conflict markers left in a file: found by line, reported as a finding of their own
(not as the YAML error they cause). No YAML: every commit's per-file rules look for them."""

from __future__ import annotations

from desk.errors import Finding

CONFLICT_OPEN, CONFLICT_CLOSE = b"<" * 7, b">" * 7


def conflict_markers(data: bytes) -> tuple[int, int] | None:
    """The lines (first, last) of git's conflict markers in `data`, or None: a `<<<<<<<` line (then a
    space or the end) followed by a `>>>>>>>` line; a lone `=======` is a Markdown underline."""
    if CONFLICT_OPEN not in data:
        return None
    first = None
    for number, line in enumerate(data.split(b"\n"), start=1):
        for marker in (CONFLICT_OPEN, CONFLICT_CLOSE):
            if line.startswith(marker) and line[7:8] in (b"", b" ", b"\r"):
                if marker == CONFLICT_OPEN and first is None:
                    first = number
                elif marker == CONFLICT_CLOSE and first is not None:
                    return first, number
    return None


def conflict_finding(path: str, lines: tuple[int, int]) -> Finding:
    """The `merge-conflict` finding for the markers at `lines` in `path`."""
    first, last = lines
    resolve = ("`desk reindex` regenerates it, then `git add MEMORY.md`" if path == "MEMORY.md" else
               f"edit it: keep the text you want, delete the `<<<<<<<`, `=======` and `>>>>>>>` "
               f"lines, then `git add {path}`")
    return Finding(path, first, "merge-conflict",
                   f"unresolved merge conflict (markers on lines {first}-{last}): {resolve}; "
                   "`git diff --check` lists every marker left")
