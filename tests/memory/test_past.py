"""What was true when (issue 33, docs/time.md): validity on memories and facts, `--as-of` reads
from git history, `desk history NAME --timeline`. Every commit here is dated by the test
(GIT_COMMITTER_DATE / GIT_AUTHOR_DATE), never by today's clock."""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import desk as desk_api
from desk.cli.main import cli
from desk.errors import DeskError
from desk.setup.init import init_desk


def dated(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    """Commits made from now on are dated `when` (a Desk opened afterwards reads the environment)."""
    for key in ("GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE"):
        monkeypatch.setenv(key, when)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, identity: None) -> Path:
    dated(monkeypatch, "2026-01-01T00:00:00Z")
    init_desk(tmp_path / "desk")
    return tmp_path / "desk"


def remember(root: Path, monkeypatch: pytest.MonkeyPatch, when: str, name: str, body: str, **kw: object) -> str:
    dated(monkeypatch, when)
    change = desk_api.open(root).remember(name, body, type="fact", description=f"About {name}",
                                          triggers=[name], now=_time(when), **kw)  # type: ignore[arg-type]
    assert change.value.commit is not None
    return change.value.commit


def _time(text: str) -> object:
    from desk.text.times import parse_time

    return parse_time(text)


def cli_run(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--desk", str(root), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_as_of_before_the_first_commit_is_empty_and_says_so(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remember(root, monkeypatch, "2026-02-01T00:00:00Z", "home", "I live in Lisbon.")
    d = desk_api.open(root)
    listed = d.list(as_of="2025-12-31T23:59:59Z")
    assert listed.entries == [] and listed.to_json()["as_of"]["commit"] is None
    assert "before the first commit" in listed.text()
    recalled = d.recall("Lisbon", as_of="2025-12-31T23:59:59Z")
    assert recalled.value.hits == () and recalled.value.empty_reason == "before_first_commit"
    assert "before the first commit" in recalled.text()
    with pytest.raises(DeskError, match="before the first commit"):
        d.show("home", as_of="2025-12-31T23:59:59Z")
    context = d.context(query="home", as_of="2025-12-31T23:59:59Z").text()
    assert "Lisbon" not in context and "_No active memories._" in context
    # The first commit itself, to the second: at its time the desk is as init made it.
    assert d.list(as_of="2026-01-01T00:00:00Z").to_json()["as_of"]["commit"] is not None


def test_as_of_between_commits_reads_the_revision_committed_then(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = remember(root, monkeypatch, "2026-02-01T00:00:00Z", "home", "I live in Lisbon.")
    second = remember(root, monkeypatch, "2026-03-01T00:00:00Z", "home", "I live in Porto.")
    d = desk_api.open(root)
    shown = d.show("home", as_of="2026-02-15T00:00:00Z")
    assert shown.memory is not None and shown.memory.body == "I live in Lisbon.\n"
    assert shown.to_json()["as_of"]["commit"] == first and first[:7] in shown.warnings()[0]
    assert d.show("home", as_of="2026-03-01T00:00:00Z").to_json()["as_of"]["commit"] == second  # at or before
    [hit] = d.recall("Lisbon", as_of="2026-02-15T00:00:00Z").value.hits
    assert hit.id == "memory:home" and hit.provenance["commit"] == first and not hit.provenance["uncommitted"]
    assert d.recall("Lisbon", as_of="2026-03-15T00:00:00Z").value.hits == ()  # changed since: the cache's own
    assert d.recall("Lisbon").value.hits == ()
    context = d.context(query="where is home", as_of="2026-02-15T00:00:00Z").to_json()
    [recalled] = context["recalled"]
    assert "Lisbon" in recalled["body"] and recalled["commit"] == first
    code, out, err = cli_run(root, "show", "home", "--as-of", "2026-02-15")
    assert code == 0 and "I live in Lisbon." in out and first[:7] in err


def test_a_forgotten_memory_is_there_before_the_forget_and_gone_after(root: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    made = remember(root, monkeypatch, "2026-02-01T00:00:00Z", "car", "I drive a red bicycle.")
    dated(monkeypatch, "2026-03-01T00:00:00Z")
    desk_api.open(root).forget("car", reason="sold it")
    d = desk_api.open(root)
    assert [e.name for e in d.list(as_of="2026-02-15T00:00:00Z").entries] == ["car"]
    assert [h.id for h in d.recall("bicycle", as_of="2026-02-15T00:00:00Z").value.hits] == ["memory:car"]
    assert d.show("car", as_of="2026-02-15T00:00:00Z").to_json()["as_of"]["commit"] == made
    assert d.list(as_of="2026-03-15T00:00:00Z").entries == []
    assert d.recall("bicycle", as_of="2026-03-15T00:00:00Z").value.hits == ()
    with pytest.raises(DeskError, match="no memory named 'car'"):
        d.show("car", as_of="2026-03-15T00:00:00Z")


def _recalled(root: Path, query: str, when: str) -> list[dict[str, object]]:
    """The hits of `query` as of `when` (JSON) from a new `Desk`: the cache as the disk holds it."""
    with desk_api.open(root) as d:
        return [h.to_json() for h in d.recall(query, as_of=when, limit=10).value.hits]


def test_a_kept_as_of_view_answers_as_a_cold_rebuild_and_a_new_commit_moves_it_on(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remember(root, monkeypatch, "2026-02-01T00:00:00Z", "home", "I live in Lisbon by the river.")
    remember(root, monkeypatch, "2026-02-02T00:00:00Z", "car", "A red bicycle by the river.")
    remember(root, monkeypatch, "2026-03-01T00:00:00Z", "home", "I live in Porto by the river.")
    when, search = "2026-02-15T00:00:00Z", root / ".git/desk-cache/search.sqlite"
    first = _recalled(root, "river", when)  # builds the cache and keeps the view of that commit
    assert sorted(h["id"] for h in first) == ["memory:car", "memory:home"]
    assert "Lisbon" in json.dumps(first) and "Porto" not in json.dumps(first)
    with sqlite3.connect(search) as db:
        assert db.execute("SELECT count(*) FROM pastviews").fetchone() == (1,)
    assert _recalled(root, "river", when) == first  # read from the kept view
    # A memory committed after T whose own `updated` says it is older: not in that commit, so not
    # found as of T, though it is in the cache now (a view kept from before would miss it).
    dated(monkeypatch, "2026-03-10T00:00:00Z")
    desk_api.open(root).remember("boat", "A blue boat on the river.", type="fact", description="About boat",
                                 now=_time("2026-02-03T00:00:00Z"))  # type: ignore[arg-type]
    after = _recalled(root, "river", when)
    assert after == first and "memory:boat" not in [h["id"] for h in after]
    for suffix in ("", "-wal", "-shm"):
        Path(f"{search}{suffix}").unlink(missing_ok=True)
    assert _recalled(root, "river", when) == after  # the same as from a cache built from nothing


def _person_commits(root: Path, when: str, path: str, text: str) -> None:
    """A person's own edit and plain `git commit`, dated `when`."""
    (root / path).write_text(text)
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when}
    subprocess.run(["git", "commit", "-q", "--no-verify", "-am", "my own edit"], cwd=root, env=env, check=True)


def test_a_persons_plain_commit_in_between_is_what_the_desk_held_then(root: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    remember(root, monkeypatch, "2026-02-01T00:00:00Z", "home", "I live in Lisbon.")
    text = (root / "memory/home.md").read_text().replace("Lisbon", "Sintra")
    _person_commits(root, "2026-02-10T00:00:00Z", "memory/home.md", text)
    remember(root, monkeypatch, "2026-03-01T00:00:00Z", "home", "I live in Porto.")
    d = desk_api.open(root)
    assert "Lisbon" in d.show("home", as_of="2026-02-05T00:00:00Z").value.text
    assert "Sintra" in d.show("home", as_of="2026-02-15T00:00:00Z").value.text
    assert [h.id for h in d.recall("Sintra", as_of="2026-02-15T00:00:00Z").value.hits] == ["memory:home"]
    assert d.recall("Sintra", as_of="2026-02-05T00:00:00Z").value.hits == ()


def test_as_of_follows_a_rename_back_to_the_name_it_had_then(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remember(root, monkeypatch, "2026-02-01T00:00:00Z", "town", "I live in Lisbon.")
    dated(monkeypatch, "2026-03-01T00:00:00Z")
    desk_api.open(root).rename("town", "home")
    d = desk_api.open(root)
    shown = d.show("home", as_of="2026-02-15T00:00:00Z")
    assert shown.path == "memory/town.md" and shown.memory is not None and shown.memory.name == "town"
    assert [e.name for e in d.list(as_of="2026-02-15T00:00:00Z").entries] == ["town"]
    assert [e.name for e in d.list(as_of="2026-03-15T00:00:00Z").entries] == ["home"]
    assert [h.id for h in d.recall("Lisbon", as_of="2026-02-15T00:00:00Z").value.hits] == ["memory:town"]
    assert [h.id for h in d.recall("Lisbon", as_of="2026-03-15T00:00:00Z").value.hits] == ["memory:home"]


def test_an_as_of_read_never_touches_the_work_tree_or_the_index(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remember(root, monkeypatch, "2026-02-01T00:00:00Z", "home", "I live in Lisbon.")
    remember(root, monkeypatch, "2026-03-01T00:00:00Z", "home", "I live in Porto.")
    (root / "memory/home.md").write_text((root / "memory/home.md").read_text().replace("Porto", "Faro"))
    (root / "notes.txt").write_text("a person's untracked file\n")
    subprocess.run(["git", "add", "notes.txt"], cwd=root, check=True)  # staged, not committed

    def state() -> tuple[str, bytes, dict[str, bytes]]:
        status = subprocess.run(["git", "status", "--porcelain"], cwd=root, check=True, capture_output=True,
                                text=True).stdout
        files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                 if p.is_file() and ".git" not in p.relative_to(root).parts}
        return status, (root / ".git/index").read_bytes(), files

    before = state()
    d = desk_api.open(root)
    for when in ("2025-06-01T00:00:00Z", "2026-02-15T00:00:00Z", "2026-04-01T00:00:00Z"):
        d.list(as_of=when)
        d.recall("Lisbon Porto Faro", as_of=when)
        d.context(query="home", as_of=when)
        try:
            d.show("home", as_of=when)
        except DeskError:
            pass
    assert [h.snippet for h in d.recall("Porto", as_of="2026-04-01T00:00:00Z").value.hits] == ["I live in Porto."]
    assert state() == before


def test_validity_is_checked_kept_and_shown(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DeskError) as refused:
        remember(root, monkeypatch, "2026-02-01T00:00:00Z", "home", "I live in Lisbon.",
                 valid_from="2026-01-10T00:00:00Z", valid_to="2026-01-09T00:00:00Z")
    assert refused.value.exit_code == 3 and "valid_to" in str(refused.value)
    for bad in ("2026-01-10T10:00", "2026-01-10\n2026-01-11", "yesterday", "99999-01-01"):
        code, _, err = cli_run(root, "remember", "home", "--type", "fact", "-d", "Home", "Lisbon", "--valid-from", bad)
        assert code == 3 and "valid_from" in err, bad
    remember(root, monkeypatch, "2026-02-01T00:00:00Z", "home", "I live in Lisbon.", valid_from="2026-01-10")
    dated(monkeypatch, "2026-02-02T00:00:00Z")
    desk_api.open(root).set("home", valid_to="2026-03-01T00:00:00Z", now=_time("2026-02-02T00:00:00Z"))  # type: ignore[arg-type]
    text = (root / "memory/home.md").read_text()
    assert "valid_from: 2026-01-10T00:00:00Z\nvalid_to: 2026-03-01T00:00:00Z\n" in text
    assert "(true until 2026-03-01T00:00:00Z)" in (root / "MEMORY.md").read_text()
    d = desk_api.open(root)
    before = d.context(query="home", now="2026-02-15T00:00:00Z").text()
    assert "I live in Lisbon." in before and "NO LONGER TRUE" not in before
    after = d.context(query="home", now="2026-03-02T00:00:00Z").text()
    assert "NO LONGER TRUE since 2026-03-01T00:00:00Z" in after and "I live in Lisbon." not in after
    recalled = d.recall("Lisbon", now="2026-03-02T00:00:00Z")
    [hit] = recalled.value.hits
    assert hit.provenance["no_longer_true"] is True and "NO LONGER TRUE" in recalled.text()
    assert d.recall("Lisbon", now="2026-02-15T00:00:00Z").value.hits[0].provenance["no_longer_true"] is False
    code, _, err = cli_run(root, "set", "home", "--valid-to", "2026-01-01T00:00:00Z")
    assert code == 3 and "valid_to" in err
    assert [e.name for e in d.list(as_of="2026-02-15T00:00:00Z").entries] == ["home"]
    assert d.list(as_of="2026-03-02T00:00:00Z").entries == []  # committed then, no longer valid
    assert d.recall("Lisbon", as_of="2026-03-02T00:00:00Z").value.hits == ()


def test_the_gate_refuses_an_interval_that_ends_before_it_starts(root: Path) -> None:
    path = root / "memory/home.md"
    path.write_text("---\nname: home\ndescription: Home\ntype: fact\nvalid_from: 2026-02-01T00:00:00Z\n"
                    "valid_to: 2026-01-01T00:00:00Z\n---\nLisbon\n")
    code, out, err = cli_run(root, "validate", "--all")
    assert code == 3 and "memory/home.md:6" in out + err and "valid_to" in out + err


def test_a_supersession_starts_the_new_revision_when_its_facts_say(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fact(text: str, at: str, **kw: str) -> str:
        return str(desk_api.open(root).fact_add(text, kind="decision", importance=5, key="home.city", at=at,
                                                **kw).to_json()["id"])

    def digest(when: str) -> None:
        dated(monkeypatch, when)
        desk_api.open(root).digest(as_of=when)

    lisbon = fact("I live in Lisbon", "2026-01-10T10:00:00Z")
    digest("2026-02-15T00:00:00Z")
    porto = [fact("I live in Porto", "2026-03-01T10:00:00Z", valid_from="2026-02-20T00:00:00Z"),
             fact("I live in Porto", "2026-03-02T10:00:00Z")]
    digest("2026-04-15T00:00:00Z")
    d = desk_api.open(root)
    memory = d.show("home.city").memory
    assert memory is not None and memory.body == "I live in Porto\n"
    assert memory.meta.valid_from is not None and memory.meta.valid_from.isoformat() == "2026-02-20T00:00:00+00:00"
    # Between the two digests, the old value; its own validity began when it was stated.
    old = d.show("home.city", as_of="2026-03-15T00:00:00Z").memory
    assert old is not None and old.body == "I live in Lisbon\n"
    assert old.meta.valid_from is not None and old.meta.valid_from.isoformat() == "2026-01-10T10:00:00+00:00"
    timeline = d.timeline("home.city").to_json()["revisions"]
    assert [(r["value"], r["valid_from"], r["valid_to"]) for r in timeline] == [
        ("I live in Porto", "2026-02-20T00:00:00Z", None),
        ("I live in Lisbon", "2026-01-10T10:00:00Z", "2026-02-20T00:00:00Z")]
    assert timeline[0]["evidence"] == porto and timeline[1]["evidence"] == [lisbon]
    code, out, _ = cli_run(root, "history", "home.city", "--timeline", "--json")
    assert code == 0 and json.loads(out)["revisions"] == timeline
    code, out, _ = cli_run(root, "history", "home.city", "--timeline")
    assert "true 2026-02-20T00:00:00Z .. now: I live in Porto" in out


def test_a_fact_with_a_bad_interval_is_refused_with_nothing_written(root: Path) -> None:
    code, _, err = cli_run(root, "fact", "add", "I live in Porto", "--kind", "decision", "--importance", "5",
                           "--valid-from", "2026-03-01", "--valid-to", "2026-02-01")
    assert code == 3 and "valid_to" in err
    code, _, err = cli_run(root, "fact", "add", "I live in Porto", "--kind", "decision", "--importance", "5",
                           "--valid-from", "2026-03-01T10:00")
    assert code == 3 and "valid_from" in err
    assert not list((root / ".system").rglob("*.jsonl"))


def test_a_forgotten_revision_shows_in_the_timeline(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remember(root, monkeypatch, "2026-02-01T00:00:00Z", "car", "A red bicycle.")
    dated(monkeypatch, "2026-03-01T00:00:00Z")
    desk_api.open(root).forget("car")
    revisions = desk_api.open(root).timeline("car").to_json()["revisions"]
    assert [(r["forgotten"], r["valid_from"], r["valid_to"]) for r in revisions] == [
        (True, None, None), (False, "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z")]


DOC = Path(__file__).resolve().parents[2] / "docs" / "time.md"


def _normal(text: str) -> str:
    """Commit ids and the clock of the machine that wrote `created`/`updated` differ per run."""
    text = re.sub(r"\b[0-9a-f]{7,40}\b", "<commit>", text)
    return re.sub(r"^(created|updated): .*$", r"\1: <clock>", text, flags=re.M)


def test_the_transcript_in_docs_time_md_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, identity: None) -> None:
    [block] = re.findall(r"```console\n(.*?)```", DOC.read_text(), re.S)
    dated(monkeypatch, "2026-01-01T00:00:00Z")
    root = tmp_path / "desk"
    init_desk(root)
    env = dict(os.environ)
    steps = [chunk.partition("\n") for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]]
    assert len(steps) >= 8
    for command, _, expected in steps:
        words = shlex.split(command)
        if words[0] == "export":
            env.update(word.split("=", 1) for word in words[1:])
            continue
        assert words[0] == "desk", command
        done = subprocess.run([sys.executable, "-m", "desk", *words[1:]], env=env, cwd=root,
                              capture_output=True, text=True)
        assert done.returncode == 0, (command, done.stderr)
        assert _normal(done.stderr + done.stdout) == _normal(expected), command
