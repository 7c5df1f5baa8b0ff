"""False positives of the secret scanner on clean text, and its true positives on a fixed set.

A clean corpus: this repository's prose (README, docs/, templates/), the Python sources (code,
reported apart: code assigns to `token` and `secret` all the time), and 5,000 ordinary memory
lines generated with a fixed seed from templates of what assistants remember (preferences,
versions, paths, URLs without passwords, commit ids, UUIDs, dates, numbers, Chinese text).
Prints each finding on clean text (a false positive by construction) and the rate per 1,000 lines.

`--corpus` measures both rates on the seeded corpora of bench/secret_corpus.py: false positives
on generated paths (also as the value of `token_file =`, `secret_path:`), URLs with ordinary query
strings, commit ids and digests, UUIDs and base64 of ordinary text; true positives on every
secret shape desk knows, plain and in every disguise (glued to a letter, a digit, `_` or `%3D`,
quoted, percent-encoded, base64, full-width, a zero-width character inside, split by each line
separator), one row per disguise, and 5,000 random 40-character AWS secret keys.

    python bench/bench_secrets.py
    python bench/bench_secrets.py --corpus [--per-cell 20]
"""

from __future__ import annotations

import argparse
import random
import string
import sys
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


def measure_corpus(per_cell: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from secret_corpus import CLEAN_TEMPLATES, DISGUISES, SHAPES, clean_lines, true_positives

    print("false positives (seeded clean corpus):")
    for kind in CLEAN_TEMPLATES:
        lines = clean_lines(kind, 2000)
        found = [(line, f) for line in lines for f in scan(line)]
        print(f"  {kind:16} {len(lines):6,} lines  {len(found):3} finding(s)  "
              f"{1000 * len(found) / len(lines):.2f} per 1,000 lines")
        for line, f in found[:5]:
            print(f"      {f.kind}: {line[:90]!r}")
    samples = true_positives(per_cell)
    started = time.perf_counter()
    results = [(shape, disguise, kind, [f.kind for f in scan(text)]) for shape, disguise, text, kind in samples]
    took = time.perf_counter() - started
    print(f"true positives ({len(samples):,} seeded samples, scanned in {took * 1000:.0f} ms): "
          "found / named with the right kind, per disguise")
    for disguise in DISGUISES:
        rows = [r for r in results if r[1] == disguise]
        found = sum(bool(kinds) for _, _, _, kinds in rows)
        right = sum(kind in kinds for _, _, kind, kinds in rows)
        missed = sorted({shape for shape, _, kind, kinds in rows if kind not in kinds})
        print(f"  {disguise:28} {found:5}/{len(rows):<5} {right:5}/{len(rows):<5}"
              + (f"  missed: {', '.join(missed)}" if missed else ""))
    print("per shape, all disguises:")
    for shape in SHAPES:
        rows = [r for r in results if r[0] == shape]
        print(f"  {shape:22} {sum(kind in kinds for _, _, kind, kinds in rows):5}/{len(rows)}")
    rnd = random.Random(787)
    alphabet = string.ascii_letters + string.digits + "+/"
    missed_keys = sum(not scan("AWS_SECRET_ACCESS_KEY=" + "".join(rnd.choice(alphabet) for _ in range(40)))
                      for _ in range(5000))
    print(f"random 40-character AWS_SECRET_ACCESS_KEY= values missed: {missed_keys} of 5,000")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", action="store_true", help="the seeded FP/TP corpora")
    parser.add_argument("--per-cell", type=int, default=20, help="samples per shape and disguise")
    args = parser.parse_args()
    if args.corpus:
        measure_corpus(args.per_cell)
        return
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
