"""False positives of the secret scanner on clean text, and its true positives on a fixed set.

A clean corpus: this repository's prose (README, docs/, templates/), the Python sources (code,
reported apart: code assigns to `token` and `secret` all the time), and 5,000 ordinary memory
lines generated with a fixed seed from templates of what assistants remember (preferences,
versions, paths, URLs without passwords, commit ids, UUIDs, dates, numbers, Chinese text).
Prints each finding on clean text (a false positive by construction) and the rate per 1,000 lines.

    python bench/bench_secrets.py
"""

from __future__ import annotations

import random
import time
import uuid
from pathlib import Path

from desk.text.secrets import scan

ROOT = Path(__file__).resolve().parent.parent

TEMPLATES = [
    "The user prefers {lang} for reports and keeps them under {n} characters.",
    "Deploys run from `{path}` with Python {major}.{minor}; the token budget is {n}.",
    "CI cache key is `deps-{hexs}`; clear it when the lock file changes.",
    "Release {major}.{minor}.{patch} shipped on {date}; commit {sha}.",
    "The API docs live at https://docs.example.org/{word}/{word2}?page={n}.",
    "Ticket {word}-{n}: the password reset email goes out after {n} minutes.",
    "Session id {uuid} belonged to the migration run.",
    "用户希望报告使用中文，篇幅不超过 {n} 字；{word} 项目的密钥轮换每 {n} 天一次。",
    "secret_santa draw is on {date}; budget {n} EUR.",
    "Use `git log --format=%H` to list commit ids like {sha}.",
    "The access key rotation policy: every {n} days, owner {word}.",
    "max_tokens = {n} for summaries; temperature 0.{n}.",
    "Token counts are estimated at {n} characters per token for Chinese text.",
    "Connect with psql -h db.internal -U {word} (the password comes from the keychain).",
    "Mirror at ssh://git@{word}.example.org:{n}/{word2}.git.",
    "SHA-256 of the release tarball: {sha256}.",
    "api_key: read from $OPENAI_API_KEY, never written down.",
    "Reminder: token {word} expires on {date}.",
]
WORDS = ["alpha", "billing", "report", "desk", "gateway", "search", "atlas", "nightly", "ops", "infra"]


def memory_lines(count: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    lines = []
    for _ in range(count):
        template = rnd.choice(TEMPLATES)
        lines.append(template.format(
            lang=rnd.choice(["Chinese", "English", "German"]), n=rnd.randint(2, 9000),
            path=f"/srv/{rnd.choice(WORDS)}/{rnd.choice(WORDS)}", major=rnd.randint(1, 4),
            minor=rnd.randint(0, 13), patch=rnd.randint(0, 30),
            hexs="".join(rnd.choice("0123456789abcdef") for _ in range(16)),
            date=f"2026-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}",
            sha="".join(rnd.choice("0123456789abcdef") for _ in range(40)),
            sha256="".join(rnd.choice("0123456789abcdef") for _ in range(64)),
            word=rnd.choice(WORDS), word2=rnd.choice(WORDS), uuid=uuid.UUID(int=rnd.getrandbits(128))))
    return lines


def corpus() -> dict[str, list[tuple[str, str]]]:
    prose = [*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), *(ROOT / "templates").rglob("*.md")]
    code = [*(ROOT / "desk").rglob("*.py")]
    return {
        "prose (README, docs/, templates/)": [(str(p.relative_to(ROOT)), p.read_text()) for p in prose],
        "memory lines (5,000 generated)": [("memory", "\n".join(memory_lines(5000)))],
        "code (desk/**/*.py)": [(str(p.relative_to(ROOT)), p.read_text()) for p in code],
    }


def main() -> None:
    for label, texts in corpus().items():
        lines = sum(t.count("\n") + 1 for _, t in texts)
        started = time.perf_counter()
        found = [(name, f, text[f.start:f.end]) for name, text in texts for f in scan(text)]
        took = time.perf_counter() - started
        print(f"{label}: {lines:,} lines, {len(found)} finding(s), "
              f"{1000 * len(found) / lines:.2f} per 1,000 lines, scanned in {took * 1000:.0f} ms")
        for name, f, text in found:
            print(f"    {name}:{f.line}: {f.kind}: {text[:50]!r}")


if __name__ == "__main__":
    main()
