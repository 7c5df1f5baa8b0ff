"""Deliberate bugs in the modules that carry desk's promises: the tests must catch every one.

Each mutation is one exact snippet of a core module replaced by a small wrong version (a missing
fsync, `>=` turned into `>`, a compare-and-swap without its expected value) and the tests that
guard it. The script checks out a commit into a temporary git worktree, applies one mutation at a
time there, runs its tests with that copy first on PYTHONPATH (so the `desk` and hook processes the
tests start run the mutant too), and reports each mutation killed (a test failed) or survived.
The repository it runs from is never modified.

    python bench/mutations.py                 # every mutation, against HEAD
    python bench/mutations.py --rev main      # the same mutations against another commit's tests
    python bench/mutations.py -k archive      # only mutations whose name contains `archive`

Not part of .ci/run (it runs the core tests about forty times): run it before a release and after
changing one of these modules or its tests (docs/contributing.md). Exit status 1 when any
mutation survives or cannot be applied.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Mutation:
    name: str
    module: str  # where it is counted in the report
    path: str
    old: str  # must occur exactly once in `path`
    new: str
    tests: tuple[str, ...]  # test files or node ids; those missing at the commit are left out


T_COMMIT = ("tests/test_invariants_commit.py", "tests/test_transaction.py")
T_DURABLE = ("tests/storage/test_durability.py", "tests/storage/test_atomic.py")
T_ARCHIVE = ("tests/archive/test_chain_positions.py", "tests/archive/test_archive.py",
             "tests/archive/test_append_path.py")
T_RESOLVE = ("tests/digest/test_resolve_invariants.py", "tests/digest/test_resolve.py")
T_GATE = ("tests/guard/test_gate_invariants.py", "tests/guard/test_index_scan.py",
          "tests/guard/test_validate.py", "tests/memory/test_memories.py")
T_RECALL = ("tests/recall/test_expiry_boundary.py", "tests/recall/test_recall.py",
            "tests/recall/test_context.py", "tests/recall/test_context_reads.py",
            "tests/recall/test_context_cache.py")

MUTATIONS = [
    # -- the twelve of issue 35 ------------------------------------------------------------------
    Mutation("cas-without-old-value", "commit path", "desk/storage/git/refs.py",
             'args = (("update-ref", "-m", reason, ref, new, old or zero)',
             'args = (("update-ref", "-m", reason, ref, new)', T_COMMIT),
    Mutation("no-revalidation-when-head-moved-past-known", "commit path", "desk/transaction.py",
             "if known is not None and head != known.commit:  # checked", "if False:  # checked", T_COMMIT),
    Mutation("atomic-write-without-file-fsync", "commit path", "desk/storage/atomic.py",
             "        if durable:\n            os.fsync(fd)\n", "", T_DURABLE),
    Mutation("archive-append-without-record-fsync", "archive", "desk/archive/store.py",
             "            if not self.batch:\n                os.fsync(opened.fd)\n",
             "            if not self.batch:\n", T_DURABLE),
    Mutation("archive-null-prev-mid-file-accepted", "archive", "desk/formats/archive.py",
             'elif prev_ok and rec.get("prev") != prev:',
             'elif prev_ok and rec.get("prev") not in (prev, None):', T_ARCHIVE),
    Mutation("archive-any-damaged-line-is-a-torn-tail", "archive", "desk/formats/archive.py",
             'return isinstance(nxt, dict) and nxt.get("prev") == this_hash',
             "return isinstance(nxt, dict)", T_ARCHIVE),
    Mutation("resolve-not-stale-when-evidence-gone", "resolve", "desk/digest/resolve.py",
             "    if now_ids != seen:", "    if now_ids - seen:", T_RESOLVE),
    Mutation("resolve-actor-check-case-sensitive", "resolve", "desk/digest/resolve.py",
             'if actor.lower() in ("assistant", "agent", "model"):',
             'if actor in ("assistant", "agent", "model"):', T_RESOLVE),
    Mutation("gate-memory-index-always-spliced", "gate", "desk/gate/checks.py",
             "if line is not None] if memory.spliced else None", "if line is not None]", T_GATE),
    Mutation("gate-rule-match-minimum-exclusive", "gate", "desk/gate/memory_gate.py",
             "if len(text) >= MIN_RULE_MATCH:", "if len(text) > MIN_RULE_MATCH:", T_GATE),
    Mutation("recall-expiring-at-as-of-is-candidate", "recall/context", "desk/recall/search.py",
             "columns.expires.items() if at <= as_of)", "columns.expires.items() if at < as_of)", T_RECALL),
    Mutation("context-boundary-from-mode-alone", "recall/context", "desk/recall/context/result.py",
             "boundary_token([self.mode, *(p for s in self.sections for p in (s.key, s.label, s.text))])",
             "boundary_token([self.mode])", T_RECALL),
    # -- as many again over the same modules -----------------------------------------------------
    Mutation("no-revalidation-after-a-lost-swap", "commit path", "desk/transaction.py",
             "                require_valid(self.desk, writes, message)  # on the HEAD a person just made",
             "                pass", T_COMMIT),
    Mutation("lost-swap-is-an-error-not-a-retry", "commit path", "desk/storage/git/refs.py",
             'if "but expected" in words or ', "if ", T_COMMIT),
    Mutation("single-publish-attempt", "commit path", "desk/transaction.py",
             "MOVE_ATTEMPTS = 5", "MOVE_ATTEMPTS = 1", T_COMMIT),
    Mutation("atomic-write-without-folder-fsync", "commit path", "desk/storage/atomic.py",
             "    if durable:\n        fsync_dir(path.parent)\n", "", T_DURABLE),
    Mutation("atomic-write-fsyncs-after-rename", "commit path", "desk/storage/atomic.py",
             "        if durable:\n            os.fsync(fd)\n        stat = os.fstat(fd)\n"
             "        os.close(fd)\n        fd = -1\n        os.chmod(tmp, 0o644)\n        os.replace(tmp, path)\n",
             "        stat = os.fstat(fd)\n        os.chmod(tmp, 0o644)\n        os.replace(tmp, path)\n"
             "        if durable:\n            os.fsync(fd)\n        os.close(fd)\n        fd = -1\n", T_DURABLE),
    Mutation("pending-marker-not-durable", "commit path", "desk/transaction.py",
             "atomic_write(marker, json.dumps(data, ensure_ascii=False).encode())",
             "write_derived(marker, json.dumps(data, ensure_ascii=False).encode())", T_DURABLE),
    Mutation("remove-without-folder-fsync", "commit path", "desk/storage/atomic.py",
             "    except FileNotFoundError:\n        return\n    fsync_dir(path.parent)\n",
             "    except FileNotFoundError:\n        return\n", T_DURABLE),
    Mutation("archive-reader-any-damaged-line-is-torn", "archive", "desk/formats/archive.py",
             "if _closed_by_next(data, end, line_hash(data[pos:end])):",
             "if True:", T_ARCHIVE),
    Mutation("archive-first-line-prev-unchecked", "archive", "desk/formats/archive.py",
             'elif prev_ok and rec.get("prev") != prev:',
             'elif prev_ok and prev is not None and rec.get("prev") != prev:', T_ARCHIVE),
    Mutation("archive-sequence-gap-ignored", "archive", "desk/formats/archive.py",
             "gap = seq is not None and last_seq is not None and seq != last_seq + 1", "gap = False", T_ARCHIVE),
    Mutation("archive-new-dir-not-fsynced", "archive", "desk/archive/store.py",
             "        for folder in self._new_dirs:\n            fsync_dir(folder)\n",
             "        for folder in ():\n            fsync_dir(folder)\n", T_DURABLE),
    Mutation("resolve-not-stale-on-new-evidence", "resolve", "desk/digest/resolve.py",
             "    if now_ids != seen:", "    if seen - now_ids:", T_RESOLVE),
    Mutation("resolve-actor-spaces-kept", "resolve", "desk/digest/resolve.py",
             'actor = " ".join(actor.split())', "actor = actor", T_RESOLVE),
    Mutation("resolve-actor-length-limit-exclusive", "resolve", "desk/digest/resolve.py",
             "len(actor) > ACTOR_MAX:", "len(actor) >= ACTOR_MAX:", T_RESOLVE),
    Mutation("gate-spliced-without-comparing-index", "gate", "desk/gate/index_rule.py",
             "if patched is not None and patched == memory.index:", "if patched is not None:", T_GATE),
    Mutation("gate-spliced-lines-never-rescanned", "gate", "desk/gate/rules.py",
             "if unscanned is None or not _clean(unscanned):", "if unscanned is None:", T_GATE),
    Mutation("gate-rule-match-without-normalising-rules", "gate", "desk/gate/memory_gate.py",
             "if text in normalize(rules):", "if text in rules:", T_GATE),
    Mutation("context-expiring-at-as-of-injected", "recall/context", "desk/formats/memory_index.py",
             "return self.expires is not None and parse_time(self.expires) <= now",
             "return self.expires is not None and parse_time(self.expires) < now", T_RECALL),
    Mutation("context-view-keeps-expired-memories", "recall/context", "desk/recall/context/cache.py",
             "active = {n: e for n, e in entries.items() if not e.is_expired(as_of)}",
             "active = dict(entries)", T_RECALL),
    Mutation("recall-record-at-as-of-left-out", "recall/context", "desk/recall/search.py",
             "out.update(d for d, t in enumerate(columns.times) if t > as_of)",
             "out.update(d for d, t in enumerate(columns.times) if t >= as_of)", T_RECALL),
    Mutation("context-cache-expiring-at-as-of-kept", "recall/context", "desk/recall/context/cache.py",
             "if parse_time(at) <= as_of)", "if parse_time(at) < as_of)", T_RECALL),
    Mutation("boundary-token-parts-run-together", "recall/context", "desk/text/escape.py",
             '        digest.update(b"\\0")\n', "", ("tests/text/test_escape.py", *T_RECALL)),
]

# Mutations that change no behaviour a test could see, with the reason: listed so nobody adds them.
EQUIVALENT = {
    "atomic-write-os.rename-for-os.replace": "os.rename replaces an existing file on POSIX as os.replace does",
}


def _apply(copy: Path, m: Mutation) -> str | None:
    """Apply `m` in `copy`; return the original text, None when the snippet is not there exactly once."""
    path = copy / m.path
    text = path.read_text("utf-8")
    if text.count(m.old) != 1:
        return None
    path.write_text(text.replace(m.old, m.new), "utf-8")
    return text


def _run(copy: Path, tests: list[str], timeout: float) -> str:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow", *tests]
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "killed (timeout)"
    if proc.returncode == 1:
        return "killed"
    if proc.returncode == 0:
        return "survived"
    return f"error (pytest exit {proc.returncode}): {proc.stdout[-300:]}{proc.stderr[-300:]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="HEAD", help="the commit whose code and tests are mutated (default HEAD)")
    parser.add_argument("-k", dest="only", default="", help="only mutations whose name contains this")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per mutation's tests")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the first run of every listed test without a mutation")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if args.only in m.name]
    with tempfile.TemporaryDirectory(prefix="desk-mutations-") as tmp:
        copy = Path(tmp) / "repo"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(copy), args.rev], check=True)
        try:
            probe = subprocess.run([sys.executable, "-c", "import desk; print(desk.__file__)"], cwd=tmp,
                                   env={**os.environ, "PYTHONPATH": str(copy)}, capture_output=True, text=True)
            if not probe.stdout.startswith(str(copy)):
                print(f"the copy's desk is not the one imported ({probe.stdout.strip()}): aborting", file=sys.stderr)
                return 2
            if not args.no_baseline:  # a test failing anyway would count every mutation killed
                listed = sorted({t for m in chosen for t in m.tests if (copy / t.split("::")[0]).exists()})
                baseline = _run(copy, listed, args.timeout * 2)
                if baseline != "survived":
                    print(f"the tests fail without any mutation ({baseline}): aborting", file=sys.stderr)
                    return 2
            tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            bad = 0
            for m in chosen:
                tests = [t for t in m.tests if (copy / t.split("::")[0]).exists()]
                original = _apply(copy, m)
                started = time.monotonic()
                if original is None:
                    outcome = "not applicable (snippet not found exactly once)"
                elif not tests:
                    outcome = "survived (no test file at this commit)"
                else:
                    outcome = _run(copy, tests, args.timeout)
                if original is not None:
                    (copy / m.path).write_text(original, "utf-8")
                killed = outcome.startswith("killed")
                tally[m.module][0] += killed
                tally[m.module][1] += 1
                bad += not killed
                print(f"{outcome.split(':')[0]:<10} {m.name} ({m.path}, {time.monotonic() - started:.0f} s)"
                      + ("" if killed or outcome == "survived" else f"\n    {outcome}"), flush=True)
            print("\nkilled per module:")
            for module, (k, n) in tally.items():
                print(f"  {module:<16} {k}/{n}")
            total = sum(k for k, _ in tally.values())
            print(f"  {'all':<16} {total}/{len(chosen)}")
            for name, reason in EQUIVALENT.items():
                print(f"equivalent (not run): {name}: {reason}")
            return 1 if bad else 0
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(copy)], check=False)


if __name__ == "__main__":
    sys.exit(main())
