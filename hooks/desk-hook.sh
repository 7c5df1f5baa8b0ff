#!/bin/sh
# desk-managed-hook: written by `desk hooks install`; `desk hooks uninstall` removes it and puts
# back the hook that was here before (kept beside it as @HOOK@.legacy, and still run first).
HOOK='@HOOK@'
DESK_PYTHON='@PYTHON@'
# The hook's folder without `dirname` (a process on every commit; git names hooks by a path).
case "$0" in */*) HERE=${0%/*} ;; *) HERE=. ;; esac

if [ -x "$HERE/$HOOK.legacy" ]; then
    "$HERE/$HOOK.legacy" "$@" || exit $?
fi

# desk sync settles its own merges; the post-merge and post-rewrite hooks stand aside for it.
case "$HOOK" in post-*) [ -n "${DESK_SYNC:-}" ] && exit 0 ;; esac

# desk's own commits ran the same rules in process just before `git commit`; starting Python
# again would only double the cost.
[ "${DESK_VALIDATED:-}" = 1 ] && exit 0

# The message rules only concern SOUL.md and NOW.md: skip Python when neither is staged.
if [ "$HOOK" = commit-msg ] && git diff --cached --quiet -- SOUL.md NOW.md 2>/dev/null; then
    exit 0
fi

# The Python that installed the hook, else `desk` on PATH.
if [ -x "$DESK_PYTHON" ]; then
    exec "$DESK_PYTHON" -m desk.cli.hook "$HOOK" "$@"
elif command -v desk >/dev/null 2>&1; then
    exec desk hooks run "$HOOK" "$@"
else
    echo "desk: $HOOK hook: desk is not installed ($DESK_PYTHON is gone and no desk on PATH)." >&2
    echo "hint: install desk again and run \`desk hooks install\`, or remove $0" >&2
    exit 1
fi
