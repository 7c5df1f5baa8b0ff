"""How an installed hook starts (issue 17.4): the commit-msg hook without a git process for a
message that cannot break its rules, and the fast start (`python -S` on the module path baked in at
install) with its fallbacks. Real `git commit`s through the installed hooks."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import desk as desk_package
from desk.setup.hooks import fast_start, hook_script
from desk.gate.rules import check_message
from desk.layout import DeskFolder
from tests.guard_helpers import commit, git_env, memory_text, reindex_text, sh, write

INVALID = "---\nname: bad\n---\nno type\n"


def traced_commit(root: Path, message: str, trace: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`git commit -m MESSAGE` with git's trace2 events on: the command lines of the git processes
    it and its hooks started."""
    trace.unlink(missing_ok=True)
    proc = commit(root, message, env=git_env(GIT_TRACE2_EVENT=str(trace)))
    starts = [" ".join(e["argv"][1:]) for e in map(json.loads, trace.read_text().splitlines())
              if e["event"] == "start"]
    return proc, starts


def test_a_message_without_desk_trailers_starts_no_git_process_in_the_commit_msg_hook(
        desk: DeskFolder, tmp_path: Path) -> None:
    """SOUL.md staged, a message naming no Desk-Actor or Desk-Op trailer and holding no secret:
    the hook's Python scans the message (every message: issue 27.2) but asks git nothing; naming
    one, the staged paths are read and the check runs as before."""
    write(desk.root, "SOUL.md", "# soul, edited by hand\n")
    sh(desk.root, "add", "SOUL.md")
    proc, starts = traced_commit(desk.root, "Soul: a clearer tone\n\nSigned-off-by: A <a@example.org>\n",
                                 tmp_path / "trace.json")
    assert proc.returncode == 0, proc.stderr
    # the commit-msg hook's look at the staged paths (the pre-commit hook's `diff --cached --raw` runs anyway)
    assert not [s for s in starts if s.startswith("diff --cached --name-only")], starts
    write(desk.root, "SOUL.md", "# soul, edited again\n")
    sh(desk.root, "add", "SOUL.md")
    proc, starts = traced_commit(desk.root, "soul\n\nDesk-Actor: assistant\n", tmp_path / "trace.json")
    assert proc.returncode != 0 and "soul-unauthorized" in proc.stderr
    assert [s for s in starts if s.startswith("diff --cached --name-only")]


@pytest.mark.parametrize("message", [
    "soul\n\nDESK-ACTOR: assistant\n",
    "soul\n\ndEsK-aCtOr: assistant",  # no final newline
    "soul\n\nDes\u212a-Actor: assistant\n",  # KELVIN SIGN: lowercases to k
    "soul\n\nDesk-Actor: assistant\r\n",
    "soul\n\n" + "A line of the body.\n" * 45 + "\nDesk-Actor: assistant\n",  # past the 40 lines read
    "soul\n\n" + "A line of the body.\n" * 45 + "\nSigned-off-by: A <a@example.org>\n",
    "soul\n\nDesk-Op: digest\n",
    "soul about the desk\n",
    "",
])
def test_the_commit_msg_hook_agrees_with_the_message_rules(desk: DeskFolder, message: str) -> None:
    """Whatever the shell skips, the rules would have passed: every message gets the verdict
    `check_message` gives it (SOUL.md and NOW.md staged)."""
    write(desk.root, "SOUL.md", "# soul, edited\n")
    write(desk.root, "NOW.md", "# now, edited\n")
    sh(desk.root, "add", "SOUL.md", "NOW.md")
    proc = subprocess.run(["git", "commit", "-q", "--allow-empty-message", "-F", "-"], cwd=desk.root,
                          env=git_env(), input=message, capture_output=True, text=True)
    written = (desk.git_dir / "COMMIT_EDITMSG").read_text("utf-8", "replace")  # what the hook read
    refused = bool(check_message(written, {"SOUL.md", "NOW.md"}))
    assert (proc.returncode != 0) == refused, (message, proc.stderr)
    if refused:
        assert "soul-unauthorized" in proc.stderr or "digest-now" in proc.stderr


def baked_start(hook: Path) -> str:
    """The DESK_START code of an installed hook ('' for the plain start)."""
    found = re.search(r"^DESK_START=(.*?)\n# The hook", hook.read_text(), re.S | re.M)
    assert found is not None
    words = shlex.split(found.group(1))
    return words[0] if words else ""


def test_an_install_found_through_an_import_hook_starts_plainly(desk: DeskFolder) -> None:
    """An editable install (setuptools maps desk and its wheel-only packages, desk._hooks and
    desk._templates, by a finder that only `site` installs) gets the plain `-m` start, as does
    a hook for a Python other than this one."""
    assert fast_start(str(Path(sys.executable).parent / "no-such-python")) is None
    mapped = importlib.util.find_spec("desk._hooks")
    assert mapped is not None and mapped.origin is not None
    if Path(mapped.origin).parent.parent == Path(desk_package.__file__).parent:
        pytest.skip("desk is installed as a wheel here, not editable")
    assert fast_start() is None
    assert baked_start(desk.git_dir / "hooks" / "pre-commit") == ""
    assert "DESK_START=''" in hook_script("pre-commit")


