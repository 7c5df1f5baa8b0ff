#!/bin/sh
# desk-managed-hook: written by `desk hooks install`; `desk hooks uninstall` removes it and puts
# back the hook that was here before (kept beside it as @HOOK@.legacy, and still run first).
HOOK='@HOOK@'
DESK_PYTHON='@PYTHON@'
# How that Python starts here: without `site` (-S), which would search the same folders again on
# every commit (~2 ms), on the module path `desk hooks install` found desk and its dependencies on
# (desk.guard.hooks.fast_start). Empty when that cannot be vouched for (an editable install, another
# Python): the plain start below. If desk is no longer there, the start falls back to the plain one.
DESK_START='@START@'
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

# The commit-msg hook always starts Python: every message is scanned for secrets (a token in a
# subject or a trailer is pushed with the commit), which no shell test can do soundly.

# The Python that installed the hook, else `desk` on PATH.
if [ -x "$DESK_PYTHON" ]; then
    [ -n "$DESK_START" ] && exec "$DESK_PYTHON" -S -c "$DESK_START" "$HOOK" "$@"
    # -P: git runs hooks in the work tree, and a remote controls what is there (a committed desk/
    # or click/ would be imported first); the safe path leaves it off sys.path.
    exec "$DESK_PYTHON" -P -m desk.cli.hook "$HOOK" "$@"
elif command -v desk >/dev/null 2>&1; then
    exec desk hooks run "$HOOK" "$@"
else
    echo "desk: $HOOK hook: desk is not installed ($DESK_PYTHON is gone and no desk on PATH)." >&2
    echo "hint: install desk again and run \`desk hooks install\`, or remove $0" >&2
    exit 1
fi
