"""`desk doctor --rebuild`: every derived cache dropped and made again; the desk itself untouched."""

from __future__ import annotations

import json
import sqlite3

from desk.layout import DeskFolder
from desk.storage.derived import CACHE_FOLDER, RETIRED
from tests.conftest import DeskRunner, snapshot


def _recalled(run: DeskRunner, query: str) -> object:
    """recall's answer without its per-call query id."""
    answer = json.loads(run("recall", query, "--now", "2099-01-01T00:00:00Z", "--json").stdout)
    answer["query"].pop("query_id")
    return answer


def _seed(run: DeskRunner) -> None:
    for name, body in (("report-style", "Reports in Chinese, under 500 characters."),
                       ("tea", "The user drinks green tea, never coffee.")):
        assert run("remember", name, body, "--type", "preference", "--description", f"About {name}",
                   "--trigger", name.split("-")[0]).exit_code == 0


def test_rebuild_drops_every_cache_and_makes_them_again(desk: DeskFolder, run: DeskRunner) -> None:
    _seed(run)
    recalled = _recalled(run, "tea")
    context = run("context", "--query", "report").stdout
    (desk.git_dir / RETIRED[0]).write_text("{}")  # a record an older desk left
    # A wrong answer kept under a right key: only dropping the caches can clear it.
    with sqlite3.connect(desk.cache_dir / "context.sqlite") as db:
        db.execute("UPDATE memory_view_v4 SET index_text = 'stale'")
    before = snapshot(desk.root)
    head = desk.git.refs.head()

    result = run("doctor", "--rebuild", "--json")
    assert result.exit_code == 0, result.output
    rebuilt = json.loads(result.stdout)["rebuilt"]
    assert {f"{CACHE_FOLDER}/{name}" for name in ("search.sqlite", "context.sqlite", "entries.sqlite")} <= set(rebuilt)
    assert RETIRED[0] in rebuilt and not (desk.git_dir / RETIRED[0]).exists()
    for name in ("search.sqlite", "context.sqlite", "entries.sqlite", "verdicts.sqlite"):
        assert (desk.cache_dir / name).is_file(), name  # made again, not only dropped
    assert snapshot(desk.root) == before and desk.git.refs.head() == head
    assert _recalled(run, "tea") == recalled
    assert run("context", "--query", "report").stdout == context


def test_rebuild_says_what_it_did_and_has_help(desk: DeskFolder, run: DeskRunner) -> None:
    _seed(run)
    result = run("doctor", "--rebuild")
    assert result.exit_code == 0 and result.stdout.startswith("rebuilt: every derived cache")
    assert "--rebuild" in run("doctor", "--help").stdout
    assert "rebuilt" not in json.loads(run("doctor", "--json").stdout)  # only when asked
