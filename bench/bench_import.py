"""`desk import chat-export` of N messages against `desk archive import` of the same records.

    python bench/bench_import.py [--messages 50000] [--rounds 3] [--dir DIR]

A ChatGPT-style `conversations.json` of N messages (conversations of 20 messages, alternating
user and assistant, over 30 UTC days) and a desk JSONL file of exactly the records the import
appends (same kind, time, session, actor, content and `desk.import` meta). Each round makes two
fresh desks and runs, as whole CLI processes (`python -m desk`) with stderr to a file (not a
terminal), `desk archive import FILE.jsonl --no-progress` and `desk import chat-export
conversations.json`; the two alternate in order between rounds. Both leave the archive's growth
for `desk checkpoint` to commit (not timed: the same for both).

Prints each round's times, the median speed ratio (archive import time / chat-export import
time; target >= 0.50, issue 14), and how many progress lines the import wrote to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from environment import describe

from desk.setup.init import init_desk

START = 1767225600  # 2026-01-01T00:00:00Z
WORDS = ("deploy report database metrics schema review 报告 数据库 会议 the a of to and is "
         "postgres queue latency budget release freeze migration onboarding").split()


def generate(folder: Path, messages: int) -> tuple[Path, Path]:
    rng = random.Random(14)
    conversations, records = [], []
    per = 20
    for c in range(0, messages, per):
        conv_id = f"conv-{c // per:06d}"
        base = START + rng.randrange(30 * 86400)
        mapping: dict[str, object] = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
        parent = "root"
        for i in range(min(per, messages - c)):
            mid = f"{conv_id}-m{i:02d}"
            role = "user" if i % 2 == 0 else "assistant"
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(8, 60)))
            at = base + i * 30
            mapping[mid] = {"id": mid, "parent": parent, "children": [],
                            "message": {"id": mid, "author": {"role": role}, "create_time": at,
                                        "content": {"content_type": "text", "parts": [text]}}}
            mapping[parent]["children"].append(mid)  # type: ignore[index]
            parent = mid
            records.append({"kind": "inbound" if role == "user" else "outbound",
                            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)),
                            "session": f"chatgpt:{conv_id}", "actor": role, "content": text,
                            "meta": {"desk.import": f"chatgpt:{conv_id}:{mid}"}})
        conversations.append({"id": conv_id, "title": f"Conversation {c}", "create_time": base,
                              "mapping": mapping, "current_node": parent})
    export = folder / "conversations.json"
    export.write_text(json.dumps(conversations, ensure_ascii=False))
    jsonl = folder / "records.jsonl"
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return export, jsonl


def run(desk: Path, *args: str, stderr: Path) -> float:
    start = time.perf_counter()
    with stderr.open("wb") as err:
        subprocess.run([sys.executable, "-m", "desk", "--desk", str(desk), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=err)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    print(describe(sys.argv))
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
    os.environ.update(env)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        export, jsonl = generate(folder, args.messages)
        print(f"{args.messages:,} messages: conversations.json {export.stat().st_size / 2**20:.1f} MiB, "
              f"records.jsonl {jsonl.stat().st_size / 2**20:.1f} MiB")
        ratios: list[float] = []
        lines = 0
        for r in range(args.rounds):
            a, b = folder / f"a{r}", folder / f"b{r}"
            init_desk(a)
            init_desk(b)
            order = ["archive", "import"] if r % 2 == 0 else ["import", "archive"]
            times = {}
            for which in order:
                if which == "archive":
                    times[which] = run(a, "archive", "import", str(jsonl), "--no-progress",
                                       stderr=folder / "archive.err")
                else:
                    times[which] = run(b, "import", "chat-export", str(export), stderr=folder / "import.err")
            lines = len((folder / "import.err").read_text().splitlines())
            ratio = times["archive"] / times["import"]
            ratios.append(ratio)
            print(f"round {r + 1}: archive import {times['archive']:.2f} s, import chat-export "
                  f"{times['import']:.2f} s, speed ratio {ratio:.2f}, progress lines on stderr: {lines}")
        median = statistics.median(ratios)
        print(f"median speed ratio (archive import time / chat-export import time): {median:.2f} "
              f"(target >= 0.50): {'OK' if median >= 0.5 else 'MISSED'}")


if __name__ == "__main__":
    main()
