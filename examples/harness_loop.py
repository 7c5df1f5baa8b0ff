"""A runnable harness loop: how an agent harness drives a desk through desk's Python API.

    python examples/harness_loop.py [DESK_PATH]

It scaffolds a desk (in a temporary folder unless you give a path), then plays three sessions:

1. the user corrects the assistant; the harness archives every turn, the assistant nominates a
   durable memory and the write gate accepts it, a session-only remark is refused;
2. a new session wakes up: `build_context` renders what the assistant loads, with the memory's
   body injected only because the query hits one of its triggers; `recall` finds the evidence;
3. the user changes their mind: the same name is updated, not duplicated; the work note and the
   archive are checkpointed.

Every mutation is one git commit; the script ends by printing `git log --oneline`.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from desk.archive.store import append_event
from desk.archive.checkpoint import checkpoint
from desk.recall.context import build_context, render_markdown
from desk.layout import DeskFolder
from desk.errors import RejectedError
from desk.memory.operations import remember
from desk.notes.now import append_now
from desk.recall.search import recall
from desk.scaffold import init_desk


def turn(desk: DeskFolder, session: str, user: str, assistant: str) -> str:
    """Archive one exchange (raw evidence); return the inbound event id for provenance."""
    inbound = append_event(desk, "inbound", user, session=session, actor="user")
    append_event(desk, "outbound", assistant, session=session, actor="assistant")
    return str(inbound["id"])


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="desk-example-")) / "desk"
    init_desk(root)
    desk = DeskFolder(root)
    print(f"desk at {root}\n")

    # -- session 1: a correction becomes a memory ------------------------------------------------
    event = turn(desk, "s1", "Please write reports in Chinese, and keep them under 500 characters.",
                 "Understood: Chinese, under 500 characters.")
    result = remember(desk, "report-style", type="preference",
                      description="Report language and length (user correction)",
                      triggers=["report", "报告"], body="Reports must be written in Chinese; keep the body "
                      "under 500 characters.", actor="assistant", source_event=event)
    print(f"remember report-style: {result.status} ({result.commit and result.commit[:7]})")
    try:
        remember(desk, "three-sources", type="convention", description="check three sources",
                 body="This time, check three sources first.", scope="session", actor="assistant")
    except RejectedError as exc:
        print(f"gate refused a session-only note: {exc.message}")
    append_now(desk, "Drafting the Q3 report (Chinese, < 500 characters)", section="doing")

    # -- session 2: wake up, load the desk, recall ---------------------------------------------
    context = build_context(desk, query="write the quarterly report", budget=2000)
    print("\n--- desk context --query 'write the quarterly report' (excerpt) ---")
    print("\n".join(render_markdown(context).splitlines()[-12:]))
    hits = recall(desk, "report length", limit=3)
    print("\n--- desk recall 'report length' ---")
    for hit in hits.hits:
        print(f"{hit.rank}. {hit.id}  {hit.snippet[:70]!r}")

    # -- session 3: the user changes their mind --------------------------------------------------
    event = turn(desk, "s3", "Reports can be up to 800 characters from now on.", "Noted: up to 800.")
    result = remember(desk, "report-style", type="preference",
                      description="Report language and length (user correction)",
                      triggers=["report", "报告"], body="Reports must be written in Chinese; keep the body "
                      "under 800 characters.", actor="assistant", source_event=event)
    print(f"\nremember report-style again: {result.status} (one file, one index line)")
    print(f"checkpoint: {checkpoint(desk).status}")
    print("\n--- git log --oneline ---")
    print(subprocess.run(["git", "log", "--oneline"], cwd=root, capture_output=True, text=True).stdout)


if __name__ == "__main__":
    main()
