"""`desk serve --http` requires a bearer token: a request without it, or with a wrong one, is 401
and reads or writes nothing; the token is made once (0600, in the git folder) or read from
--token-file."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from desk.layout import DeskFolder
from desk.serve.token import ServeToken, serve_token
from tests.conftest import DeskRunner, git, snapshot
from tests.serve.mcp_client import call, http_server, http_session

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
REMEMBER = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"name": "tea", "body": "Green tea.", "type": "preference",
                                                         "description": "Drink of choice", "triggers": ["tea"]}}}
APPEND = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "archive_append", "arguments": {"kind": "progress", "content": "did a thing"}}}


def stored_token(desk: DeskFolder) -> str:
    return (desk.git_dir / "desk-serve-token").read_text().strip()


def post(port: int, message: dict[str, Any], authorization: str | None = None,
         session: str | None = None, method: str = "POST") -> Any:
    import httpx2

    headers = dict(MCP_HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    if session is not None:
        headers["Mcp-Session-Id"] = session
    return httpx2.request(method, f"http://127.0.0.1:{port}/mcp", headers=headers,
                          content=json.dumps(message) if method == "POST" else None, timeout=30)


def test_a_request_without_the_token_is_401_and_touches_nothing(desk: DeskFolder, identity: None) -> None:
    with http_server(desk.root) as (port, _proc):
        token = stored_token(desk)
        wrong = [None, "", "Bearer", f"Basic {token}", f"Bearer {token[:-1]}", f"Bearer {token}x",
                 f"Bearer {token.upper()}", f"Bearer  {token}", f"Bearer {token[::-1]}"]
        before, count = snapshot(desk.root), git(desk.root, "rev-list", "--count", "HEAD")
        for authorization in wrong:  # not even a session starts
            refused = post(port, INITIALIZE, authorization)
            assert refused.status_code == 401, (authorization, refused.text)
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert "mcp-session-id" not in refused.headers
        opened = post(port, INITIALIZE, f"Bearer {token}")
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        for authorization in wrong:  # a session's id is no key: each request needs the token
            for message in (REMEMBER, APPEND):
                assert post(port, message, authorization, session).status_code == 401
            assert post(port, {}, authorization, session, method="GET").status_code == 401
            assert post(port, {}, authorization, session, method="DELETE").status_code == 401
        assert snapshot(desk.root) == before
        assert git(desk.root, "rev-list", "--count", "HEAD") == count
        # the session the refused DELETEs named is still open, and with the token a call writes
        good = f"Bearer {token}"
        assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, good, session).status_code == 202
        assert post(port, REMEMBER, good, session).status_code == 200
    assert (desk.root / "memory" / "tea.md").is_file()
    assert int(git(desk.root, "rev-list", "--count", "HEAD")) == int(count) + 1


def test_the_token_is_made_once_owner_only_in_the_git_folder_and_kept_across_restarts(
        desk: DeskFolder, identity: None) -> None:
    path = desk.git_dir / "desk-serve-token"
    assert not path.exists()
    with http_server(desk.root) as (port, proc):
        token = stored_token(desk)

        async def main() -> None:
            async with http_session(port, token) as s:
                assert (await call(s, "now_show"))["path"] == "NOW.md"
        anyio.run(main)
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        told = proc.stderr.read().decode()
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(token) >= 43 and set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert f"http://127.0.0.1:{port}/mcp" in told and "Authorization: Bearer TOKEN" in told
    assert str(path) in told and "made now" in told and token not in told  # where it is, never the token
    assert git(desk.root, "status", "--porcelain") == ""  # in .git: never committed
    with http_server(desk.root) as (port, proc):
        assert stored_token(desk) == token  # kept: a client's configured header keeps working

        async def again() -> None:
            async with http_session(port, token) as s:
                await call(s, "now_show")
        anyio.run(again)
        proc.terminate()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        assert "made now" not in proc.stderr.read().decode()


def test_a_token_file_is_used_instead_of_the_desk_s_own(desk: DeskFolder, tmp_path: Path, identity: None) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("my-own-token-0123456789\n")
    token_file.chmod(0o600)
    with http_server(desk.root, "--token-file", str(token_file)) as (port, _proc):
        assert post(port, INITIALIZE, "Bearer my-own-token-0123456789").status_code == 200
        assert post(port, INITIALIZE).status_code == 401
        assert not (desk.git_dir / "desk-serve-token").exists()  # none made


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and symlinks")
def test_a_token_file_others_may_read_a_symlink_or_no_token_is_refused(run: DeskRunner, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("my-own-token-0123456789\n")
    token_file.chmod(0o644)
    serve = ("serve", "--http", "127.0.0.1:8765", "--token-file")
    result = run(*serve, str(token_file))
    assert result.exit_code == 2 and "other users may read or write the token" in result.output
    assert f"chmod 600 {token_file}" in result.output
    token_file.chmod(0o600)
    (tmp_path / "link").symlink_to(token_file)
    result = run(*serve, str(tmp_path / "link"))
    assert result.exit_code == 2 and "a symlink (not followed)" in result.output
    for bad in ("", "\n\n", "two words\n", "x" * 5000):
        token_file.write_text(bad)
        result = run(*serve, str(token_file))
        assert result.exit_code == 2 and "not a token" in result.output, bad
    assert run(*serve, str(tmp_path / "missing")).exit_code == 2
    result = run("serve", "--token-file", str(token_file))
    assert result.exit_code == 2 and "--token-file is for --http" in result.output


def test_a_token_matches_only_itself(tmp_path: Path) -> None:
    token = serve_token(tmp_path)
    assert token.created and serve_token(tmp_path) == ServeToken(token.value, token.path, False)
    assert token.matches(token.value)
    for other in ("", token.value[:-1], token.value + " ", token.value.upper(), "\udcff" + token.value):
        assert not token.matches(other)
