"""Every validation rule, each with a refused and an accepted real `git commit` through the hooks."""

from __future__ import annotations

import json
import os

import pytest

from desk.layout import DeskFolder
from desk.errors import InvalidFileError
from desk.text.secrets import fingerprint
from desk.transaction import commit_message, transaction
from desk.gate.validate import validate_staged
from desk.gate.whole import validate_all
from tests.conftest import DeskRunner
from tests.guard_helpers import add_commit, commit, head, memory_text, reindex_text, sh, write

GH_TOKEN = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC1234"


def add_memory(root, name: str, text: str | None = None):  # type: ignore[no-untyped-def]
    write(root, f"memory/{name}.md", text or memory_text(name))
    reindex_text(root)
    return add_commit(root, f"add {name}", f"memory/{name}.md", "MEMORY.md")


def test_valid_hand_edit_commits(desk: DeskFolder) -> None:
    proc = add_memory(desk.root, "alpha")
    assert proc.returncode == 0, proc.stderr
    assert sh(desk.root, "status", "--porcelain").stdout == ""


@pytest.mark.parametrize("text, rule, line", [
    (memory_text("beta", extra="colour: red\n"), "frontmatter-field", 6),
    (memory_text("other"), "name-mismatch", 2),
    ("no frontmatter here\n", "frontmatter-missing", 1),
    (memory_text("beta", body=" "), "body-empty", 7),
])
def test_invalid_memory_refused(desk: DeskFolder, text: str, rule: str, line: int) -> None:
    before = head(desk.root)
    proc = add_memory(desk.root, "beta", text)
    assert proc.returncode != 0
    assert f"memory/beta.md:{line}: {rule}:" in proc.stderr
    assert head(desk.root) == before


def test_bad_file_name_and_case_collision(desk: DeskFolder) -> None:
    add_memory(desk.root, "report-style")
    write(desk.root, "memory/Report-style.md", memory_text("report-style", body="Other body."))
    proc = add_commit(desk.root, "clash", "memory/Report-style.md")
    assert proc.returncode != 0
    assert "memory/Report-style.md:1: memory-name:" in proc.stderr
    assert "memory-name-case" in proc.stderr


def test_stray_file_in_memory_folder(desk: DeskFolder) -> None:
    proc = add_commit(desk.root, "stray", str(write(desk.root, "memory/notes.txt", "x\n").relative_to(desk.root)))
    assert proc.returncode != 0 and "memory/notes.txt:1: memory-path:" in proc.stderr


def test_stale_index_is_regenerated_by_the_hook(desk: DeskFolder) -> None:
    write(desk.root, "memory/gamma.md", memory_text("gamma"))
    proc = add_commit(desk.root, "gamma without index", "memory/gamma.md")
    # the fixer regenerates MEMORY.md, adds it to this very commit and says so
    assert proc.returncode == 0, proc.stderr
    assert "files were modified by this hook: MEMORY.md was regenerated" in proc.stderr
    assert "- [gamma](memory/gamma.md)" in sh(desk.root, "show", "HEAD:MEMORY.md").stdout
    assert (desk.root / "MEMORY.md").read_text() == sh(desk.root, "show", "HEAD:MEMORY.md").stdout


def test_commit_of_only_paths_checks_the_temporary_index(desk: DeskFolder) -> None:
    """`git commit -- memory/x.md` stages into a temporary index the hook must read."""
    add_memory(desk.root, "delta")
    write(desk.root, "memory/delta.md", memory_text("delta", description="Changed description"))
    reindex_text(desk.root)  # MEMORY.md is right in the work tree, but not part of this commit
    proc = commit(desk.root, "only the memory", "--", "memory/delta.md")
    assert proc.returncode != 0 and "index-stale" in proc.stderr
    proc = commit(desk.root, "both", "--", "memory/delta.md", "MEMORY.md")
    assert proc.returncode == 0, proc.stderr