def wheel_like(tmp_path: Path) -> Path:
    """A folder holding desk as a wheel lays it out: desk/ with _hooks and _templates inside."""
    site = tmp_path / "a site's \"folder\" \\ é"  # quotes, a space, a backslash, non-ASCII: shell and Python quoting
    source = Path(desk_package.__file__).parent
    shutil.copytree(source, site / "desk", ignore=shutil.ignore_patterns("__pycache__"))
    project = source.parent
    for folder, name in (("hooks", "_hooks"), ("templates", "_templates")):
        if not (site / "desk" / name).exists():
            shutil.copytree(project / folder, site / "desk" / name, ignore=shutil.ignore_patterns("__pycache__"))
    return site


def install_from(site: Path, root: Path) -> None:
    """`desk hooks install` run by this Python finding desk in `site` on the plain path search
    alone (started with -S: no editable finder), as a wheel install finds it."""
    others = [p for p in sys.path[1:] if p and Path(p).is_dir() and not (Path(p) / "desk").is_dir()]
    code = ("import sys\n"
            f"sys.path[1:1] = {json.dumps([str(site), *others])}\n"  # [0]: the script's folder
            "from pathlib import Path\n"
            "from desk.setup.hooks import install\n"
            f"install(Path({str(root)!r}))\n")
    extra = site.parent / "on-pythonpath"  # the installer's $PYTHONPATH: not the hook's business
    extra.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-S", "-c", code], cwd=site, check=True, capture_output=True, text=True,
                   env={**os.environ, "PYTHONPATH": str(extra)})


