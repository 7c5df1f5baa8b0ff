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

# The commit-msg hook scans every message for secrets (a token in a subject or a trailer is pushed
# with the commit) and checks the message rules, which need a Desk-Actor or Desk-Op trailer. The
# shell passes a message without starting Python only when neither could find anything in it:
# fewer than 40 lines of printable ASCII, none holding the word desk, a word the generic rule keys on, a
# known prefix (desk.text.secrets._LITERALS), `%` or `://`, a run of 16 characters keys are made
# of (the shortest key is 20; base64 runs are decoded from 16), or such characters alone on a line
# (the scanner joins that line to the one before). tests/guard/test_hook_start.py holds this to
# the scanner. Quoted characters in a bracket are literal, in every shell and every locale.
if [ "$HOOK" = commit-msg ] && [ -r "${1:-}" ]; then
    T='ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_.-'
    C='"'"'"'`,;)]}>' B=' 	'
    P="$T$B$C"'!#$%&(*:<?@[\^{|~'
    PLAIN=1 LINES=0
    while IFS= read -r LINE || [ -n "$LINE" ]; do
        LINES=$((LINES + 1))
        case $LINE in
            *[!"$P"]*|*[Dd][Ee][Ss][Kk]*|*[Kk][Ee][Yy]*|*[Ss][Ee][Cc][Rr][Ee][Tt]*|*[Tt][Oo][Kk][Ee][Nn]*|\
            *[Pp][Aa][Ss][Ss][Ww]*|*[Pp][Ww][Dd]*|*[Cc][Rr][Ee][Dd][Ee][Nn][Tt][Ii][Aa][Ll]*|*[Aa][Ss][Ii][Cc]*|\
            *%*|*://*|*AKIA*|*ASIA*|*ABIA*|*ACCA*|*A3T*|*gh[pousr]_*|*github_pat_*|*gl[dpr]*-*|*xox*|*xapp-*|\
            *hooks.slack.com*|*sk-*|*AIza*|*_live_*|*hf_*|*SG.*|*SK*|*eyJ*|*PuTTY-User-Key-File-*|\
            *["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]["$T"]*)
                PLAIN= ;;
            *[!"$T$B$C"]*|*["$T"]["$B$C"]*["$T"]*) ;;  # not key material alone
            *["$T"]*) PLAIN= ;;
        esac
        [ -n "$PLAIN" ] && [ "$LINES" -lt 40 ] || { PLAIN=; break; }
    done < "$1"
    [ -n "$PLAIN" ] && exit 0
fi

# The Python that installed the hook, else `desk` on PATH, else a python3 that has desk (the
# virtualenv moved or was deleted: `desk doctor --repair` rewrites the hooks for the new one).
if [ -x "$DESK_PYTHON" ]; then
    [ -n "$DESK_START" ] && exec "$DESK_PYTHON" -S -c "$DESK_START" "$HOOK" "$@"
    # -P: git runs hooks in the work tree, and a remote controls what is there (a committed desk/
    # or click/ would be imported first); the safe path leaves it off sys.path.
    exec "$DESK_PYTHON" -P -m desk.cli.hook "$HOOK" "$@"
elif command -v desk >/dev/null 2>&1; then
    exec desk hooks run "$HOOK" "$@"
elif command -v python3 >/dev/null 2>&1 && python3 -P -c 'import desk' 2>/dev/null; then
    exec python3 -P -m desk.cli.hook "$HOOK" "$@"
else
    echo "desk: $HOOK hook: desk is not installed ($DESK_PYTHON is gone and no desk on PATH)." >&2
    echo "hint: install desk again and run \`desk doctor --repair\` (it rewrites the hooks), or remove $0" >&2
    exit 1
fi
