"""The public Python API: `desk.open`/`desk.init`, one API call per CLI command, `.to_json()` is `--json`.

Everything runs against real desks made by `desk init` in temporary folders, with real git.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import desk
from desk import api
from desk.cli.main import cli
from desk.errors import (ConflictError, DeskError, GitError, InvalidFileError, NotADeskError, RejectedError,
                         UsageError)

AS_OF = "2026-03-01T00:00:00Z"  # every clock-dependent command gets a fixed time
EDITOR_SCRIPT = """import sys
from pathlib import Path
path = Path(sys.argv[1])
path.write_text(path.read_text().replace("The fact itself", "The gamma fact itself")
                .replace("One line (at most 150 characters) shown in MEMORY.md", "Gamma"))
"""

# Commands that make no API call, and why.
NOT_API = {("hooks", "run"): "hidden: what an installed hook runs (desk.cli.hook), the hooks' own edge",
           ("hooks", "merge"): "hidden: what a merge driver runs once its Python is gone (desk.cli.merge)",
           ("serve",): "a long-running server: each tool call is one API call (tests/serve/)",
           ("ui",): "a long-running server: each page and form is API calls (tests/ui/)",
           ("memory-tool",): "one memory-tool command may read, then write (tests/test_memory_tool.py)"}


def command_paths(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every runnable command of the CLI, as its words (`("archive", "append")`)."""
    paths: set[tuple[str, ...]] = set()
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            paths |= command_paths(command, (*prefix, name))
        else:
            paths.add((*prefix, name))
    return paths


