"""A bounded property test: random work on three clones with syncs in between never loses a memory.

After a final round of syncs every clone has the same HEAD tree; every memory ever created is
present, deliberately forgotten, or a candidate in an open conflict case; the index is exact,
`archive verify` and `git fsck` are clean, and no file holds conflict markers.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import desk.api as api
from desk.errors import DeskError
from tests.sync.conftest import Clones, git

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
NAMES = ("alpha", "beta", "gamma")
OPS = ("remember", "forget", "archive", "fact", "digest", "now", "render", "sync")

steps = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(OPS), st.sampled_from(NAMES),
                           st.integers(0, 3)), min_size=3, max_size=8)


def apply(d: api.Desk, op: str, name: str, n: int, counter: int, created: set[str], forgotten: set[str]) -> None:
    try:
        if op == "remember":
            d.remember(name, f"{name} body {counter} from {d.root.name}", type="fact",
                       description=f"{name} {n}", triggers=[name], now=NOW)
            created.add(name)
        elif op == "forget":
            if (d.root / "memory" / f"{name}.md").is_file():
                d.forget(name)
                forgotten.add(name)
        elif op == "archive":
            d.archive_append("inbound", f"message {counter}", session=f"s{n}", at=f"2026-11-29T1{n}:00:00Z")
        elif op == "fact":
            d.fact_add(f"{name} uses version {n}", kind="decision", importance=4, key=f"{name}.version",
                       at="2026-10-01T10:00:00Z")
        elif op == "digest":
            d.digest(date="2026-11-29", as_of="2026-11-29T23:59:00Z")
        elif op == "now":
            d.now_set(f"{name} {counter}", section=("doing", "blocked", "next", "reminders")[n])
        elif op == "render":
            d.conversations_render()
        else:
            d.sync(now=NOW)
    except DeskError as exc:
        assert exc.exit_code in (2, 3), exc.message  # a refused write (unknown name, duplicate): fine


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(work=steps)
def test_random_work_on_three_clones_converges_and_loses_nothing(work: list[tuple[int, str, str, int]],
                                                                 clone_template: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clones = Clones(Path(tmp), clone_template)
        created: set[str] = set()
        forgotten: set[str] = set()
        for counter, (who, op, name, n) in enumerate(work):
            apply(clones[who], op, name, n, counter, created, forgotten)
        for d in [*clones.desks, *clones.desks]:
            d.sync(now=NOW)
        trees = {git(d.root, "rev-parse", "HEAD^{tree}").strip() for d in clones.desks}
        assert len(trees) == 1
        d = clones[0]
        present = {p.stem for p in (d.root / "memory").glob("*.md")}
        candidates = " ".join(str(c.get("content")) for case in d.conflicts().to_json()["cases"]
                              for c in case["candidates"])
        for name in created:
            assert name in present or name in forgotten or f"name: {name}" in candidates, name
        for each in clones.desks:
            assert each.validate("all").exit_code == 0
            each.archive_verify()
            fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=each.root, capture_output=True, text=True)
            assert fsck.returncode == 0 and "error" not in fsck.stderr
            assert git(each.root, "status", "--porcelain").strip() == ""
            for path in each.root.rglob("*"):
                if ".git" not in path.parts and path.is_file():
                    assert b"<<<<<<<" not in path.read_bytes(), path
