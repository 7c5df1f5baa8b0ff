"""`desk import`: every format's fixture, the plan, the gate, collisions, idempotence, one commit."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

import desk as desk_api
from desk.archive.store import iter_events
from desk.errors import UsageError
from desk.layout import DeskFolder
from desk.memory.operations import remember
from desk.formats.memory_file import MemoryFile
from desk.memory.reads import show as show_file
from tests.conftest import DeskRunner, git, snapshot


def show(desk: DeskFolder, name: str) -> tuple[str, MemoryFile]:
    """The memory `name` as (path, parsed file); the file must be valid."""
    shown = show_file(desk, name)
    assert shown.memory is not None, shown.findings
    return shown.path, shown.memory

FIXTURES = Path(__file__).parent / "fixtures"
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
SOURCES = {
    "claude-code": FIXTURES / "claude-code" / "project",
    "openclaw": FIXTURES / "openclaw" / "workspace",
    "markdown": FIXTURES / "markdown" / "vault",
    "mem0": FIXTURES / "mem0" / "export.json",
    "chat-export": FIXTURES / "chat-export" / "chatgpt",
}
MALFORMED = {
    "claude-code": (FIXTURES / "claude-code" / "malformed", "memory/broken.md:1: the frontmatter opened by `---` is never closed"),
    "openclaw": (FIXTURES / "openclaw" / "malformed", "USER.md:1: not UTF-8 text (byte 0xe9)"),
    "markdown": (FIXTURES / "markdown" / "malformed", "list.md:2: frontmatter is not a mapping"),
    "mem0": (FIXTURES / "mem0" / "malformed.json", "malformed.json: memory 1: `memory` (the text) is missing"),
    "chat-export": (FIXTURES / "chat-export" / "malformed", "conversations.json: conversation 1: neither a ChatGPT"),
    "jsonl": (FIXTURES / "jsonl" / "malformed.jsonl", "malformed.jsonl:2: not valid JSON"),  # its good line: nothing
}


def do_import(desk: DeskFolder, fmt: str, source: Path, **kw: object) -> dict:
    return desk_api.open(desk.root).import_(fmt, source, now=NOW, **kw).to_json()  # type: ignore[arg-type]


def commits(desk: DeskFolder) -> int:
    return int(git(desk.root, "rev-list", "--count", "HEAD"))


def actions(report: dict) -> dict[str, str]:
    return {m["name"]: m["action"] for m in report["memories"] if m["name"]}


def test_claude_code_project_becomes_memories_records_and_a_proposal(desk: DeskFolder, identity: None) -> None:
    before = commits(desk)
    report = do_import(desk, "claude-code", SOURCES["claude-code"])
    assert report["status"] == "imported" and commits(desk) == before + 1
    assert actions(report) == {"user-role": "create", "testing-feedback": "create", "release-freeze": "create",
                               "always-answer-in-english-unless-asked-otherwise": "create"}
    _, role = show(desk, "user-role")
    assert role.meta.type == "preference"  # Claude Code's `user`
    assert role.meta.source == "import" and role.meta.origin == "claude-code:memory/user_role.md"
    assert role.meta.description == "The user is a data scientist, new to the frontend code"
    assert role.meta.triggers  # derived: the source has none
    assert show(desk, "testing-feedback")[1].meta.type == "convention"  # `feedback`
    assert show(desk, "release-freeze")[1].meta.type == "fact"  # `project`
    assert report["proposals"] == [{"target": "AGENTS.md", "origin": "claude-code:CLAUDE.md",
                                    "note": "a person's instructions: merge into AGENTS.md by hand if wanted"}]
    assert "make test" not in (desk.root / "AGENTS.md").read_text()
    records = [e.record for e in iter_events(desk)]
    assert [(r["kind"], r["actor"], r["session"], r["at"]) for r in records] == [
        ("inbound", "user", "4f1c2a9e", "2026-02-10T09:00:00.000000Z"),
        ("outbound", "assistant", "4f1c2a9e", "2026-02-10T09:00:05.000000Z"),
        ("outbound", "assistant", "4f1c2a9e", "2026-02-10T09:00:09.000000Z")]  # the tool result is not a message
    assert records[0]["meta"]["desk.import"] == "claude-code:4f1c2a9e:u-1"
    message = git(desk.root, "log", "-1", "--format=%B")
    for trailer in ("Desk-Op: import", "Desk-Import-Format: claude-code", "Desk-Import-Created: 4",
                    "Desk-Import-Rejected: 0", "Desk-Import-Records: 3"):
        assert trailer in message
    assert git(desk.root, "show", "--name-only", "--format=", "HEAD").split() == [
        "MEMORY.md", "memory/always-answer-in-english-unless-asked-otherwise.md", "memory/release-freeze.md",
        "memory/testing-feedback.md", "memory/user-role.md"]
    # The records were appended like `desk archive import`'s: the next checkpoint commits them.
    assert git(desk.root, "status", "--porcelain", "-uall") == ""  # a new archive file: ignored until then
    assert git(desk.root, "ls-files", "--others", "--", ".system/archive").strip()
    assert desk_api.open(desk.root).checkpoint().value.events == 3
    assert "- [user-role](memory/user-role.md)" in (desk.root / "MEMORY.md").read_text()


def test_claude_code_skips_each_symlink_with_a_warning(desk: DeskFolder, run: DeskRunner, tmp_path: Path,
                                                      identity: None) -> None:
    """Issue 27.8: a symlink in a Claude Code folder (a topic file, MEMORY.md, CLAUDE.md, a
    transcript, the memory/ folder itself) aborted the whole import ("not a regular file");
    docs/import-export.md says symlinks are skipped. Each is skipped and named, on stderr as a
    warning and in --json's `skipped`; the rest imports; nothing is read through the link."""
    project = tmp_path / "project"
    shutil.copytree(SOURCES["claude-code"], project)
    secret = tmp_path / "outside.md"
    secret.write_text("---\nname: outside\ndescription: Outside\ntype: user\n---\nnot to be imported\n")
    (project / "memory" / "linked.md").symlink_to(secret)
    (project / "linked.jsonl").symlink_to(next(project.glob("*.jsonl")))
    (project / "CLAUDE.local.md").symlink_to(secret)
    result = run("import", "claude-code", str(project), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["skipped"] == ["memory/linked.md: a symlink (not followed)",
                                 "CLAUDE.local.md: a symlink (not followed)",
                                 "linked.jsonl: a symlink (not followed)"]
    assert [line for line in result.stderr.splitlines() if "skipped" in line] == [
        f"desk: warning: skipped {s}" for s in report["skipped"]]
    assert report["counts"]["create"] == 4 and report["counts"]["records_new"] == 3
    assert "outside" not in actions(report) and not desk.path("memory/outside.md").exists()
    # The memory/ folder itself a link: skipped, none of its files read; the human plan lists it.
    linked = tmp_path / "linked-project"
    linked.mkdir()
    (linked / "memory").symlink_to(project / "memory", target_is_directory=True)
    plan = run("import", "claude-code", str(linked), "--dry-run")
    assert plan.exit_code == 0, plan.output
    assert "skipped   memory: a symlink (not followed)" in plan.stdout
    assert "desk: warning: skipped memory: a symlink (not followed)" in plan.stderr
    assert "0 create" in plan.stdout


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_dry_run_prints_the_plan_and_writes_nothing(desk: DeskFolder, identity: None, fmt: str) -> None:
    before = snapshot(desk.root)
    report = do_import(desk, fmt, SOURCES[fmt], dry_run=True)
    assert report["status"] == "planned" and report["commit"] is None
    assert report["counts"]["create"] + report["counts"]["records_new"] > 0
    assert snapshot(desk.root) == before


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_importing_the_same_source_again_is_unchanged_without_a_commit(desk: DeskFolder, identity: None,
                                                                        fmt: str) -> None:
    first = do_import(desk, fmt, SOURCES[fmt])
    assert first["status"] == "imported"
    head = git(desk.root, "rev-parse", "HEAD")
    again = do_import(desk, fmt, SOURCES[fmt])
    assert again["status"] == "unchanged" and again["commit"] is None
    assert again["counts"]["create"] == again["counts"]["update"] == again["counts"]["records_new"] == 0
    assert again["counts"]["records_present"] == first["counts"]["records_new"]
    assert git(desk.root, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("fmt", sorted(MALFORMED))
def test_a_malformed_source_is_refused_naming_the_file_and_nothing_is_written(
        desk: DeskFolder, identity: None, run: DeskRunner, fmt: str) -> None:
    path, message = MALFORMED[fmt]
    before = snapshot(desk.root)
    result = run("import", fmt, str(path))
    assert result.exit_code == 2
    assert message in result.output and "hint: " in result.output
    assert snapshot(desk.root) == before


def test_collisions_same_fact_is_unchanged_a_different_fact_gets_a_suffixed_name(
        desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    remember(desk, "is-vegetarian", type="fact", description="Diet", body="Is vegetarian")
    remember(desk, "is-leading-the-api-redesign-project-targeting-a-q2-launch", type="fact",
             description="Something else", body="A different fact under the same name.")
    report = do_import(desk, "mem0", SOURCES["mem0"])
    lines = {m["origin"].rsplit("0", 1)[-1]: m for m in report["memories"]}
    assert lines["3"]["action"] == "update"  # same fact: description and triggers taken from the source
    assert lines["2"]["action"] == "create"
    assert lines["2"]["name"] == "is-leading-the-api-redesign-project-targeting-a-q2-launch-2"
    assert "holds a different fact: imported as" in lines["2"]["reason"]
    _, kept = show(desk, "is-leading-the-api-redesign-project-targeting-a-q2-launch")
    assert kept.body == "A different fact under the same name.\n"
    again = do_import(desk, "mem0", SOURCES["mem0"])
    assert {m["action"] for m in again["memories"]} == {"unchanged"} and again["commit"] is None


def test_what_the_gate_refuses_is_listed_and_the_rest_is_imported(desk: DeskFolder, identity: None,
                                                                   tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "empty.md").write_text("---\ntitle: Empty\n---\n\n")
    agents = (desk.root / "AGENTS.md").read_text()
    rule = max((line.strip("-* ").strip() for line in agents.splitlines()), key=len)
    (vault / "rule.md").write_text(f"{rule}\n")
    (vault / "secret.md").write_text("# Keys\n\nThe deploy key is AKIAIOSFODNN7EXAMPLF for the bucket.\n")
    (vault / "twin-a.md").write_text("The same sentence twice.\n")
    (vault / "twin-b.md").write_text("The same sentence twice.\n")
    (vault / "good.md").write_text("---\ntitle: Good note\ntags: alpha, beta\n---\nA durable fact.\n")
    report = do_import(desk, "markdown", vault)
    by_origin = {m["origin"]: m for m in report["memories"]}
    assert by_origin["markdown:empty.md"]["action"] == "rejected"
    assert by_origin["markdown:rule.md"]["reason"].startswith("already_recorded: ")
    assert by_origin["markdown:secret.md"]["action"] == "rejected"
    assert "secret" in by_origin["markdown:secret.md"]["reason"]
    assert by_origin["markdown:twin-a.md"]["action"] == "create"
    assert by_origin["markdown:twin-b.md"]["reason"] == (  # the same fact, earlier in this source
        "already_recorded: twin-b: the same fact is already recorded in memory/twin-a.md")
    assert by_origin["markdown:good.md"]["action"] == "create"
    assert report["status"] == "imported"
    assert show(desk, "good-note")[1].meta.triggers == ["alpha", "beta"]
    assert not (desk.root / "memory" / "keys.md").exists()
    assert "AKIA" not in git(desk.root, "log", "-p", "-1")


def test_openclaw_bullets_daily_notes_and_workspace_files(desk: DeskFolder, identity: None) -> None:
    workspace = SOURCES["openclaw"]
    report = do_import(desk, "openclaw", workspace)
    names = actions(report)
    assert names["deploys-go-out-on-tuesdays-only"] == "create"
    assert show(desk, "deploys-go-out-on-tuesdays-only")[1].meta.type == "decision"  # under "## Decisions"
    assert show(desk, "prefers-short-replies-without-greetings")[1].meta.type == "preference"
    chinese = next(n for n in names if n.startswith("openclaw-"))  # no ASCII words: a stable hashed name
    assert show(desk, chinese)[1].body == "晚上 11 点后不要打扰\n(周末也一样)\n"
    assert show(desk, "project-alpha")[1].meta.triggers == ["alpha", "billing"]
    records = [e.record for e in iter_events(desk)]
    assert [(r["kind"], r["at"][:10], r["session"]) for r in records] == [
        ("note", "2026-01-05", "openclaw:2026-01-05"), ("note", "2026-01-06", "openclaw:2026-01-06")]
    # A fresh desk's AGENTS.md, SOUL.md and USER.md are still their `desk init` templates: as good
    # as empty, so the workspace's files fill them, in the import's one commit.
    assert report["proposals"] == []
    assert report["files"] == [
        {"action": "write", "path": "AGENTS.md", "origins": ["openclaw:AGENTS.md"]},
        {"action": "write", "path": "SOUL.md", "origins": ["openclaw:SOUL.md", "openclaw:IDENTITY.md"]},
        {"action": "write", "path": "USER.md", "origins": ["openclaw:USER.md"]}]
    assert report["counts"]["files"] == 3
    assert (desk.root / "AGENTS.md").read_bytes() == (workspace / "AGENTS.md").read_bytes()
    assert (desk.root / "SOUL.md").read_text() == (
        (workspace / "SOUL.md").read_text() + "\n" + (workspace / "IDENTITY.md").read_text())
    user = (desk.root / "USER.md").read_text()
    assert user.startswith("---\ndisplay_name: ''\n") and user.endswith((workspace / "USER.md").read_text())
    committed = git(desk.root, "show", "--name-only", "--format=%(trailers:key=Desk-Import-Files)", "HEAD")
    assert "Desk-Import-Files: 3" in committed
    assert {"AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md", "memory/project-alpha.md"} <= set(committed.split())
    assert git(desk.root, "status", "--porcelain", "--untracked-files=no") == ""  # records: the next checkpoint
    api = desk_api.open(desk.root)
    assert api.user_set({"display_name": "Mei"}).to_json()["status"] == "updated"  # the profile still works
    assert "**Timezone**: Asia/Shanghai" in (desk.root / "USER.md").read_text()
    assert "Be genuinely helpful" in api.context().text()  # the wake-up read now carries the persona
    # The daily notes reach the journal: the digest of their day renders them from the archive.
    api.checkpoint()
    api.digest(date="2026-01-05", as_of="2026-01-06T00:00:00Z")
    page = (desk.root / "journal" / "2026-01-05.md").read_text()
    notes = page[page.index("## Notes"):]
    assert "Set up the staging server; DNS still pending." in notes and "onboarding doc" in notes
    assert "2026-01-06" not in notes


def test_openclaw_files_are_proposed_where_a_person_wrote_the_desk_file(
        desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    soul = "# SOUL.md\n\nOur own persona, written by hand.\n"
    (desk.root / "SOUL.md").write_text(soul)
    git(desk.root, "-c", "user.name=Mei", "-c", "user.email=mei@example.org", "commit", "-q", "-m", "our soul",
        "--", "SOUL.md")
    user = desk.root / "USER.md"
    user.write_text(user.read_text() + "An uncommitted note.\n")  # the template at HEAD, edited in the tree
    agents_template = (desk.root / "AGENTS.md").read_bytes()
    workspace = tmp_path / "workspace"
    shutil.copytree(SOURCES["openclaw"], workspace)
    (workspace / "HEARTBEAT.md").write_text("# HEARTBEAT.md\n\n- check the inbox\n")
    plan = do_import(desk, "openclaw", workspace, dry_run=True)
    assert [(f["action"], f["path"]) for f in plan["files"]] == [("write", "AGENTS.md")]
    assert (desk.root / "AGENTS.md").read_bytes() == agents_template  # a dry run writes nothing
    report = do_import(desk, "openclaw", workspace)
    assert [(f["action"], f["path"]) for f in report["files"]] == [("write", "AGENTS.md")]
    proposed = {p["target"]: p for p in report["proposals"]}
    assert sorted(proposed) == ["NOW.md", "SOUL.md", "USER.md"]
    assert proposed["SOUL.md"]["origin"] == "openclaw:SOUL.md, openclaw:IDENTITY.md"
    assert "merge by hand" in proposed["SOUL.md"]["note"]
    assert proposed["NOW.md"]["origin"] == "openclaw:HEARTBEAT.md"  # never written: not a working note
    assert (desk.root / "SOUL.md").read_text() == soul
    assert user.read_text().endswith("An uncommitted note.\n")
    assert "USER.md" in git(desk.root, "status", "--porcelain")  # still the person's, uncommitted
    assert (desk.root / "AGENTS.md").read_bytes() == (workspace / "AGENTS.md").read_bytes()
    again = do_import(desk, "openclaw", workspace)
    assert again["status"] == "unchanged" and again["commit"] is None
    assert [(f["action"], f["path"]) for f in again["files"]] == [("unchanged", "AGENTS.md")]


def test_an_openclaw_file_the_rules_refuse_is_proposed_and_the_rest_imported(
        desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    shutil.copytree(SOURCES["openclaw"], workspace)
    (workspace / "SOUL.md").write_text("# SOUL.md\n\nDeploy with AKIAIOSFODNN7EXAMPLF when asked.\n")
    soul_before = (desk.root / "SOUL.md").read_bytes()
    report = do_import(desk, "openclaw", workspace)
    assert [f["path"] for f in report["files"]] == ["AGENTS.md", "USER.md"]
    refused = next(p for p in report["proposals"] if p["target"] == "SOUL.md")
    assert refused["note"].startswith("not written: ") and "secret" in refused["note"]
    assert (desk.root / "SOUL.md").read_bytes() == soul_before
    assert report["status"] == "imported" and "AKIA" not in git(desk.root, "log", "-p", "-1")


def test_chat_exports_follow_the_thread_shown_and_keep_roles_and_times(desk: DeskFolder, identity: None) -> None:
    do_import(desk, "chat-export", SOURCES["chat-export"])
    do_import(desk, "chat-export", FIXTURES / "chat-export" / "claude" / "conversations.json")
    records = [(e.record["session"], e.record["kind"], e.record["actor"], e.record["at"], e.record["content"])
               for e in iter_events(desk)]
    assert records == [
        ("chatgpt:conv-1", "inbound", "user", "2026-01-01T10:00:10.500000Z", "Which database for metrics?"),
        ("chatgpt:conv-1", "outbound", "assistant", "2026-01-01T10:00:30.000000Z",
         "Postgres with a time-series extension."),
        ("chatgpt:conv-1", "inbound", "user", "2026-01-01T10:00:40.000000Z", "Thanks, that settles it."),
        ("claude:c-100", "inbound", "user", "2026-01-02T08:00:00.000000Z", "Plan two days in Kyoto."),
        ("claude:c-100", "outbound", "assistant", "2026-01-02T08:00:20.000000Z", "Day one: Fushimi Inari early."),
    ]  # the abandoned branch (m2) and the empty system message are left out


def test_markdown_reads_basic_memory_obsidian_letta_and_toml_notes(desk: DeskFolder, identity: None) -> None:
    report = do_import(desk, "markdown", SOURCES["markdown"])
    assert sorted(actions(report)) == ["ada", "coffee-brewing-methods", "deploy-checklist", "human"]
    coffee = show(desk, "coffee-brewing-methods")[1]
    assert coffee.meta.triggers == ["coffee", "brewing"] and coffee.meta.type == "fact"
    assert "- relates_to [[Coffee Bean Origins]]" in coffee.body  # relations kept as written
    assert show(desk, "human")[1].meta.description == "What the agent knows about the human it works with"
    assert show(desk, "deploy-checklist")[1].meta.triggers == ["deploy"]  # TOML frontmatter


def test_hostile_notes_bom_crlf_symlinks_and_zero_width_titles(desk: DeskFolder, identity: None,
                                                               tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "bom.md").write_bytes(b"\xef\xbb\xbf---\r\ntitle: With BOM\r\n---\r\nBody behind a BOM.\r\n")
    (vault / "zw.md").write_text("---\ntitle: \"Zero\u200bwidth\\nline\"\n---\nA body.\n")
    (vault / "link.md").symlink_to(FIXTURES / "markdown" / "vault" / "people" / "ada.md")
    (vault / "big.md").write_text("# Big\n\n" + "word " * 20_000)
    (vault / "evil.md").write_text("---\nname: ../../etc/passwd\ntype: fact\ntitle: Evil\n---\nPath games.\n")
    report = do_import(desk, "markdown", vault)
    assert actions(report)["with-bom"] == "create"
    assert show(desk, "with-bom")[1].body == "Body behind a BOM.\n"
    assert report["skipped"] == ["link.md: a symlink (not followed)"]
    big = next(m for m in report["memories"] if m["origin"] == "markdown:big.md")
    assert big["action"] == "rejected" and big["reason"].startswith("file-size: ")  # over 64 KiB
    assert actions(report)["evil"] == "create"  # an unusable `name` is not a path: the title's slug is
    assert not (tmp_path / "etc").exists()
    zero = next(m for m in report["memories"] if m["origin"] == "markdown:zw.md")
    assert zero["action"] == "create" and "\n" not in show(desk, zero["name"])[1].meta.description


@pytest.mark.parametrize("fmt", ["markdown", "claude-code", "openclaw"])
def test_a_file_name_that_is_not_utf8_is_named_by_its_bytes(desk: DeskFolder, identity: None, tmp_path: Path,
                                                             fmt: str) -> None:
    """A note called b'caf\xe9.md' (Latin-1) once became `origin: "markdown:caf\uDCE9.md"`, a lone
    surrogate that `desk export jsonl` then failed to encode (an internal error); its title
    fell back to the same surrogate. Now the byte reads `\\xe9`, everywhere the name is shown."""
    import os

    source = tmp_path / "src"
    folder = source / "memory"
    folder.mkdir(parents=True)
    (folder / os.fsdecode(b"caf\xe9.md")).write_bytes(b"No frontmatter, no heading: a body only.\n")
    if fmt == "markdown":  # the other readers refuse a link outright
        (folder / os.fsdecode(b"link\xff.md")).symlink_to(folder / os.fsdecode(b"caf\xe9.md"))
    report = do_import(desk, fmt, folder if fmt == "markdown" else source)
    made = [m for m in report["memories"] if m["action"] == "create"]
    assert len(made) == 1 and made[0]["origin"].endswith("caf\\xe9.md")
    memory = show(desk, made[0]["name"])[1]
    assert memory.meta.origin is not None and memory.meta.origin.endswith("caf\\xe9.md")
    json.dumps(report, ensure_ascii=False).encode()  # no lone surrogate anywhere in the report
    if fmt == "markdown":
        assert report["skipped"] == ["link\\xff.md: a symlink (not followed)"]
    out = tmp_path / "out.jsonl"
    desk_api.open(desk.root).export("jsonl", out)  # was: UnicodeEncodeError
    assert "caf\\\\xe9.md" in out.read_text("utf-8")


@pytest.mark.parametrize("fmt", ["jsonl", "claude-code"])
def test_a_jsonl_line_nested_too_deeply_is_refused_naming_it(desk: DeskFolder, tmp_path: Path, fmt: str) -> None:
    """`{"a":{"a":...` 5,000 deep on one line: Python's JSON decoder recursed into an internal
    RecursionError (exit 1, "a bug in desk"). It is refused like any malformed line, nothing written."""
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    if fmt == "jsonl":
        source = tmp_path / "memories.jsonl"
        source.write_text(deep + "\n")
        where = "memories.jsonl:1"
    else:
        source = tmp_path / "project"
        (source / "memory").mkdir(parents=True)
        (source / "session.jsonl").write_text('{"type": "user"}\n' + deep + "\n")
        where = "session.jsonl:2"
    before = snapshot(desk.root)
    with pytest.raises(UsageError, match=f"^{where}: JSON nested too deeply"):
        do_import(desk, fmt, source)
    assert snapshot(desk.root) == before


def test_progress_reports_the_archive_records(desk: DeskFolder, identity: None) -> None:
    calls: list[tuple[int, int]] = []
    desk_api.open(desk.root).import_("chat-export", SOURCES["chat-export"], progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 6) and calls[-1] == (6, 6)  # validate, then append: half each
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_an_unknown_format_or_missing_source_is_a_usage_error(desk: DeskFolder, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown import format"):
        desk_api.open(desk.root).import_("evernote", tmp_path)
    with pytest.raises(UsageError, match="no such file or folder"):
        desk_api.open(desk.root).import_("markdown", tmp_path / "missing")


def test_a_person_s_uncommitted_memory_file_is_never_overwritten(desk: DeskFolder, identity: None,
                                                                tmp_path: Path) -> None:
    (desk.root / "memory" / "ada.md").write_text("a person's draft\n")
    report = do_import(desk, "markdown", SOURCES["markdown"])
    ada = next(m for m in report["memories"] if m["origin"] == "markdown:people/ada.md")
    assert ada["name"] == "ada-2"
    assert (desk.root / "memory" / "ada.md").read_text() == "a person's draft\n"


def test_the_cli_prints_the_plan_and_json(desk: DeskFolder, identity: None, run: DeskRunner) -> None:
    result = run("import", "mem0", str(SOURCES["mem0"]), "--dry-run")
    assert result.exit_code == 0
    assert "plan (dry run, nothing written): mem0" in result.output
    assert "create    memory/is-vegetarian.md" in result.output
    data = json.loads(run("import", "mem0", str(SOURCES["mem0"]), "--json").output)
    assert data["status"] == "imported" and data["counts"]["create"] == 3


def test_secrets_in_conversations_are_redacted_on_append_and_a_dirty_index_does_not_block_records(
        desk: DeskFolder, identity: None, tmp_path: Path) -> None:
    (desk.root / "MEMORY.md").write_text("a person's hand edit\n")  # records never touch MEMORY.md
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([{"uuid": "c1", "name": "keys", "created_at": "2026-01-02T08:00:00Z",
                                   "chat_messages": [{"uuid": "m1", "sender": "human", "created_at": "2026-01-02T08:00:00Z",
                                                      "text": "my key is AKIAIOSFODNN7EXAMPLF ok"}]}]))
    report = do_import(desk, "chat-export", export)
    assert report["status"] == "imported" and report["commit"] is None
    (record,) = [e.record for e in iter_events(desk)]
    assert "AKIA" not in record["content"] and "[REDACTED:" in record["content"]
    assert (desk.root / "MEMORY.md").read_text() == "a person's hand edit\n"


def test_the_cli_shows_progress_on_stderr_when_it_is_not_a_terminal(desk: DeskFolder, identity: None,
                                                                   run: DeskRunner) -> None:
    result = run("import", "chat-export", str(SOURCES["chat-export"]), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["counts"]["records_new"] == 3  # stdout stays one JSON object
    lines = result.stderr.splitlines()  # CliRunner's stderr is no terminal: a line per report
    assert lines[0] == "import (validate, append the records): 0/6 (0%)"
    assert lines[-1] == "import (validate, append the records): 6/6 (100%)"
    quiet = run("import", "chat-export", str(SOURCES["chat-export"]), "--no-progress")
    assert quiet.exit_code == 0 and "append the records" not in quiet.stderr


def test_a_chat_message_more_than_a_day_ahead_is_refused_naming_it_and_nothing_is_written(
        desk: DeskFolder, identity: None, run: DeskRunner, tmp_path: Path) -> None:
    """A record's time comes from the user's export: more than 24 hours after the real now is
    refused (exit 2) naming the record, as `desk archive append --at` is; nothing is written."""
    from desk.text.times import format_time, utc_now

    source = tmp_path / "conversations.json"
    for far in (utc_now() + dt.timedelta(hours=25), dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)):
        messages = [{"uuid": f"m{n}", "sender": "human", "text": f"message {n}", "created_at": format_time(at)}
                    for n, at in enumerate((utc_now() - dt.timedelta(hours=1), far))]
        source.write_text(json.dumps([{"uuid": "c-1", "name": "Chat", "chat_messages": messages}]))
        before = snapshot(desk.root)
        result = run("import", "chat-export", str(source))
        assert result.exit_code == 2, result.output
        assert f"conversations.json: conversation 0, message 1: at '{format_time(far)}' is more than 24 hours " \
               "after now" in result.output, result.output
        assert "\nhint: " in result.output and snapshot(desk.root) == before