class ApiCalls:
    """Counts the outermost calls into the API (Desk's public methods and desk.api.init)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.opened = 0
        self._depth = 0

    def wrap(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def counted(*args: Any, **kwargs: Any) -> Any:
            if self._depth == 0:
                self.calls.append(name)
            self._depth += 1
            try:
                return func(*args, **kwargs)
            finally:
                self._depth -= 1

        return counted

    def take(self) -> tuple[list[str], int]:
        calls, opened = self.calls, self.opened
        self.calls, self.opened = [], 0
        return calls, opened


@pytest.fixture
def api_calls(monkeypatch: pytest.MonkeyPatch) -> ApiCalls:
    counter = ApiCalls()
    for cls in api.Desk.__mro__:
        for name, member in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(member):
                monkeypatch.setattr(api.Desk, name, counter.wrap(name, getattr(api.Desk, name)))
    monkeypatch.setattr(api, "init", counter.wrap("init", api.init))
    monkeypatch.setattr(api, "clone", counter.wrap("clone", api.clone))
    real_open = api.open

    def counted_open(*args: Any, **kwargs: Any) -> api.Desk:
        counter.opened += 1
        return real_open(*args, **kwargs)

    monkeypatch.setattr(api, "open", counted_open)
    return counter


@pytest.fixture
def desk_root(tmp_path: Path, identity: None) -> Path:
    root = tmp_path / "desk"
    result = CliRunner().invoke(cli, ["init", str(root)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return root


def invocations(tmp_path: Path, event_id: str) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """Each command with valid arguments, in an order that works on one desk."""
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"kind": "inbound", "at": "2026-01-03T09:00:00Z", "session": "s2",
                                  "content": "an imported line"}) + "\n")
    yield ("init",), ["init", str(tmp_path / "second")]
    yield ("remember",), ["remember", "alpha", "The alpha fact body.", "--type", "fact", "-d", "About alpha",
                          "-t", "alpha"]
    yield ("show",), ["show", "alpha", "--json"]
    yield ("list",), ["list", "--type", "fact"]
    yield ("history",), ["history", "alpha", "--json"]
    yield ("log",), ["log", "-n", "5"]
    yield ("reindex",), ["reindex"]
    yield ("edit",), ["edit", "gamma"]
    yield ("set",), ["set", "beta", "--add-trigger", "second beta", "--importance", "4"]
    yield ("diff",), ["diff", "beta", "--json"]
    yield ("rename",), ["rename", "beta", "beta-fact"]
    yield ("forget",), ["forget", "beta-fact", "--reason", "superseded", "--json"]
    yield ("restore",), ["restore", "beta-fact", "--json"]
    yield ("forget",), ["forget", "beta-fact", "--json"]
    yield ("validate",), ["validate"]
    yield ("validate",), ["validate", "--all", "--json"]
    yield ("validate",), ["validate", "--fix"]
    yield ("hooks", "uninstall"), ["hooks", "uninstall"]
    yield ("hooks", "install"), ["hooks", "install"]
    yield ("doctor",), ["doctor", "--json"]
    yield ("migrate",), ["migrate", "--dry-run"]
    yield ("migrate",), ["migrate", "--json"]
    yield ("recall",), ["recall", "beta", "--now", AS_OF]
    yield ("recall",), ["recall", "beta", "--now", AS_OF, "--json"]
    yield ("recall",), ["recall", "beta", "--now", AS_OF, "--xml"]
    yield ("context",), ["context", "--query", "alpha", "--now", AS_OF, "--section-budget", "mistakes=400"]
    yield ("context",), ["context", "--format", "json", "--now", AS_OF]
    yield ("stats",), ["stats"]
    yield ("stats",), ["stats", "--json"]
    yield ("fact", "add"), ["fact", "add", "The runtime is Python 3.12", "--kind", "decision",
                            "--importance", "4", "--key", "runtime.python-version", "--at", "2026-01-02T11:00:00Z"]
    yield ("fact", "add"), ["fact", "add", "The runtime is Python 3.11", "--kind", "decision",
                            "--importance", "4", "--key", "runtime.python-version", "--at", "2026-01-02T11:00:00Z"]
    yield ("digest",), ["digest", "--as-of", AS_OF, "--json"]  # a tie: one open case
    yield ("conflicts", "list"), ["conflicts"]  # the group alone lists
    yield ("conflicts", "list"), ["conflicts", "--all", "--json"]
    yield ("conflicts", "list"), ["conflicts", "list", "--json"]
    queue = tmp_path / "desk" / ".system" / "conflicts.json"
    case = json.loads(queue.read_text())["cases"][0] if queue.exists() else {
        "id": "case-0", "candidates": [{"id": "cand-0"}]}
    yield ("conflicts", "show"), ["conflicts", "show", case["id"]]
    yield ("resolve",), ["resolve", case["id"], case["candidates"][0]["id"], "--expected-revision", "1",
                         "--event-id", "review:1", "--actor", "ada@example.org", "--rationale", "tested"]
    yield ("archive", "append"), ["archive", "append", "a routine ran", "--kind", "routine",
                                  "--at", "2026-01-02T12:00:00Z", "-m", "job=nightly"]
    yield ("archive", "import"), ["archive", "import", str(events), "--no-progress"]
    yield ("archive", "list"), ["archive", "list", "--since", "2026-01-02", "-n", "10"]
    yield ("archive", "list"), ["archive", "list", "--kind", "inbound", "--json"]
    yield ("archive", "show"), ["archive", "show", event_id]
    yield ("archive", "verify"), ["archive", "verify"]
    yield ("checkpoint",), ["checkpoint", "--json"]
    yield ("now", "show"), ["now", "show"]
    yield ("now", "show"), ["now", "show", "--section", "doing", "--json"]
    yield ("now", "set"), ["now", "set", "Writing the API tests", "--section", "doing"]
    yield ("now", "append"), ["now", "append", "Then the docs", "--section", "next"]
    yield ("mistake", "add"), ["mistake", "add", "--what", "Forgot --at", "--context", "a test",
                               "--cause", "the clock", "--avoid", "pass fixed times"]
    yield ("mistake", "list"), ["mistake", "list", "--json"]
    yield ("conversations", "render"), ["conversations", "render", "--date", "2026-01-02"]
    yield ("export",), ["export", "jsonl", str(tmp_path / "export.jsonl")]
    yield ("import",), ["import", "jsonl", str(tmp_path / "export.jsonl"), "--dry-run"]
    yield ("import",), ["import", "jsonl", str(tmp_path / "export.jsonl"), "--json"]
    yield ("setup", "claude-code"), ["setup", "claude-code", str(tmp_path), "--dry-run", "--json"]
    yield ("setup", "claude-desktop"), ["setup", "claude-desktop", "--dry-run"]
    yield ("setup", "cursor"), ["setup", "cursor", str(tmp_path), "--dry-run"]
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    if (tmp_path / "desk").is_dir():  # (the command-table check only lists the commands)
        subprocess.run(["git", "-C", str(tmp_path / "desk"), "remote", "add", "origin", str(remote)], check=True)
    yield ("sync",), ["sync", "-q"]
    yield ("sync",), ["sync", "--no-push", "--json"]
    yield ("clone",), ["clone", "-q", str(remote), str(tmp_path / "third")]
    yield ("user", "set"), ["--user", "ada@example.org", "user", "set", "name=Ada", "timezone=UTC+1"]
    yield ("user", "show"), ["user", "show", "--user", "ada@example.org", "--json"]
    yield ("user", "unset"), ["user", "unset", "timezone", "--user", "ada@example.org"]
    yield ("pref", "set"), ["pref", "set", "response.language", "English", "--at", "2026-01-02T10:00:00Z",
                            "--source-event", event_id]
    yield ("pref", "get"), ["pref", "get", "response.language", "--as-of", AS_OF]
    yield ("pref", "list"), ["pref", "list", "--all", "--json"]
    yield ("pref", "history"), ["pref", "history", "response.language"]
    yield ("pref", "delete"), ["pref", "delete", "response.language", "--json"]
    yield from review_invocations(tmp_path / "desk")


def review_invocations(root: Path) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """`desk review`'s commands, review mode switched on by hand first (docs/review.md)."""
    if root.is_dir():  # (the command-table check only lists the commands)
        config = json.loads((root / ".system/desk.json").read_text())
        config["review"] = {"*": "propose"}
        (root / ".system/desk.json").write_text(json.dumps(config, indent=2) + "\n")
        subprocess.run(["git", "-C", str(root), "commit", "-qam", "review mode"], check=True)

    def latest() -> str:
        if not root.is_dir():
            return "0" * 12
        out = subprocess.run(["git", "-C", str(root), "for-each-ref", "--sort=-creatordate",
                              "--format=%(refname:lstrip=3)", "refs/desk/proposals/"],
                             capture_output=True, text=True, check=True).stdout.split()
        return out[0] if out else "0" * 12

    yield ("remember",), ["remember", "omega", "The omega fact body.", "--type", "fact", "-d", "About omega",
                          "--actor", "assistant", "--json"]
    yield ("review", "list"), ["review"]  # the group alone lists
    yield ("review", "list"), ["review", "list", "--rejected", "--json"]
    yield ("review", "show"), ["review", "show", latest()]
    yield ("review", "accept"), ["review", "accept", latest(), "--edit", "--json"]
    yield ("forget",), ["forget", "omega", "--reason", "tested", "--actor", "assistant"]
    yield ("review", "reject"), ["review", "reject", latest(), "--reason", "kept after all"]