def test_archive_only_grows(desk: DeskFolder) -> None:
    from desk.archive.store import append_event

    append_event(desk, "inbound", "hello")
    rel = sh(desk.root, "ls-files", "--others", ".system/archive").stdout.split()[0]
    assert add_commit(desk.root, "archive", rel).returncode == 0
    append_event(desk, "outbound", "hi there")
    assert add_commit(desk.root, "archive grows", rel).returncode == 0
    path = desk.root / rel
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0].replace(b"hello", b"HELLO") + lines[1])
    proc = add_commit(desk.root, "rewrite history", rel)
    assert proc.returncode != 0 and f"{rel}:1: archive-append-only" in proc.stderr
    path.write_bytes(lines[0])
    proc = add_commit(desk.root, "truncate", rel)
    assert proc.returncode != 0 and "archive-append-only" in proc.stderr
    path.write_bytes(b"".join(lines) + b'{"not": "a record"}\n')
    proc = add_commit(desk.root, "junk", rel)
    assert proc.returncode != 0 and f"{rel}:3: archive-" in proc.stderr
    path.unlink()
    sh(desk.root, "rm", "-q", "--cached", rel)
    proc = commit(desk.root, "delete")
    assert proc.returncode != 0 and "archive-append-only" in proc.stderr


def test_soul_needs_authorization_when_the_assistant_changes_it(desk: DeskFolder) -> None:
    write(desk.root, "SOUL.md", (desk.root / "SOUL.md").read_text() + "\nI am terse.\n")
    sh(desk.root, "add", "SOUL.md")
    proc = commit(desk.root, "soul\n\nDesk-Actor: assistant")
    assert proc.returncode != 0 and "SOUL.md:1: soul-unauthorized:" in proc.stderr
    proc = commit(desk.root, "soul\n\nDesk-Actor: assistant\nDesk-Authorized-By: Ada")
    assert proc.returncode == 0, proc.stderr
    write(desk.root, "SOUL.md", (desk.root / "SOUL.md").read_text() + "A person's edit.\n")
    assert add_commit(desk.root, "my soul edit", "SOUL.md").returncode == 0  # people may


def test_message_rules_read_trailers_as_git_does(desk: DeskFolder) -> None:
    """A space before the colon and a folded value are trailers to git, so to the commit-msg hook too."""
    write(desk.root, "SOUL.md", (desk.root / "SOUL.md").read_text() + "\nI am terse.\n")
    sh(desk.root, "add", "SOUL.md")
    proc = commit(desk.root, "soul\n\nDesk-Actor : assistant")
    assert proc.returncode != 0 and "SOUL.md:1: soul-unauthorized:" in proc.stderr
    proc = commit(desk.root, "soul\n\nDesk-Actor:\n  assistant\nDesk-Authorized-By:\n  Ada\n  Lovelace")
    assert proc.returncode == 0, proc.stderr
    assert desk.git.history.log(["SOUL.md"], limit=1)[0].trailers == {"Desk-Actor": ["assistant"],
                                                              "Desk-Authorized-By": ["Ada Lovelace"]}
    write(desk.root, "NOW.md", "# NOW\n\ndoing: folding\n")
    sh(desk.root, "add", "NOW.md")
    proc = commit(desk.root, "digest: 2026-11-29\n\nDesk-Op :\n  digest")
    assert proc.returncode != 0 and "NOW.md:1: digest-now:" in proc.stderr


def test_digest_never_changes_now(desk: DeskFolder) -> None:
    write(desk.root, "NOW.md", "# NOW\n\ndoing: something else\n")
    write(desk.root, "journal/2026-11-29.md", "# 2026-11-29\n\nA day.\n")
    sh(desk.root, "add", "NOW.md", "journal/2026-11-29.md")
    proc = commit(desk.root, "digest: 2026-11-29\n\nDesk-Op: digest")
    assert proc.returncode != 0 and "NOW.md:1: digest-now:" in proc.stderr
    sh(desk.root, "restore", "--staged", "NOW.md")
    proc = commit(desk.root, "digest: 2026-11-29\n\nDesk-Op: digest")
    assert proc.returncode == 0, proc.stderr


def test_secret_refused_and_never_printed(desk: DeskFolder, run: DeskRunner) -> None:
    write(desk.root, "NOW.md", f"# NOW\n\nuse {GH_TOKEN} for the API\n")
    proc = add_commit(desk.root, "oops", "NOW.md")
    assert proc.returncode != 0 and "NOW.md:3: secret: github-token" in proc.stderr
    for line in (proc.stdout + proc.stderr).splitlines():
        assert GH_TOKEN not in line
    result = run("validate", "--staged")
    assert result.exit_code == 3 and GH_TOKEN not in result.output
    result = run("validate", "--staged", "--json")
    assert GH_TOKEN not in result.output
    finding = json.loads(result.output)["findings"][0]
    assert fingerprint(GH_TOKEN) in finding["message"]
    # allowed by its fingerprint in desk.json (committed first), never by an inline comment
    config = json.loads((desk.root / ".system/desk.json").read_text())
    config["secrets"]["allow"] = [fingerprint(GH_TOKEN)]
    write(desk.root, ".system/desk.json", json.dumps(config, indent=2) + "\n")
    assert commit(desk.root, "allow it", "--", ".system/desk.json").returncode == 0
    assert commit(desk.root, "now it passes", "--", "NOW.md").returncode == 0


