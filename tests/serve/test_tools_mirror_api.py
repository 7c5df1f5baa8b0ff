"""The MCP tools mirror the API (issue 31): updates keep what they do not name, the gate's
session refusal, unknown arguments refused by name, project and user scopes isolated. Each runs
against a real `desk serve` process through the SDK's own client, over stdio and over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from desk.layout import DeskFolder, scope_id
from tests.conftest import DeskRunner, git
from tests.serve.mcp_client import call, http_server, http_session, stdio_session

pytestmark = pytest.mark.usefixtures("identity")
TRANSPORTS = ("stdio", "http")
DEPLOY = dict(name="deploy-day", body="We deploy on Fridays after the noon check.", type="decision",
              description="Which day we deploy", triggers=["deploy", "release"], importance=4,
              expires="2999-01-01T00:00:00Z")


@asynccontextmanager
async def session(root: Path, transport: str, *options: str) -> AsyncIterator[ClientSession]:
    """A session with `desk serve [OPTIONS]` over `transport` (stdio, or HTTP with its token)."""
    if transport == "stdio":
        async with stdio_session(root, options=options) as s:
            yield s
        return
    with http_server(root, *options) as (port, _proc):
        token = (root / ".git/desk-serve-token").read_text().strip()
        async with http_session(port, token) as s:
            yield s


async def refused(s: ClientSession, tool: str, **arguments: Any) -> str:
    """The text of `tool`'s refusal (failing when the call succeeds)."""
    result = await s.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_update_keeps_every_field_it_does_not_name(desk: DeskFolder, transport: str) -> None:
    async def main() -> None:
        async with session(desk.root, transport) as s:
            await call(s, "remember", **DEPLOY)
            changed = await call(s, "remember", name="deploy-day", body="We deploy on Thursdays after the noon check.")
            assert changed["status"] == "updated"
            shown = await call(s, "show_memory", name="deploy-day")
            assert shown["body"].strip() == "We deploy on Thursdays after the noon check."
            assert (shown["type"], shown["description"], shown["triggers"], shown["importance"]) == \
                ("decision", "Which day we deploy", ["deploy", "release"], 4)
            assert shown["expires"] == "2999-01-01T00:00:00Z"
            await call(s, "remember", name="deploy-day", body="We deploy on Thursdays after the noon check.",
                       clear=["importance"])  # emptying a field is said, as the CLI's --no-importance
            cleared = await call(s, "show_memory", name="deploy-day")
            assert "importance" not in cleared and cleared["triggers"] == ["deploy", "release"]
    anyio.run(main)


def test_session_scope_is_refused_with_the_gates_reason_as_the_cli_refuses_it(desk: DeskFolder,
                                                                               run: DeskRunner) -> None:
    before = head(desk.root)

    async def main() -> str:
        async with session(desk.root, "stdio") as s:
            return await refused(s, "remember", **{**DEPLOY, "body": "This time only, check three sources.",
                                                   "scope": "session"})
    text = anyio.run(main)
    assert text.splitlines()[0].endswith("rejected: deploy-day: scope is 'session'; only durable facts become memories")
    assert "NOW.md" in text and "Nothing was written" in text
    assert head(desk.root) == before and not (desk.root / "memory/deploy-day.md").exists()
    cli = run("remember", "deploy-day", "This time only, check three sources.", "--type", "decision",
              "--description", "x", "--scope", "session")
    assert cli.exit_code == 3 and "scope is 'session'; only durable facts become memories" in cli.output


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unknown_argument_is_refused_naming_it_and_writes_nothing(desk: DeskFolder, transport: str) -> None:
    before = head(desk.root)

    async def main() -> None:
        async with session(desk.root, transport) as s:
            text = await refused(s, "remember", **DEPLOY, priority="high")
            assert "priority" in text and "Extra inputs are not permitted" in text
            assert "since" in await refused(s, "recall", query="deploy", since="2026-01-01")
            assert "source_event" in await refused(s, "pref_set", key="response.language", value="x",
                                                   source_event="forged")
    anyio.run(main)
    assert head(desk.root) == before and not (desk.root / "memory/deploy-day.md").exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_call_for_one_project_never_sees_anothers_memories(desk: DeskFolder, transport: str) -> None:
    root = desk.root

    async def main() -> None:
        async with session(root, transport, "--project", "alpha") as s:
            alpha = await call(s, "remember", **DEPLOY)  # no project named: the server's
            assert alpha["path"] == "projects/alpha/memory/deploy-day.md"
            beta = await call(s, "remember", **{**DEPLOY, "body": "Beta ships every Tuesday at dawn.",
                                               "triggers": ["deploy", "tuesday"]}, project="beta")
            assert beta["path"] == "projects/beta/memory/deploy-day.md"
            listed = await call(s, "list_memories", project="beta")
            assert [m["name"] for m in listed["memories"]] == ["deploy-day"]
            assert "Tuesday" in (await call(s, "show_memory", name="deploy-day", project="beta"))["body"]
            assert "Fridays" in (await call(s, "show_memory", name="deploy-day"))["body"]
            hits = await call(s, "recall", query="deploy", kind="memory", project="beta")
            assert hits["hits"] and all("Fridays" not in str(h) for h in hits["hits"])
            hits = await call(s, "recall", query="deploy", kind="memory")
            assert hits["hits"] and all("Tuesday" not in str(h) for h in hits["hits"])
            wake = await call(s, "context", query="deploy")
            assert "Fridays" in wake["markdown"] and "Tuesday" not in wake["markdown"]
            gone = await call(s, "forget", name="deploy-day", project="beta", reason="beta stopped")
            assert gone["status"] == "deleted" and (root / "projects/alpha/memory/deploy-day.md").is_file()
    anyio.run(main)
    assert not (root / "memory/deploy-day.md").exists()  # nothing desk-wide
    assert "Desk-Reason: beta stopped" in git(root, "log", "-1", "--format=%(trailers)")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_call_for_one_user_never_sees_anothers_preferences(desk: DeskFolder, transport: str) -> None:
    root, xid, yid = desk.root, scope_id("x@example.org"), scope_id("y@example.org")

    async def main() -> None:
        async with session(root, transport, "--user", "x@example.org") as s:
            mine = await call(s, "pref_set", key="response.language", value="French")  # the server's user
            assert mine["user_scope"] == xid
            theirs = await call(s, "pref_set", key="response.language", value="Korean", user="y@example.org")
            assert theirs["user_scope"] == yid
            await call(s, "pref_set", key="response.tone", value="dry", user="y@example.org")
            assert [p["value"] for p in (await call(s, "pref_list"))["preferences"]] == ["French"]
            assert [p["value"] for p in (await call(s, "pref_list", user="y@example.org"))["preferences"]] == \
                ["Korean", "dry"]
            assert "Korean" in str(await call(s, "pref_get", key="response.language", user="y@example.org"))
            assert "French" in str(await call(s, "pref_get", key="response.language"))
            assert "response.tone" in await refused(s, "pref_get", key="response.tone")  # y's only
            wake = await call(s, "context")
            assert "French" in wake["markdown"] and "Korean" not in wake["markdown"] and "dry" not in wake["markdown"]
            deleted = await call(s, "pref_delete", key="response.language", user="y@example.org")
            assert deleted["status"] == "deleted"
            history = await call(s, "pref_history", key="response.language")
            assert len(history["commits"]) == 1  # x's one change, none of y's
    anyio.run(main)
    assert (root / f"users/{xid}/prefs/response.language.md").is_file()
    assert not (root / f"users/{yid}/prefs/response.language.md").exists()
    assert "Desk-Actor: assistant" in git(root, "log", "-1", "--format=%(trailers)")