def test_every_cli_command_makes_exactly_one_api_call(desk_root: Path, tmp_path: Path, api_calls: ApiCalls,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    d = desk.open(desk_root)
    d.remember("beta", "The beta fact body.", type="fact", description="About beta", triggers=["beta"])
    event = d.archive_append("inbound", "hello about beta", session="s1", actor="user",
                             at="2026-01-02T10:00:00Z")
    d.archive_append("outbound", "hi there", session="s1", actor="assistant", at="2026-01-02T10:01:00Z")
    (tmp_path / "editor.py").write_text(EDITOR_SCRIPT)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {tmp_path / 'editor.py'}")
    api_calls.take()

    runner = CliRunner()
    seen: set[tuple[str, ...]] = set()
    wrong: dict[str, object] = {}
    for path, args in invocations(tmp_path, event.id):
        result = runner.invoke(cli, ["--desk", str(desk_root), *args], catch_exceptions=False)
        assert result.exit_code == 0, (args, result.output)
        calls, opened = api_calls.take()
        if len(calls) != 1 or opened > 1:
            wrong[" ".join(args)] = (calls, opened)
        seen.add(path)
    assert wrong == {}
    assert seen == command_paths() - set(NOT_API), "give every new command valid arguments here"


def test_the_command_table_names_every_command(tmp_path: Path) -> None:
    """A new command cannot be left out of the one-call test: this fails until it is listed."""
    listed = {path for path, _args in invocations(tmp_path, "id")}
    assert NOT_API.keys() <= command_paths()
    assert listed | set(NOT_API) == command_paths()


def cli_json(root: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--desk", str(root), *args, "--json"], catch_exceptions=False)
    return json.loads(result.output)


def as_printed(data: dict[str, Any]) -> Any:
    """What the CLI's JSON printer makes of `data`."""
    return json.loads(json.dumps(data, ensure_ascii=False, default=str))


def test_to_json_is_the_cli_json(desk_root: Path) -> None:
    d = desk.open(desk_root)
    written = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)  # after AS_OF: recall at AS_OF cannot see it
    d.remember("alpha", "The alpha fact body.", type="fact", description="About alpha", triggers=["alpha"],
               now=written)
    event = d.archive_append("inbound", "we talked about alpha", session="s1", at="2026-01-02T10:00:00Z")
    d.mistake_add(what="w", context="c", cause="k", avoid="a")
    remembered = cli_json(desk_root, "remember", "alpha", "The alpha fact body.", "--type", "fact",
                          "-d", "About alpha", "-t", "alpha")
    assert remembered["status"] == "unchanged"
    assert as_printed(d.remember("alpha", "The alpha fact body.", type="fact", description="About alpha",
                                 triggers=["alpha"]).to_json()) == remembered
    pairs = [
        (d.show("alpha"), ["show", "alpha"]),
        (d.list(), ["list"]),
        (d.log(), ["log"]),
        (d.history("alpha"), ["history", "alpha"]),
        (d.recall("alpha", now=AS_OF), ["recall", "alpha", "--now", AS_OF]),
        (d.context(query="alpha", now=AS_OF), ["context", "--query", "alpha", "--now", AS_OF]),
        (d.now_show(section="doing"), ["now", "show", "--section", "doing"]),
        (d.mistake_list(), ["mistake", "list"]),
        (d.archive_list(), ["archive", "list"]),
        (d.archive_show(event.id), ["archive", "show", event.id]),
        (d.conflicts(), ["conflicts"]),
        (d.validate("all"), ["validate", "--all"]),
    ]
    for result, args in pairs:
        assert as_printed(result.to_json()) == cli_json(desk_root, *args), args
    assert [hit.id for hit in d.recall("alpha", now=AS_OF).value.hits] == [f"event:{event.id}"]
    later = [hit.id for hit in d.recall("alpha", now="2026-07-01T00:00:00Z").value.hits]
    assert later == ["memory:alpha", f"event:{event.id}"]


def test_text_is_the_cli_human_output(desk_root: Path) -> None:
    d = desk.open(desk_root)
    d.remember("alpha", "The alpha fact body.", type="fact", description="About alpha", triggers=["alpha"])
    for result, args in [(d.list(), ["list"]), (d.show("alpha"), ["show", "alpha"]), (d.log(), ["log"])]:
        out = CliRunner().invoke(cli, ["--desk", str(desk_root), *args], catch_exceptions=False).output
        assert out == result.text() + "\n"
    out = CliRunner().invoke(cli, ["--desk", str(desk_root), "context", "--now", AS_OF]).output
    assert out == d.context(now=AS_OF).text()


def test_init_and_open_return_the_same_kind_of_object(tmp_path: Path, identity: None) -> None:
    made = desk.init(tmp_path / "d")
    opened = desk.open(tmp_path / "d")
    assert type(made) is type(opened) is desk.Desk
    assert made == opened and made.root == (tmp_path / "d").resolve()
    assert made.initialized is not None and made.initialized.value.status == "created"
    assert opened.initialized is None
    again = desk.init(str(tmp_path / "d"))
    assert again == made and again.initialized is not None and again.initialized.value.status == "exists"
    assert made.remember("x", "The x fact.", type="fact", description="x").value.status == "created"
    assert opened.show("x").memory.body == "The x fact.\n"


def test_error_kinds_carry_the_design_exit_codes() -> None:
    """docs/design.md §5: 1 error, 2 usage, 3 rejected, 4 conflict; all one hierarchy."""
    codes = {DeskError: 1, NotADeskError: 1, GitError: 1, UsageError: 2, RejectedError: 3,
             InvalidFileError: 3, ConflictError: 4}
    for kind, code in codes.items():
        assert issubclass(kind, DeskError) and kind.exit_code == code
        assert getattr(desk, kind.__name__) is kind


def test_api_errors_are_the_cli_exit_codes(desk_root: Path, tmp_path: Path) -> None:
    d = desk.open(desk_root)
    d.remember("alpha", "The alpha fact body.", type="fact", description="About alpha")
    (desk_root / "memory" / "alpha.md").write_text("a person's unsaved edit\n")
    cases: list[tuple[Callable[[], object], type[DeskError], list[str]]] = [
        (lambda: desk.open(tmp_path / "nowhere"), NotADeskError, ["--desk", str(tmp_path / "nowhere"), "list"]),
        (lambda: d.forget("missing"), DeskError, ["forget", "missing"]),
        (lambda: d.recall("?!"), UsageError, ["recall", "?!"]),
        (lambda: d.remember("later", "Check three sources this time.", type="fact", description="d",
                            scope="session"), RejectedError,
         ["remember", "later", "Check three sources this time.", "--type", "fact", "-d", "d", "--scope", "session"]),
        (lambda: d.remember("alpha", "A new alpha body.", type="fact", description="About alpha"),
         ConflictError, ["remember", "alpha", "A new alpha body.", "--type", "fact", "-d", "About alpha"]),
    ]
    for call, kind, args in cases:
        with pytest.raises(DeskError) as caught:
            call()
        assert isinstance(caught.value, kind) and caught.value.exit_code == kind.exit_code, args
        full = args if args[0] == "--desk" else ["--desk", str(desk_root), *args]
        result = CliRunner().invoke(cli, full)
        assert result.exit_code == caught.value.exit_code == kind.exit_code, (args, result.output)
    with pytest.raises(RejectedError) as rejected:
        d.remember("later", "Check three sources this time.", type="fact", description="d", scope="session")
    assert rejected.value.to_json()["reason"] == "session_only"


def test_import_desk_is_light_and_names_resolve() -> None:
    code = ("import sys, desk; before = sorted(m for m in sys.modules if m.startswith('desk')); "
            "names = [getattr(desk, n) for n in desk.__all__]; print(before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['desk']"
    assert desk.open is api.open and desk.Desk is api.Desk
    assert set(desk.__all__) >= {"Desk", "open", "init", "clone", "Recalled", "MemoryChange", "Synced"}
    with pytest.raises(AttributeError):
        desk.no_such_name  # noqa: B018


def test_one_desk_object_recalls_warm_and_sees_every_change(desk_root: Path) -> None:
    """The search cache stays open between recalls on one Desk and is refreshed by each call."""
    with desk.open(desk_root) as d:
        at = dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc)
        d.remember("alpha", "The alpha fact body.", type="fact", description="About alpha", triggers=["alpha"],
                   now=at)
        assert [h.id for h in d.recall("alpha", now=AS_OF).value.hits] == ["memory:alpha"]
        cache = d._search_cache
        assert cache is not None
        d.remember("alpha-two", "Another alpha fact.", type="fact", description="More alpha", triggers=["alpha"],
                   now=at)
        d.forget("alpha")
        assert [h.id for h in d.recall("alpha", now=AS_OF).value.hits] == ["memory:alpha-two"]
        assert d._search_cache is cache  # the same warm cache, refreshed
    assert d._search_cache is None  # closed on leaving the with-block
    assert [h.id for h in d.recall("alpha", now=AS_OF).value.hits] == ["memory:alpha-two"]
    d.close()


def test_with_trailers_adds_trailers_to_every_commit_and_never_overrides_the_operation_s(
        desk_root: Path) -> None:
    d = desk.open(desk_root)
    tagged = d.with_trailers({"Desk-Client": "claude-code 2.0", "Desk-Actor": "forged"})
    tagged.remember("alpha", "The alpha fact.", type="fact", description="About alpha", actor="assistant")
    tagged.now_append("something", section="next")
    for rev in ("HEAD", "HEAD~1"):
        trailers = subprocess.run(["git", "log", "-1", "--format=%(trailers)", rev], cwd=desk_root,
                                  capture_output=True, text=True, check=True).stdout
        assert "Desk-Client: claude-code 2.0" in trailers
        assert "Desk-Actor: assistant" in trailers and "forged" not in trailers
    d.remember("beta", "The beta fact.", type="fact", description="About beta")  # the original is untouched
    plain = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=desk_root, capture_output=True,
                           text=True, check=True).stdout
    assert "Desk-Client" not in plain
    for bad in ({"Bad Key": "x"}, {"Desk-Client": " \n "}, {"Key:": "x"}):
        with pytest.raises(UsageError):
            d.with_trailers(bad)


def test_one_string_where_a_list_belongs_is_refused(tmp_path: Path, identity: None) -> None:
    """`remember(..., triggers="report")` stored the triggers r, e, p, o, r, t: a str is a
    Sequence[str]. Every list argument of the API refuses one string, naming it, with nothing written."""
    from tests.conftest import snapshot

    d = desk.init(tmp_path / "d")
    d.remember("x", "The x fact.", type="fact", description="x", triggers=["x"])
    before = snapshot(d.root)
    calls = {"triggers": lambda: d.remember("y", "The y fact.", type="fact", description="y", triggers="report"),
             "clear": lambda: d.remember("x", "The x fact.", clear="triggers"),
             "add_triggers": lambda: d.set("x", add_triggers="report"),
             "remove_triggers": lambda: d.set("x", remove_triggers="x"),
             "fields": lambda: d.user_unset("name"),
             "kinds": lambda: d.archive_list(kinds="inbound")}
    for what, call in calls.items():
        with pytest.raises(UsageError, match=f"^{what} must be a list of strings") as caught:
            call()
        assert caught.value.hint is not None and f"{what}=[" in caught.value.hint
    assert snapshot(d.root) == before
    assert d.set("x", add_triggers=["report"]).value.status == "updated"
