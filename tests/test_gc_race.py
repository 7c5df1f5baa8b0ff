"""desk's writes beside git's housekeeping (issue 34): `git gc` and `git gc --prune=now` run in a
loop, as real processes, while desk remembers and proposes (review mode's refs/desk/proposals/).

`git gc --prune=now` deletes every loose object no ref reaches when it looks: beside a plain
`git add` + `git commit` loop it leaves HEAD naming a missing commit. desk holds git's gc lock
while it writes (desk.storage.git.housekeeping.holding_gc_lock), so every write lands whole:
`git fsck --strict` finds nothing, every memory is readable and every ref under refs/desk resolves.
"""

from __future__ import annotations

import json
import subprocess
import pytest

import desk as desk_api
from desk.layout import DeskFolder
from tests.conftest import git

FACTS = 12
PROPOSALS = 4


@pytest.mark.slow
@pytest.mark.parametrize("prune", [[], ["--prune=now"]], ids=["gc", "gc-prune-now"])
def test_remembers_beside_a_gc_loop_lose_nothing(desk: DeskFolder, prune: list[str]) -> None:
    config = desk.root / ".system/desk.json"
    data = json.loads(config.read_text())
    data["review"] = {"decision": "propose"}  # decisions are proposals, facts land directly
    config.write_text(json.dumps(data, indent=2) + "\n")
    git(desk.root, "-c", "user.name=Ada", "-c", "user.email=ada@example.org", "commit", "-q",
        "-m", "review decisions", "--", ".system/desk.json")
    stop = desk.root.parent / "stop-gc"
    loop = subprocess.Popen(["sh", "-c", f'while [ ! -e "{stop}" ]; do git gc -q {" ".join(prune)} '
                             '2>/dev/null; done'], cwd=desk.root)
    d = desk_api.open(desk.root)
    try:
        for i in range(FACTS):
            d.remember(f"fact-{i:02d}", f"Fact {i} written beside git gc.", type="fact", description=f"fact {i}")
        proposals = [d.remember(f"decision-{i}", f"Decision {i}.", type="decision", description=f"decision {i}",
                                actor="assistant").to_json()["proposal"] for i in range(PROPOSALS)]
    finally:
        stop.touch()
        loop.wait()
    fsck = subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=desk.root, capture_output=True, text=True)
    assert fsck.returncode == 0 and not fsck.stdout.strip(), fsck.stdout + fsck.stderr
    for i in range(FACTS):
        assert f"Fact {i} written" in git(desk.root, "show", f"HEAD:memory/fact-{i:02d}.md")
        assert f"Fact {i} written" in json.dumps(d.show(f"fact-{i:02d}").to_json())
    refs = git(desk.root, "for-each-ref", "--format=%(refname)", "refs/desk/").split()
    assert sorted(refs) == sorted(f"refs/desk/proposals/{p}" for p in proposals)
    for ref in refs:
        changed = git(desk.root, "diff-tree", "--no-commit-id", "--name-only", "-r", ref).split()
        assert any("Decision" in git(desk.root, "show", f"{ref}:{path}") for path in changed), changed