def test_secret_in_memory_and_journal(desk: DeskFolder) -> None:
    secret = "AI" + "za" + "Sy0123456789abcdefABCDEFghijk_lmnop"
    proc = add_memory(desk.root, "keys", memory_text("keys", body=f"The maps key is {secret}."))
    assert proc.returncode != 0 and "memory/keys.md:7: secret: google-api-key" in proc.stderr
    assert secret not in proc.stderr
    write(desk.root, "journal/2026-01-05.md", f"token = \"{'Zx8q2LmP0vR7tYw4nKs'}\"\n")
    sh(desk.root, "reset", "-q")
    proc = add_commit(desk.root, "journal", "journal/2026-01-05.md")
    assert proc.returncode != 0 and "journal/2026-01-05.md:1: secret: generic-secret" in proc.stderr


def test_file_rules_symlink_binary_encoding_size(desk: DeskFolder) -> None:
    os.symlink("../AGENTS.md", desk.root / "journal" / "link.md")
    proc = add_commit(desk.root, "link", "journal/link.md")
    assert proc.returncode != 0 and "journal/link.md:1: symlink:" in proc.stderr
    sh(desk.root, "reset", "-q")
    write(desk.root, "journal/blob.md", b"line\n\x00\x01")
    proc = add_commit(desk.root, "bin", "journal/blob.md")
    assert proc.returncode != 0 and "journal/blob.md:2: binary:" in proc.stderr
    sh(desk.root, "reset", "-q")
    write(desk.root, "journal/latin.md", "ok\ncaf\xe9\n".encode("latin-1"))
    proc = add_commit(desk.root, "latin", "journal/latin.md")
    assert proc.returncode != 0 and "journal/latin.md:2: encoding:" in proc.stderr
    sh(desk.root, "reset", "-q")
    write(desk.root, "journal/huge.md", "x" * (1 << 20) + "\n")
    proc = add_commit(desk.root, "huge", "journal/huge.md")
    assert proc.returncode != 0 and "journal/huge.md:1: file-size:" in proc.stderr
    sh(desk.root, "reset", "-q")
    write(desk.root, "notes/anything.bin", b"\x00\x01")  # not a desk path: a person's own file
    assert add_commit(desk.root, "own file", "notes/anything.bin").returncode == 0


def test_warnings_do_not_block(desk: DeskFolder) -> None:
    text = memory_text("old", triggers="", extra="expires: 2020-01-01T00:00:00Z\n")
    proc = add_memory(desk.root, "old", text)
    assert proc.returncode == 0, proc.stderr
    assert "memory/old.md:1: memory-expired:" in proc.stderr
    assert "memory/old.md:1: memory-no-triggers:" in proc.stderr


def test_desk_commits_are_validated_in_process(desk: DeskFolder) -> None:
    before = head(desk.root)
    now_before = (desk.root / "NOW.md").read_bytes()
    with pytest.raises(InvalidFileError) as err, transaction(desk) as tx:
        tx.commit({"NOW.md": f"key {GH_TOKEN}\n".encode()}, commit_message("now", {"Desk-Op": "now"}))
    assert err.value.findings[0].rule == "secret" and GH_TOKEN not in str(err.value)
    with pytest.raises(InvalidFileError) as err, transaction(desk) as tx:
        tx.commit({"SOUL.md": b"# new soul\n"}, commit_message("soul", {"Desk-Actor": "assistant"}))
    assert err.value.findings[0].rule == "soul-unauthorized"
    with pytest.raises(InvalidFileError) as err, transaction(desk) as tx:
        tx.commit({"memory/zeta.md": memory_text("zeta").encode()}, commit_message("z", {}))
    assert err.value.findings[0].rule == "index-stale"
    assert head(desk.root) == before and (desk.root / "NOW.md").read_bytes() == now_before
    assert not (desk.root / "memory/zeta.md").exists()
    assert sh(desk.root, "status", "--porcelain").stdout == ""


