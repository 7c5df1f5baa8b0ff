"""A runnable harness loop: how an agent harness drives a desk through desk's public Python API.

    python examples/harness_loop.py [DESK_PATH]

It uses nothing but `import desk`. It scaffolds a desk (in a temporary folder unless you give a
path), then plays three sessions:

1. the user corrects the assistant; the harness archives every turn, the assistant nominates a
   durable memory and the write gate accepts it, a session-only remark is refused;
2. a new session wakes up: `context` renders what the assistant loads, with the memory's body
   injected only because the query hits one of its triggers; `recall` finds the evidence;
3. the user changes their mind: the same name is updated, not duplicated; the work note and the
   archive are checkpointed.

Every mutation is one git commit; the script ends by printing the desk's audit trail (`desk log`).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import desk


def turn(d: desk.Desk, session: str, user: str, assistant: str) -> str:
    """Archive one exchange (raw evidence); return the inbound event id for provenance."""
    inbound = d.archive_append("inbound", user, session=session, actor="user")
    d.archive_append("outbound", assistant, session=session, actor="assistant")
    return inbound.id


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="desk-example-")) / "desk"
    d = desk.init(root)
    print(f"desk at {d.root}\n")

    # -- session 1: a correction becomes a memory ------------------------------------------------
    event = turn(d, "s1", "Please write reports in Chinese, and keep them under 500 characters.",
                 "Understood: Chinese, under 500 characters.")
    change = d.remember("report-style", "Reports must be written in Chinese; keep the body under 500 "
                        "characters.", type="preference",
                        description="Report language and length (user correction)",
                        triggers=["report", "报告"], actor="assistant", source_event=event)
    print(f"remember report-style: {change.value.status} ({change.value.commit and change.value.commit[:7]})")
    try:
        d.remember("three-sources", "This time, check three sources first.", type="convention",
                   description="check three sources", scope="session", actor="assistant")
    except desk.RejectedError as exc:
        print(f"gate refused a session-only note: {exc.message} (exit code {exc.exit_code})")
    d.now_append("Drafting the Q3 report (Chinese, < 500 characters)", section="doing", actor="assistant")

    # -- session 2: wake up, load the desk, recall ---------------------------------------------
    context = d.context(query="write the quarterly report", budget=2000)
    print("\n--- desk context --query 'write the quarterly report' (excerpt) ---")
    print("\n".join(context.text().splitlines()[-12:]))
    recalled = d.recall("report length", limit=3)
    print("\n--- desk recall 'report length' ---")
    for hit in recalled.value.hits:
        print(f"{hit.rank}. {hit.id}  {hit.snippet[:70]!r}")

    # -- session 3: the user changes their mind --------------------------------------------------
    event = turn(d, "s3", "Reports can be up to 800 characters from now on.", "Noted: up to 800.")
    change = d.remember("report-style", "Reports must be written in Chinese; keep the body under 800 "
                        "characters.", type="preference",
                        description="Report language and length (user correction)",
                        triggers=["report", "报告"], actor="assistant", source_event=event)
    print(f"\nremember report-style again: {change.value.status} (one file, one index line)")
    print(f"checkpoint: {d.checkpoint(actor='assistant').value.status}")
    print("\n--- desk log ---")
    print(d.log().text())


if __name__ == "__main__":
    main()
