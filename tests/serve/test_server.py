"""`desk serve`: a real server process, driven by the MCP SDK's own client, writing real commits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from desk.layout import DeskFolder
from tests.conftest import DeskRunner, git
from tests.serve.mcp_client import call, http_server, http_session, server_env, stdio_session

pytestmark = pytest.mark.usefixtures("identity")

TOOLS = {"remember", "forget", "recall", "context", "list_memories", "show_memory", "now_show", "now_set",
         "now_append", "mistake_add", "fact_add", "archive_append", "pref_set", "pref_list",
         "review_list", "review_show", "restore", "pref_get", "pref_delete", "pref_history",
         "conflicts_list", "conflicts_show"}  # review and conflicts: read-only, never accept or resolve
REPORT = dict(name="report-style", body="Reports must be written in Chinese; keep them under 500 characters.",
              type="preference", description="Report language and length", triggers=["report", "writing"])


def trailers(root: Path, rev: str = "HEAD") -> str:
    return git(root, "log", "-1", "--format=%(trailers)", rev)


def test_tools_are_the_agent_surface_and_carry_no_provenance_fields(desk: DeskFolder) -> None:
    async def main() -> None:
        async with stdio_session(desk.root) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == TOOLS  # no resolve, migrate, hooks, validate, doctor ...
            schema = tools["remember"].input_schema
            assert set(schema["properties"]) == {"name", "body", "type", "description", "triggers",
                                                 "importance", "expires", "clear", "scope", "project"}
            assert schema["required"] == ["name", "body"]  # an update names only what changes
            assert schema["properties"]["type"]["anyOf"][0]["enum"][0] == "preference"  # optional: an update keeps it
            for tool in tools.values():
                assert tool.description
                assert tool.input_schema["additionalProperties"] is False  # unknown arguments refused
                props = set(tool.input_schema.get("properties", {}))
                assert not props & {"source_event", "evidence", "actor", "at", "meta", "redact", "source", "now"}
            assert set(tools["pref_set"].input_schema["properties"]) == {"key", "value", "expires", "user"}
    anyio.run(main)


def test_each_tool_writes_one_commit_as_the_assistant_naming_the_client(desk: DeskFolder) -> None:
    root = desk.root

    async def main() -> None:
        async with stdio_session(root, client="claude-code") as s:
            made = await call(s, "remember", **REPORT)
            assert made["status"] == "created" and (root / "memory/report-style.md").is_file()
            assert made["commit"] == git(root, "rev-parse", "HEAD").strip()
            assert "Desk-Actor: assistant" in trailers(root)
            assert "Desk-Client: claude-code 1.0" in trailers(root)
            assert (await call(s, "remember", **REPORT))["status"] == "unchanged"

            shown = await call(s, "show_memory", name="report-style")
            assert shown["type"] == "preference" and shown["source"] == "agent"
            listed = await call(s, "list_memories")
            assert [m["name"] for m in listed["memories"]] == ["report-style"]
            hits = await call(s, "recall", query="report writing")
            assert hits["hits"][0]["id"] == "memory:report-style"
            assert hits["hits"][0]["provenance"]["commit"] == made["commit"]
            context = await call(s, "context", query="write the report")
            assert "report-style" in context["markdown"]

            await call(s, "now_set", text="Ship the MCP server", section="doing")
            await call(s, "now_append", text="write docs/agents.md", section="next")
            spot = await call(s, "context", mode="spot")  # the key-turn spot check (issue 18)
            assert spot["mode"] == "spot" and "Ship the MCP server" in spot["markdown"]
            assert "report-style" not in spot["markdown"]  # no MEMORY.md in a spot check
            now = await call(s, "now_show")
            assert "Ship the MCP server" in str(now) and "write docs/agents.md" in str(now)
            assert "Desk-Client: claude-code 1.0" in trailers(root)

            await call(s, "mistake_add", what="Guessed the SDK API", context="writing desk serve",
                       cause="read v1 examples", avoid="read the installed SDK's source")
            assert "Guessed the SDK API" in (root / "MISTAKES.md").read_text()
            assert "Desk-Client: claude-code 1.0" in trailers(root)

            fact = await call(s, "fact_add", text="We deploy on Fridays", kind="decision", importance=4,
                              key="deploy-day")
            event = await call(s, "archive_append", kind="progress", content="server tests written")
            assert fact["id"] != event["id"]
            archived = "".join(p.read_text() for p in (root / ".system/archive").glob("*.jsonl"))
            assert "We deploy on Fridays" in archived and "server tests written" in archived

            gone = await call(s, "forget", name="report-style", reason="the user changed their mind")
            assert gone["status"] == "deleted" and not (root / "memory/report-style.md").exists()
            assert "Desk-Client: claude-code 1.0" in trailers(root)
    anyio.run(main)
    assert git(root, "status", "--porcelain", "--", "memory", "MEMORY.md", "NOW.md", "MISTAKES.md") == ""
    subjects = git(root, "log", "--format=%s").splitlines()
    assert subjects[0] == "forget: report-style" and subjects.count("remember: report-style") == 1


def test_a_gate_rejection_is_a_tool_error_saying_what_to_change_and_writes_nothing(desk: DeskFolder) -> None:
    async def main() -> None:
        async with stdio_session(desk.root) as s:
            await call(s, "remember", **REPORT)
            head = git(desk.root, "rev-parse", "HEAD")
            duplicate = await s.call_tool("remember", {**REPORT, "name": "report-copy"})
            assert duplicate.is_error
            text = duplicate.content[0].text  # type: ignore[union-attr]
            assert "rejected" in text and "hint:" in text and "Nothing was written" in text
            bad_type = await s.call_tool("remember", {**REPORT, "name": "other", "type": "mood",
                                                     "body": "Something else entirely."})
            assert bad_type.is_error and "type" in bad_type.content[0].text  # type: ignore[union-attr]
            missing = await s.call_tool("show_memory", {"name": "nope"})
            assert missing.is_error and "desk list" in missing.content[0].text  # type: ignore[union-attr]
            assert git(desk.root, "rev-parse", "HEAD") == head
            assert not (desk.root / "memory/report-copy.md").exists()
    anyio.run(main)


def test_resources_and_the_wake_up_prompt(desk: DeskFolder) -> None:
    async def main() -> None:
        async with stdio_session(desk.root) as s:
            await call(s, "remember", **REPORT)
            uris = {str(r.uri) for r in (await s.list_resources()).resources}
            assert uris == {f"desk://{f}" for f in ("AGENTS.md", "SOUL.md", "NOW.md", "MEMORY.md", "MISTAKES.md")}
            templates = (await s.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["desk://memory/{name}"]
            soul = await s.read_resource("desk://SOUL.md")
            assert soul.contents[0].text == (desk.root / "SOUL.md").read_text()  # type: ignore[union-attr]
            index = await s.read_resource("desk://MEMORY.md")
            assert "report-style" in index.contents[0].text  # type: ignore[union-attr]
            memory = await s.read_resource("desk://memory/report-style")
            assert memory.contents[0].text == (desk.root / "memory/report-style.md").read_text()  # type: ignore[union-attr]
            prompt = await s.get_prompt("wake_up", {})
            text = prompt.messages[0].content.text  # type: ignore[union-attr]
            assert text.startswith("# Desk context") and "report-style" in text
    anyio.run(main)


def test_two_clients_writing_at_once_all_land(desk: DeskFolder) -> None:
    per_client = 6

    async def client(name: str) -> None:
        async with stdio_session(desk.root, client=name) as s:
            for n in range(per_client):
                made = await call(s, "remember", name=f"{name}-{n}", type="fact", description=f"{name} fact {n}",
                                  body=f"Fact number {n} written by {name}.", triggers=[name])
                assert made["status"] == "created"

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client, "alpha")
            tg.start_soon(client, "beta")
    anyio.run(main)
    clients = git(desk.root, "log", "--format=%(trailers:key=Desk-Client,valueonly)").split()
    assert clients.count("alpha") == clients.count("beta") == per_client
    assert len(list((desk.root / "memory").glob("*.md"))) == 2 * per_client
    index = (desk.root / "MEMORY.md").read_text()
    assert all(f"{c}-{n}" in index for c in ("alpha", "beta") for n in range(per_client))
    assert git(desk.root, "status", "--porcelain") == ""
    git(desk.root, "fsck", "--strict")


def test_serve_over_streamable_http_on_loopback(desk: DeskFolder) -> None:
    with http_server(desk.root) as (port, _proc):
        token = (desk.git_dir / "desk-serve-token").read_text().strip()

        async def main() -> None:
            async with http_session(port, token) as s:
                assert (await call(s, "remember", **REPORT))["status"] == "created"
        anyio.run(main)
    assert "Desk-Actor: assistant" in trailers(desk.root)


def test_http_must_be_loopback(run: DeskRunner) -> None:
    result = run("serve", "--http", "0.0.0.0:8765")
    assert result.exit_code == 2 and "not a loopback address" in result.output
    assert run("serve", "--http", "8765").exit_code == 2
    assert run("serve", "--http", "127.0.0.2:8765").exit_code == 2  # loopback, but no rebinding guard
    assert run("serve", "--http", "[::1]:0").exit_code == 2


def test_serve_without_the_sdk_says_how_to_install_it(desk: DeskFolder) -> None:
    code = ("import sys; sys.modules['mcp'] = None; sys.argv = ['desk', 'serve']; "
            "from desk.cli.main import main; main()")
    proc = subprocess.run([sys.executable, "-c", code], cwd=desk.root, capture_output=True, text=True,
                          env=server_env())
    assert proc.returncode == 1
    assert "hint: install the MCP extra: pip install 'desk[mcp]'" in proc.stderr


def test_calls_at_once_in_one_session_all_answer(desk: DeskFolder) -> None:
    """The recall cache is SQLite, bound to the thread that opened it: concurrent calls must not
    spread it over threads (they did, on the SDK's worker threads, before every desk call got one)."""
    answers: list[dict[str, object]] = []

    async def main() -> None:
        async with stdio_session(desk.root) as s:
            await call(s, "remember", **REPORT)

            async def one(n: int) -> None:
                answers.append(await call(s, "recall", query=f"report writing {n}"))
                answers.append(await call(s, "list_memories"))

            async with anyio.create_task_group() as tg:
                for n in range(8):
                    tg.start_soon(one, n)
    anyio.run(main)
    assert len(answers) == 16


def test_preferences_through_the_server_are_commits_by_the_assistant_with_no_model_provenance(
        desk: DeskFolder) -> None:
    root = desk.root

    async def main() -> None:
        async with stdio_session(root, client="claude-code") as s:
            made = await call(s, "pref_set", key="response.language", value="Chinese")
            assert made["status"] == "created" and made["revision"] == 1 and made["user_scope"] == "owner"
            assert made["commit"] == git(root, "rev-parse", "HEAD").strip()
            assert (await call(s, "pref_set", key="response.language", value="Chinese"))["status"] == "unchanged"
            changed = await call(s, "pref_set", key="response.language", value="English")
            assert (changed["status"], changed["revision"], changed["previous"]) == ("updated", 2, "Chinese")
            listed = await call(s, "pref_list")
            assert [(p["key"], p["value"]) for p in listed["preferences"]] == [("response.language", "English")]
            # provenance is the harness's: arguments a model might invent are refused by name
            forged = await s.call_tool("pref_set", {"key": "response.detail", "value": "short",
                                                    "source_event": "forged-1", "source": "user"})
            assert forged.is_error and "source_event" in forged.content[0].text  # type: ignore[union-attr]
            await call(s, "pref_set", key="response.detail", value="short")
            bad = await s.call_tool("pref_set", {"key": "Not A Key", "value": "x"})
            assert bad.is_error and "Nothing was written" in bad.content[0].text  # type: ignore[union-attr]
    anyio.run(main)
    log = trailers(root)
    assert "Desk-Op: pref" in log and "Desk-Actor: assistant" in log and "Desk-Client: claude-code 1.0" in log
    assert "Desk-Source-Event" not in git(root, "log", "--format=%(trailers)")
    detail = (root / "prefs/response.detail.md").read_text()
    assert "forged-1" not in detail and "source: agent" in detail
    assert "source: agent" in (root / "prefs/response.language.md").read_text()
    assert git(root, "status", "--porcelain") == ""


def test_the_server_user_is_the_default_scope_and_a_named_user_sees_only_their_own(
        desk: DeskFolder) -> None:
    from desk.layout import scope_id

    root, ada = desk.root, scope_id("ada@example.org")

    async def main() -> None:
        async with stdio_session(root) as owner:
            await call(owner, "pref_set", key="response.language", value="Chinese")
        async with stdio_session(root, options=("--user", "ada@example.org")) as s:
            made = await call(s, "pref_set", key="response.language", value="French")  # the server's user
            assert made["user_scope"] == ada and made["path"] == f"users/{ada}/prefs/response.language.md"
            listed = await call(s, "pref_list")
            assert [p["value"] for p in listed["preferences"]] == ["French"]  # never the owner's
            wake = await call(s, "context")
            assert "French" in wake["markdown"] and "Chinese" not in wake["markdown"]
        async with stdio_session(root) as owner:
            assert [p["value"] for p in (await call(owner, "pref_list"))["preferences"]] == ["Chinese"]
    anyio.run(main)
    assert f"Desk-User: {ada}" in trailers(root)  # the owner's last session only read


def test_desk_calls_inline_on_the_loop_and_on_the_worker_thread_answer_alike(desk: DeskFolder) -> None:
    """Over stdio each desk call runs on the event loop's thread, over HTTP on one worker thread:
    the same answers and the same refusals either way, each call on the thread its mode names."""
    import threading

    from mcp.server.mcpserver.exceptions import ToolError

    import desk as desk_api
    from desk.serve.server import build_server

    threads: set[str] = set()
    answers: dict[bool, list[object]] = {}

    async def main(inline: bool) -> None:
        opened = desk_api.open(desk.root)  # one Desk per server, as in `desk serve`
        real_recall = opened.recall

        def recall(*args: object, **kwargs: object) -> object:
            threads.add(threading.current_thread().name)
            return real_recall(*args, **kwargs)  # type: ignore[arg-type]

        opened.recall = recall  # type: ignore[method-assign]
        server = build_server(opened, inline=inline)
        got: list[object] = []
        for tool, arguments in (("fact_add", {"text": f"We ship on Fridays ({inline})", "kind": "decision",
                                              "importance": 3}),
                                ("recall", {"query": "report writing", "limit": 1}), ("now_show", {}),
                                ("show_memory", {"name": "nope"}), ("recall", {"query": "x", "limit": "many"})):
            try:
                result = await server.call_tool(tool, arguments)
            except ToolError as exc:  # what the SDK turns into the is_error result the model reads
                got.append(str(exc))
            else:
                got.append(sorted(result.structured_content))  # type: ignore[union-attr]
        answers[inline] = got

    for inline in (True, False):
        threads.clear()
        anyio.run(main, inline)
        assert threads == ({threading.main_thread().name} if inline else {"desk-serve_0"})
    assert answers[True] == answers[False]
    assert "Nothing was written" in str(answers[True][3]) and "validation error" in str(answers[True][4])


def test_a_write_called_in_process_outside_a_request_names_an_unknown_client(desk: DeskFolder) -> None:
    """A harness may call the server's tools directly (no MCP request, so no client): the write
    still lands, its Desk-Client trailer saying `unknown`."""
    import desk as desk_api
    from desk.serve.server import build_server

    async def main() -> None:
        server = build_server(desk_api.open(desk.root))
        await server.call_tool("remember", {"name": "direct-call", "type": "fact", "description": "Called directly",
                                            "body": "No request around it.", "triggers": ["direct"]})

    anyio.run(main)
    trailers = git(desk.root, "log", "-1", "--format=%(trailers:key=Desk-Client,valueonly)").strip()
    assert trailers == "unknown" and (desk.root / "memory" / "direct-call.md").is_file()


def test_writes_through_the_server_read_the_git_identity_once_as_an_in_process_desk_does(
        desk: DeskFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every write goes through a `with_trailers` copy of the server's Desk: the copies share its
    `Git` object, so `git config` (the identity) runs once per server, not once per write, even
    when the session writes before it ever reads."""
    trace = tmp_path / "git-trace.log"
    monkeypatch.setenv("GIT_TRACE", str(trace))

    async def main() -> None:
        async with stdio_session(desk.root, client="writer") as s:
            for i in range(3):
                made = await call(s, "remember", **{**REPORT, "name": f"report-{i}", "body": f"Report rule {i}."})
                assert made["status"] == "created"
            await call(s, "now_append", text="one more write", section="next")
    anyio.run(main)
    ran = [line.split("trace: built-in: ", 1)[1] for line in trace.read_text().splitlines()
           if "trace: built-in: git " in line]
    assert sum(cmd.startswith("git config") for cmd in ran) == 1, ran
    assert sum(cmd.startswith("git update-ref") for cmd in ran) == 4  # the four commits were made
    assert "Desk-Client: writer 1.0" in trailers(desk.root)


def test_the_sdks_tracing_middleware_is_dropped_unless_a_tracer_provider_is_installed(desk: DeskFolder) -> None:
    """Without an OpenTelemetry provider every span is a no-op, so the SDK's per-message span
    middleware only costs time; with one installed (before the server is built) it stays."""
    from mcp.server._otel import OpenTelemetryMiddleware
    from opentelemetry import trace

    import desk as desk_api
    from desk.serve.server import build_server, tracing_installed

    server = build_server(desk_api.open(desk.root))
    assert server.middleware and not any(isinstance(m, OpenTelemetryMiddleware) for m in server.middleware)
    assert not tracing_installed(trace.ProxyTracerProvider())
    assert tracing_installed(trace.NoOpTracerProvider())
    code = ("import sys\nfrom opentelemetry import trace\ntrace.set_tracer_provider(trace.NoOpTracerProvider())\n"
            "import desk\nfrom desk.serve.server import build_server\n"
            "print([type(m).__name__ for m in build_server(desk.open(sys.argv[1])).middleware])\n")
    proc = subprocess.run([sys.executable, "-c", code, str(desk.root)], capture_output=True, text=True,
                          env=server_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("['OpenTelemetryMiddleware'")


def test_the_assistant_reads_its_pending_proposals_and_cannot_decide_them(desk: DeskFolder, run: DeskRunner) -> None:
    from tests.review.test_review import enable

    enable(desk, {"*": "propose"})
    root, head = desk.root, git(desk.root, "rev-parse", "HEAD").strip()

    async def main() -> None:
        async with stdio_session(root) as s:
            assert (await call(s, "review_list"))["proposals"] == []
            made = await call(s, "remember", **REPORT)
            assert made["status"] == "proposed"
            proposal = made["proposal"]
            listed = (await call(s, "review_list"))["proposals"]
            assert [p["id"] for p in listed] == [proposal]
            assert "memory/report-style.md" in listed[0]["paths"]
            shown = await call(s, "review_show", proposal=proposal)
            assert shown["id"] == proposal and "+Reports must be written in Chinese" in shown["diff"]
            assert "Reports must be written in Chinese" in shown["files"]["memory/report-style.md"]
            woken = await call(s, "context", pending=True)
            assert "PENDING, not yet in memory" in woken["markdown"] and proposal in woken["markdown"]
            assert "PENDING" not in (await call(s, "context"))["markdown"]  # only when asked
            for bad in ("0" * 12, "../../HEAD", "abc\nrefs"):  # not pending, not an id: a tool error
                missing = await s.call_tool("review_show", {"proposal": bad})
                assert missing.is_error and "proposal" in missing.content[0].text  # type: ignore[union-attr]
            assert not ({t.name for t in (await s.list_tools()).tools} & {"review_accept", "review_reject",
                                                                         "accept", "reject"})
    anyio.run(main)
    assert git(root, "rev-parse", "HEAD").strip() == head  # read and proposed: the branch untouched
    assert not (root / "memory/report-style.md").exists()
    listed = run("review", "list", "--json")
    assert listed.exit_code == 0 and len(json.loads(listed.output)["proposals"]) == 1
