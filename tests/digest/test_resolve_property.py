"""Property: any sequence of fact / digest / resolve steps keeps the keyed state whole.

After every sequence: each key has at most one active digest memory (exactly one once the domain
has a value), the queue passes its schema and chain rules (at most one open case per domain), and
every audit line is matched by exactly one resolve commit (its `Desk-Event` and `Desk-Audit-Line`
trailers) and every resolve commit by exactly one line. A refused resolve (stale) changes nothing.
Bounded (a few examples of a few steps) so the suite stays fast; each example works on a copy of
one template desk.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import desk as desk_api
from desk.errors import ConflictError
from desk.formats.memory_file import parse_memory
from desk.formats.audit import line_hash, parse_audit
from desk.formats.queue import queue_findings
from desk.setup.init import init_desk
from tests.conftest import git
from tests.digest.test_resolve import AS_OF, NOW, fact

KEYS = ("storage.db", "runtime.python")
VALUES = ("Use A.", "Use B.", "Use C.")

fact_step = st.tuples(st.just("fact"), st.sampled_from(KEYS), st.sampled_from(VALUES),
                      st.sampled_from((2, 5)), st.integers(1, 20))
steps = st.lists(st.one_of(fact_step, st.just(("digest",)),
                           st.tuples(st.just("resolve"), st.integers(0, 3)), st.just(("retry",))),
                 min_size=2, max_size=7)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("property") / "desk"
    init_desk(root)
    return root


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=steps)
@example(sequence=[("fact", "storage.db", "Use A.", 5, 1), ("fact", "storage.db", "Use B.", 5, 1),
                   ("digest",), ("resolve", 1), ("retry",), ("fact", "storage.db", "Use C.", 5, 2),
                   ("fact", "storage.db", "Use C.", 5, 3), ("digest",)])
@example(sequence=[("fact", "runtime.python", "Use A.", 5, 1), ("fact", "runtime.python", "Use B.", 5, 1),
                   ("digest",), ("fact", "runtime.python", "Use B.", 5, 1), ("resolve", 0), ("digest",),
                   ("resolve", 0)])
def test_fact_digest_resolve_sequences_keep_the_keyed_state_whole(template: Path, sequence: list[tuple]) -> None:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "desk"
        shutil.copytree(template, root, symlinks=True)
        d = desk_api.open(root)
        last: dict[str, object] | None = None
        for number, step in enumerate(sequence):
            if step[0] == "fact":
                _, key, value, importance, day = step
                fact(d, value, f"2026-09-{day:02d}T10:00:00Z", importance=importance, key=key)
            elif step[0] == "digest":
                d.digest(as_of=AS_OF)
            elif step[0] == "resolve":
                cases = d.conflicts_list().cases
                if not cases:
                    continue
                case = cases[0]
                candidate = case["candidates"][step[1] % len(case["candidates"])]["id"]
                last = dict(case=case["id"], candidate=candidate, expected_revision=case["revision"],
                            event_id=f"e{number}", actor="ada", rationale="why", now=NOW)
                head = git(root, "rev-parse", "HEAD")
                try:
                    d.resolve(**last)  # type: ignore[arg-type]
                except ConflictError:  # stale: facts arrived since the digest
                    assert git(root, "rev-parse", "HEAD") == head
                    last = None
            elif step[0] == "retry" and last is not None:
                assert d.resolve(**last).value.status == "unchanged"  # type: ignore[arg-type]
        check_whole(root)


def check_whole(root: Path) -> None:
    holders: dict[str, list[str]] = {}
    for path in sorted((root / "memory").glob("*.md")):
        memory = parse_memory(path.read_bytes(), f"memory/{path.name}", path.stem)
        if memory.meta.source == "digest" and memory.meta.key:
            holders.setdefault(memory.meta.key, []).append(path.name)
    assert all(len(paths) == 1 for paths in holders.values()), holders
    queue = root / ".system" / "conflicts.json"
    if queue.exists():
        assert queue_findings(".system/conflicts.json", queue.read_bytes()) == []
    lines: dict[str, str] = {}
    for path in sorted((root / ".system").glob("adjudications.*.jsonl")):
        data = path.read_bytes()
        records, problems = parse_audit(path.name, data)
        assert problems == []
        for record, line in zip(records, data.split(b"\n")):
            lines[record["event"]] = line_hash(line)
    log = git(root, "log", "--format=%(trailers:key=Desk-Event,valueonly,separator=)|"
                                    "%(trailers:key=Desk-Audit-Line,valueonly,separator=)|"
                                    "%(trailers:key=Desk-Op,valueonly,separator=)")
    resolves = [line.split("|")[:2] for line in log.splitlines() if line.endswith("|resolve")]
    assert sorted(event for event, _ in resolves) == sorted(lines)  # one commit per line, no more
    assert all(lines[event] == anchor for event, anchor in resolves)
    assert git(root, "status", "--porcelain", "--", ".", ":!.system/archive") == ""  # facts wait for a digest