def test_desk_commits_skip_the_python_hook(desk: DeskFolder, run: DeskRunner) -> None:
    """With DESK_VALIDATED the shell hook never starts Python: a broken interpreter path proves it."""
    from desk.setup.hooks import install

    install(desk.root, python="/nonexistent/python")
    env_path = os.environ["PATH"]
    os.environ["PATH"] = "/usr/bin:/bin"  # no `desk` to fall back to either
    try:
        result = run("remember", "eta", "--type", "fact", "-d", "Eta", "-t", "eta", "The eta fact.")
        assert result.exit_code == 0, result.output
        write(desk.root, "journal/x.md", "hand edit\n")
        proc = add_commit(desk.root, "by hand", "journal/x.md")
        assert proc.returncode != 0 and "desk is not installed" in proc.stderr
    finally:
        os.environ["PATH"] = env_path


def test_no_verify_commit_caught_by_validate_all(desk: DeskFolder, run: DeskRunner) -> None:
    write(desk.root, "memory/broken.md", "---\nname: broken\n---\nbody\n")
    write(desk.root, "memory/fine.md", memory_text("fine"))  # valid, but MEMORY.md not updated
    sh(desk.root, "add", "memory/broken.md", "memory/fine.md")
    assert commit(desk.root, "bypass", "--no-verify").returncode == 0
    result = run("validate", "--all")
    assert result.exit_code == 3
    assert "memory/broken.md:1: frontmatter-field: type: required field is missing" in result.output
    assert "MEMORY.md:3: index-stale:" in result.output
    data = json.loads(run("validate", "--all", "--json").output)
    assert data["status"] == "rejected" and data["mode"] == "all"


def test_staged_is_proportional_to_the_change(desk: DeskFolder) -> None:
    """An unrelated broken file committed with --no-verify is not re-parsed by --staged."""
    write(desk.root, "journal/bad.md", b"\xff\xfe")
    sh(desk.root, "add", "journal/bad.md")
    commit(desk.root, "bypass", "--no-verify")
    write(desk.root, "memory/iota.md", memory_text("iota"))
    reindex_text(desk.root)
    sh(desk.root, "add", "memory/iota.md", "MEMORY.md")
    report, _ = validate_staged(desk)
    assert report.ok and report.checked == 2
    assert not validate_all(desk).ok


def test_validate_cli_ok_and_help(desk: DeskFolder, run: DeskRunner) -> None:
    result = run("validate")
    assert result.exit_code == 0 and result.output.startswith("ok: 0 files checked")
    result = run("validate", "--all")
    assert result.exit_code == 0, result.output
    assert "--staged" in run("validate", "--help").output


def test_validate_fix_rewrites_a_stale_index(desk: DeskFolder, run: DeskRunner) -> None:
    write(desk.root, "memory/theta.md", memory_text("theta"))
    sh(desk.root, "add", "memory/theta.md")
    result = run("validate", "--fix", "--json")
    assert result.exit_code == 3
    data = json.loads(result.output)
    assert data["fixed"] == ["MEMORY.md"] and data["findings"][0]["rule"] == "index-stale"
    assert "- [theta](memory/theta.md)" in (desk.root / "MEMORY.md").read_text()
    sh(desk.root, "add", "MEMORY.md")
    assert run("validate").exit_code == 0
    assert commit(desk.root, "theta").returncode == 0


def test_config_rules(desk: DeskFolder) -> None:
    path = desk.root / ".system/desk.json"
    original = path.read_text()
    config = json.loads(original)
    write(desk.root, ".system/desk.json", json.dumps({**config, "desk_id": "desk-" + "0" * 32}, indent=2))
    proc = add_commit(desk.root, "new id", ".system/desk.json")
    assert proc.returncode != 0 and ".system/desk.json:1: config: desk_id changed" in proc.stderr
    write(desk.root, ".system/desk.json", "{\n  \"desk_id\": \n")
    proc = add_commit(desk.root, "broken", ".system/desk.json")
    assert proc.returncode != 0 and ".system/desk.json:3: config: invalid JSON" in proc.stderr
    write(desk.root, ".system/desk.json", json.dumps({**config, "colour": "red"}, indent=2))
    proc = add_commit(desk.root, "unknown key", ".system/desk.json")
    assert proc.returncode != 0 and "config: colour: Extra inputs are not permitted" in proc.stderr
    config["budgets"]["total"] = 9000
    write(desk.root, ".system/desk.json", json.dumps(config, indent=2) + "\n")
    assert add_commit(desk.root, "budget", ".system/desk.json").returncode == 0