def test_forget_with_a_reason_then_restore_brings_the_file_back_byte_for_byte(desk: DeskFolder) -> None:
    root = desk.root

    async def main() -> None:
        async with session(root, "stdio") as s:
            await call(s, "remember", **DEPLOY)
            before = (root / "memory/deploy-day.md").read_bytes()
            await call(s, "forget", name="deploy-day", reason="moved to the team wiki")
            assert "Desk-Reason: moved to the team wiki" in git(root, "log", "-1", "--format=%(trailers)")
            back = await call(s, "restore", name="deploy-day")
            assert back["status"] == "restored" and (root / "memory/deploy-day.md").read_bytes() == before
            assert "deploy-day" in await refused(s, "restore", name="deploy-day")  # no earlier version
    anyio.run(main)
    log = git(root, "log", "-1", "--format=%(trailers)")
    assert "Desk-Op: restore" in log and "Desk-Actor: assistant" in log


def test_the_conflict_queue_is_readable_and_never_decided_through_the_server(desk: DeskFolder) -> None:
    async def main() -> None:
        async with session(desk.root, "stdio") as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            assert {"conflicts_list", "conflicts_show"} <= tools and "resolve" not in tools
            assert (await call(s, "conflicts_list"))["cases"] == []
            assert "no conflict case" in await refused(s, "conflicts_show", case="c-1")
    anyio.run(main)


def test_as_of_reads_what_the_desk_held_then_through_the_server(desk: DeskFolder, monkeypatch: pytest.MonkeyPatch) -> None:
    """issue 33 through MCP: recall, show_memory, list_memories and context with `as_of` answer
    from the commit at or before that time; the work tree is never touched."""
    import desk as desk_api
    from desk.text.times import parse_time

    for when, body in (("2026-02-01T00:00:00Z", "I live in Lisbon."), ("2026-05-01T00:00:00Z", "I live in Porto.")):
        for key in ("GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE"):
            monkeypatch.setenv(key, when)
        desk_api.open(desk.root).remember("home", body, type="fact", description="Where I live",
                                          triggers=["home"], now=parse_time(when))
    status = git(desk.root, "status", "--porcelain")

    async def main() -> None:
        async with stdio_session(desk.root) as s:
            then = "2026-03-01T00:00:00Z"
            assert "Lisbon" in (await call(s, "show_memory", name="home", as_of=then))["body"]
            assert "Porto" in (await call(s, "show_memory", name="home"))["body"]
            [hit] = (await call(s, "recall", query="live home", kind="memory", as_of=then))["hits"]
            assert "Lisbon" in hit["snippet"]
            assert [m["name"] for m in (await call(s, "list_memories", as_of=then))["memories"]] == ["home"]
            before = await call(s, "list_memories", as_of="2025-06-01T00:00:00Z")  # before the desk's first commit
            assert before["memories"] == [] and before["as_of"]["commit"] is None
            context = await call(s, "context", query="home", as_of=then)
            assert "Lisbon" in context["markdown"] and "Porto" not in context["markdown"]
    anyio.run(main)
    assert git(desk.root, "status", "--porcelain") == status