def test_a_wheel_install_starts_without_site_and_keeps_the_verdicts(desk: DeskFolder, tmp_path: Path) -> None:
    """The hook runs `python -S` on the folders baked in at install (desk from them, not from
    this checkout), refuses and accepts what the plain start does; with desk gone from there it
    falls back to the plain start."""
    site = wheel_like(tmp_path)
    install_from(site, desk.root)
    start = baked_start(desk.git_dir / "hooks" / "pre-commit")
    assert json.dumps(str(site)) in start and "-S -c" in (desk.git_dir / "hooks" / "pre-commit").read_text()
    assert "on-pythonpath" not in start
    probe = subprocess.run([sys.executable, "-S", "-c", start.replace("start(sys.argv[1:])", "")
                            + "print('site' in sys.modules)\nimport desk\nprint(desk.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.splitlines()
    assert probe == ["False", str(site / "desk" / "__init__.py")]
    write(desk.root, "memory/bad.md", INVALID)
    sh(desk.root, "add", "memory/bad.md")
    proc = commit(desk.root, "bad")
    assert proc.returncode != 0 and "memory/bad.md:1: frontmatter-field" in proc.stderr
    sh(desk.root, "rm", "-q", "--cached", "memory/bad.md")
    (desk.root / "memory/bad.md").unlink()
    write(desk.root, "memory/good.md", memory_text("good"))
    reindex_text(desk.root)
    sh(desk.root, "add", "memory/good.md", "MEMORY.md")
    assert commit(desk.root, "good").returncode == 0
    write(desk.root, "SOUL.md", "# soul, edited\n")
    sh(desk.root, "add", "SOUL.md")
    proc = commit(desk.root, "soul\n\nDesk-Actor: assistant\n")
    assert proc.returncode != 0 and "soul-unauthorized" in proc.stderr
    sh(desk.root, "reset", "-q", "--hard")
    for hook in ("post-merge", "post-rewrite"):  # the sync code and its dependencies load too
        done = subprocess.run([str(desk.git_dir / "hooks" / hook), "rebase" if hook == "post-rewrite" else "0"],
                              cwd=desk.root, env=git_env(), input="", capture_output=True, text=True)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    shutil.rmtree(site / "desk")  # desk reinstalled elsewhere: the plain start finds it
    write(desk.root, "memory/bad.md", INVALID)
    sh(desk.root, "add", "memory/bad.md")
    proc = commit(desk.root, "bad")
    assert proc.returncode != 0 and "memory/bad.md:1: frontmatter-field" in proc.stderr


def test_the_hook_heals_a_written_back_index_that_drops_files_desk_added(desk: DeskFolder, identity: None) -> None:
    """The hook loads desk's write-back check only for a staged path desk published, back to a
    blob desk moved it from: the files a desk commit added (a first preference and its
    PREFERENCES.md), dropped by a `git commit` that holds the index it read before, are such
    changes too (deletions: no blob staged)."""
    from desk.api import Desk
    from desk.layout import PUBLISHED_RECORD

    read_by_git = (desk.git_dir / "index").read_bytes()
    with Desk(desk.root) as d:
        d.pref_set("report.language", "Chinese")
    (last,) = json.loads((desk.git_dir / PUBLISHED_RECORD).read_text())[-1:]
    assert last and all(old is None for old, _new in last.values())  # only files desk added
    (desk.git_dir / "index").write_bytes(read_by_git)  # git writes back the index it read
    staged = sh(desk.root, "diff", "--cached", "--name-status").stdout.split()
    assert staged == [w for path in sorted(last) for w in ("D", path)]  # the damage
    write(desk.root, "journal/person-1.md", "# a note\n\nWritten by hand.\n")
    sh(desk.root, "add", "journal/person-1.md")
    proc = commit(desk.root, "person: a note")
    assert proc.returncode == 0, proc.stderr
    assert sh(desk.root, "show", "--name-only", "--format=", "HEAD").stdout.split() == ["journal/person-1.md"]
    assert sh(desk.root, "status", "--porcelain", "--untracked-files=all").stdout == ""


def test_the_hook_reads_the_record_the_transaction_writes() -> None:
    from desk.layout import PUBLISHED_RECORD
    from desk.transaction import PUBLISHED_FILE

    assert PUBLISHED_RECORD == PUBLISHED_FILE


# -- the commit-msg hook's shell pass (issue 27.2): only messages the scanner finds nothing in ----

_STUB = "#!/bin/sh\necho STARTED\n"
_MESSAGE_PIECES = ["Fix the parser", " ", "\t", "\n", "\n\n", ": ", "(", ")", ".", ",", "'", '"', "]", "-",
                   "desk", "DESK", "key", "Token", "secret", "passw", "pwd", "credential", "Basic", "%3D", "://",
                   "@", "gh", "p_", "AKIA", "SK", "sk-", "hf_", "SG.", "xox", "eyJ", "_live_", "Signed-off-by: A",
                   "aB3dE5gH", "7jK9mN1p", "Q2rS4tU6vW8xY0zC", "abcdefghijklmno", "é", "\u2028", "\x85", "\r",
                   "\u200b", "ｇｈｐ_"]


def _shell_hook(tmp_path: Path) -> Path:
    """The commit-msg hook as installed, its Python a stub that says it was started."""
    stub = tmp_path / "python"
    stub.write_text(_STUB)
    stub.chmod(0o755)
    hook = tmp_path / "commit-msg"
    hook.write_text(hook_script("commit-msg").replace("DESK_PYTHON=", f"DESK_PYTHON={shlex.quote(str(stub))} #", 1))
    return hook


def _shell_passes(hook: Path, message: str, shell: str) -> bool:
    message_file = hook.parent / "MSG"
    message_file.write_bytes(message.encode("utf-8", "surrogatepass"))
    env = {k: v for k, v in os.environ.items() if k != "DESK_VALIDATED"}
    proc = subprocess.run([shell, str(hook), str(message_file)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return "STARTED" not in proc.stdout


_SHELLS = [s for s in ("sh", "bash", "dash") if shutil.which(s)]


@pytest.mark.parametrize("shell", _SHELLS)
def test_the_commit_msg_shell_passes_ordinary_messages_and_starts_python_for_the_rest(tmp_path: Path,
                                                                                       shell: str) -> None:
    from desk.gate.message import needs_full_check

    hook = _shell_hook(tmp_path)
    for message in ("Fix the parser: handle empty lines\n\nSigned-off-by: A <a@example.org>\n",
                    "Release notes (v2.1)\n", ""):
        assert _shell_passes(hook, message, shell) and not needs_full_check(message), message
    token = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3d"
    for message in (f"subject {token}", "subject\n\n" + token[:12] + "\n" + token[12:24] + "\n" + token[24:],
                    "a desk commit", "see %3D", "subject\u2028x", "subject\r\n", "x\n" * 45,
                    "ok\n\nabcdefghijklmnop", "ok\n\nword\n", "ok\n\nword )\n", "rotate the Key",
                    "sub\n\nDesk-Actor: assistant"):
        assert not _shell_passes(hook, message, shell), repr(message)


def test_the_commit_msg_shell_starts_python_for_every_prefix_the_scanner_knows(tmp_path: Path) -> None:
    """The shell's list of prefixes keeps up with desk.text.secrets (a prefix it missed could be
    joined into a key across lines by the scanner, unseen by the shell)."""
    from desk.text.secrets import _LITERALS

    hook = _shell_hook(tmp_path)
    for literal in _LITERALS:
        assert not _shell_passes(hook, f"Fix the parser ({literal}) for good\n", "sh"), literal


@pytest.mark.parametrize("shell", _SHELLS[:1])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_MESSAGE_PIECES), max_size=14).map("".join))
def test_what_the_commit_msg_shell_passes_the_scanner_finds_nothing_in(tmp_path: Path, shell: str,
                                                                       message: str) -> None:
    """The shell's pass is sound: a message it passes without Python holds no secret in any view
    the scanner takes and no `desk` for the message rules (`needs_full_check` is what Python's
    first look would have said)."""
    from desk.gate.message import needs_full_check
    from desk.text.secrets import scan

    if _shell_passes(_shell_hook(tmp_path), message, shell):
        assert not needs_full_check(message) and scan(message) == [], repr(message)