@pytest.mark.parametrize("bad", ["desk-other", "", "desk-" + "A" * 32, "desk-" + "0" * 32 + "\n",
                                 "desk-" + "0" * 32 + " ", "x" * 10_000, "desk-\u202e" + "0" * 31])
def test_a_desk_id_of_another_form_is_refused_naming_the_file_and_line(desk: DeskFolder, run: DeskRunner,
                                                                      bad: str) -> None:
    """Issue 27.8: desk_id had no format check: a hand-edited id (a newline, a space, 10,000
    characters, a direction control) was stamped into every record and scope id. desk.json's
    schema takes only `desk-` and 32 lowercase hex digits (what `desk init` makes): a commit of
    another is refused by the hook, and a command reading the desk names the file and line."""
    path = desk.root / ".system/desk.json"
    config = json.loads(path.read_text())
    assert len(config["desk_id"]) == 37  # what init made passes
    text = json.dumps({"schema_version": config["schema_version"], **config, "desk_id": bad}, indent=2)
    write(desk.root, ".system/desk.json", text)
    proc = add_commit(desk.root, "hand-made id", ".system/desk.json")
    assert proc.returncode != 0 and ".system/desk.json:3: config: desk_id: " in proc.stderr, proc.stderr
    assert "is not a desk id: `desk-` and 32 lowercase hex digits" in proc.stderr
    sh(desk.root, "reset", "-q")
    result = run("archive", "verify")  # a command that loads desk.json through its schema
    assert result.exit_code == 3, result.output
    assert ".system/desk.json:3: config-field: desk_id: " in result.output and "is not a desk id" in result.output
    assert "git show HEAD:.system/desk.json" in result.output
    assert "Traceback" not in result.output


def test_an_unstaged_allow_list_edit_lets_no_secret_through(desk: DeskFolder) -> None:
    from desk.errors import RejectedError
    from desk.memory.operations import remember

    token = "gh" + "p_" + "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC1234"
    config = json.loads((desk.root / ".system/desk.json").read_text())
    config["secrets"]["allow"].append(fingerprint(token))
    (desk.root / ".system/desk.json").write_text(json.dumps(config))  # edited, not committed
    with pytest.raises(RejectedError, match="secret"):
        remember(desk, "tok", type="fact", description="a token", body=f"The token is {token}.")
    assert not (desk.root / "memory/tok.md").exists()


def test_validate_range_checks_what_a_fast_forward_would_bring_from_the_object_store(desk: DeskFolder) -> None:
    """desk sync's gate before a fast-forward: the commits' content, never the work tree."""
    from desk.gate.validate import validate_range

    start = head(desk.root)
    assert add_memory(desk.root, "alpha").returncode == 0
    write(desk.root, "memory/Alpha.md", memory_text("Alpha"))  # a case clash, and a bad name
    write(desk.root, "memory/beta.md", memory_text("beta", extra="colour: red\n"))
    write(desk.root, "memory/delta.md", memory_text("delta"))  # valid, but not in MEMORY.md
    assert sh(desk.root, "add", "memory").returncode == 0
    assert commit(desk.root, "sneaky", "--no-verify").returncode == 0
    new = head(desk.root)
    sh(desk.root, "reset", "-q", "--hard", start)  # HEAD back where a clone that has not synced is
    report, index = validate_range(desk, start, new)
    rules = {(f.path, f.rule) for f in report.errors}
    assert ("memory/beta.md", "frontmatter-field") in rules
    assert any(path == "memory/Alpha.md" and rule == "memory-name-case" for path, rule in rules)
    # A stale MEMORY.md is reported (desk sync leaves it out: it regenerates the index after).
    assert any(f.rule == "index-stale" for f in report.findings)
    assert index is not None and b"[delta]" in index and b"[beta]" not in index  # the correct one
    assert not desk.path("memory/beta.md").exists()  # nothing was read from or written to the work tree
    good = add_memory(desk.root, "gamma")
    assert good.returncode == 0 and validate_range(desk, start, head(desk.root))[0].ok
