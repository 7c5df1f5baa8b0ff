"""The git config values desk reads (identity, core.hooksPath, ...), kept between processes.

Every desk command that commits needs a few config values, and `git config` costs a process (a few
ms, one of the three or four a `desk remember` starts). Its answer depends only on the files git
reads config from and on the environment, so desk keeps it in `.git/desk-config.json` under a key
made of the stat (size, mtime, ctime, inode) of each of those files, the missing ones included (a
file created later changes the key), the git executable's, and the environment variables that
choose the files. A change to any of them is a new key and git is asked again.

Nothing is kept when it could not be keyed this way: a file that includes others (`[include]`,
`[includeIf]`: the included files are not in the key), config injected through the environment
(`git -c`, GIT_CONFIG_COUNT), or a file modified in the last two seconds (a second change within
the same clock tick could keep its stat, as git's "racy" index entries can). Derived: a missing or
unreadable cache only costs the `git config` process.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from desk.storage.atomic import write_derived

CACHE_FILE = "desk-config.json"
RACY_NS = 2_000_000_000
# Variables that choose which files git reads config from (part of the key).
_CHOOSING = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL", "PATH")
# Variables that inject config themselves: nothing is kept while one is set.
_INJECTING = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG")


def config_files(git_dir: Path, env: Mapping[str, str], system: str | None) -> list[str]:
    """The files git reads config from for this repository: system (`system`, unless
    GIT_CONFIG_NOSYSTEM), global, the repository's, its work tree's."""
    files = []
    if system and not env.get("GIT_CONFIG_NOSYSTEM"):
        files.append(system)
    if env.get("GIT_CONFIG_GLOBAL"):
        files.append(env["GIT_CONFIG_GLOBAL"])
    else:
        home = env.get("HOME", "")
        xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
        files += [p for p in (os.path.join(xdg, "git", "config") if xdg else "",
                              os.path.join(home, ".gitconfig") if home else "") if p]
    files += [str(git_dir / "config"), str(git_dir / "config.worktree")]
    return files


def _stat(path: str) -> list[int] | None:
    """`[size, mtime_ns, ctime_ns, inode]` of `path`, None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _key(git_dir: Path, env: Mapping[str, str], query: str, system: str | None) -> list[object] | None:
    """What the cached answer holds under; None when it cannot be kept (config injected)."""
    if any(env.get(name) for name in _INJECTING):
        return None
    from desk.storage.git import which_git  # loaded: config is read for git

    program = which_git(env.get("PATH", ""))
    files = config_files(git_dir, env, system)
    return [query, [env.get(name) for name in _CHOOSING], program, program and _stat(program),
            system, [(path, _stat(path)) for path in files]]


def cached_config(git_dir: Path, env: Mapping[str, str], query: str) -> dict[str, str] | None:
    """The values kept for `query` (a `git config --get-regexp` pattern) when nothing they depend
    on changed since; else None."""
    try:
        kept = json.loads((git_dir / CACHE_FILE).read_bytes())
        system = kept["system"]
        key = _key(git_dir, env, query, system)
        if key is not None and kept["key"] == json.loads(json.dumps(key)):
            return {str(k): str(v) for k, v in kept["values"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def keep_config(git_dir: Path, env: Mapping[str, str], query: str, system_file: Callable[[], str | None],
                values: Mapping[str, str], read_at: int) -> None:
    """Keep `values` (read by `git config` at `read_at`, time.time_ns()) for `cached_config`,
    unless they cannot be keyed safely (see the module's docstring). `system_file()` names the
    system-wide file git reads (asked only when the others can be kept)."""
    if any(env.get(name) for name in _INJECTING) or any(
            read_at - st[1] < RACY_NS for st in map(_stat, config_files(git_dir, env, None)) if st):
        return
    system = system_file()
    key = _key(git_dir, env, query, system)
    if key is None:
        return
    for path in config_files(git_dir, env, system):
        before = _stat(path)
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue  # a file that is not there is part of the key as such
        if before is None or b"include" in data.lower() or read_at - before[1] < RACY_NS or \
                time.time_ns() - before[1] < RACY_NS:
            return
        if _stat(path) != before:
            return  # changed while we looked
    target = git_dir / CACHE_FILE
    write_derived(target, json.dumps({"key": key, "system": system, "values": dict(values)}).encode())
