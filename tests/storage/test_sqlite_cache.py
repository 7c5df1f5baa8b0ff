"""desk.storage.sqlite_cache: derived SQLite caches, and a desk that cannot keep them."""

from __future__ import annotations

import errno
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from desk.layout import DeskFolder
from desk.storage.sqlite_cache import open_cache, rollback
from tests.conftest import DeskRunner

_SCHEMA = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v TEXT);"


def test_a_cache_whose_folder_cannot_be_made_is_kept_in_memory(tmp_path: Path) -> None:
    # A regular file where the cache folder goes: mkdir fails for root too.
    (tmp_path / "cache").write_text("not a folder")
    db = open_cache(tmp_path / "cache" / "c.sqlite", _SCHEMA, wal=True)
    db.execute("INSERT INTO t VALUES ('a', 'b')")
    assert db.execute("SELECT v FROM t").fetchall() == [("b",)]
    db.close()
    assert (tmp_path / "cache").read_text() == "not a folder"


def test_a_broken_cache_is_made_anew(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"not sqlite at all" * 100)
    db = open_cache(path, _SCHEMA, wal=True)
    db.execute("INSERT INTO t VALUES ('a', 'b')")
    db.close()
    assert open_cache(path, _SCHEMA).execute("SELECT v FROM t").fetchall() == [("b",)]


def test_a_full_cache_is_a_full_disk_naming_the_file_and_its_transaction_ends_cleanly(tmp_path: Path) -> None:
    """SQLite's "database or disk is full" (here its page limit: the same error code a full disk
    gives) is OSError ENOSPC naming the cache file, not hidden by a second error: SQLite already
    rolled the transaction back, and the mirror's write transaction must not roll back again
    ("cannot rollback - no transaction is active")."""
    from desk.gate.mirror import _write

    path = tmp_path / "c.sqlite"
    db = open_cache(path, _SCHEMA, wal=True)
    db.execute("PRAGMA max_page_count = 4")
    with pytest.raises(OSError) as caught, _write(db):
        db.executemany("INSERT INTO t VALUES (?, ?)", [(str(i), "x" * 1000) for i in range(50)])
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(path))
    assert not db.in_transaction
    assert db.execute("SELECT count(*) FROM t").fetchone() == (0,)
    rollback(db)  # nothing open: nothing to do


_AS_OF = ("--now", "2030-01-01T00:00:00Z")
_READS = (("list", "--json"), ("stats", "--json"), ("context", "--query", "report", *_AS_OF),
          ("recall", "report", "--json", *_AS_OF), ("show", "report-style", "--json"))
_MARK = "@@exit@@"


def _reads(root: Path, read_only: bool) -> list[tuple[str, int]]:
    """The output of each of _READS, run in one shell: on a read-only bind mount of the desk in
    a mount namespace of its own (`unshare`, so root too is refused every write), or as it is."""
    desk = [sys.executable, "-m", "desk", "--desk", str(root)]
    script = "; ".join(f"{' '.join(map(_quote, desk + list(args)))} 2>&1; echo {_MARK}$?" for args in _READS)
    if read_only:
        script = f'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" || exit 99; {script}'
        argv = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, str(root)]
    else:
        argv = ["sh", "-c", script]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if read_only and proc.returncode == 99 or proc.returncode and not proc.stdout:
        pytest.skip(f"no read-only bind mount here (unshare): {proc.stderr.strip()}")
    parts = re.split(f"{_MARK}(\\d+)\n", proc.stdout)
    return [(out, int(code)) for out, code in zip(parts[0::2], parts[1::2])]


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1) for a read-only mount")
def test_reads_of_a_read_only_desk_give_the_same_answers(desk: DeskFolder, run: DeskRunner,
                                                         identity: None) -> None:
    """`desk list`, `stats`, `context`, `recall` and `show` of a desk on a read-only mount (or
    another user's desk): the same output, caches not kept. Honest for root as well: a read-only
    mount refuses root's writes, where file permissions would not."""
    assert run("remember", "report-style", "--type", "preference", "-d", "Report style",
               "--trigger", "report", "Reports in Chinese.").exit_code == 0
    shutil.rmtree(desk.cache_dir)  # a clone that never kept a cache: its folder cannot be made
    cold = _reads(desk.root, read_only=True)
    assert not desk.cache_dir.exists()
    warm_writable = _reads(desk.root, read_only=False)  # keeps the caches
    assert (desk.cache_dir / "entries.sqlite").is_file()
    warm = _reads(desk.root, read_only=True)  # caches there, but not writable
    assert [code for _, code in warm_writable] == [0] * len(_READS), warm_writable
    # Compared without what `desk stats` says of the moment (it has no --as-of) and of the caches.
    for reads in (cold, warm_writable, warm):
        reads[1] = (re.sub(r'"(as_of|cache_bytes)": [^,\n]*', "", reads[1][0]), reads[1][1])
    assert cold == warm_writable == warm
    hits = json.loads(warm[3][0])["hits"]
    assert [hit["id"] for hit in hits] == ["memory:report-style"]


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


@pytest.mark.parametrize("linked", ["c.sqlite", "c.sqlite-wal", "folder"])
def test_a_cache_behind_a_symlink_is_kept_in_memory_and_the_target_untouched(tmp_path: Path, linked: str) -> None:
    """SQLite follows links: a cache file (or its folder) that is a link to something outside is
    never opened through it (issue 27.3)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "c.sqlite").write_bytes(b"")
    folder = tmp_path / "cache"
    if linked == "folder":
        folder.symlink_to(outside)
    else:
        folder.mkdir()
        (folder / linked).symlink_to(outside / "c.sqlite")
    db = open_cache(folder / "c.sqlite", _SCHEMA, wal=True)
    db.execute("INSERT INTO t VALUES ('a', 'b')")
    assert db.execute("SELECT v FROM t").fetchall() == [("b",)]
    db.close()
    assert sorted(p.name for p in outside.iterdir()) == ["c.sqlite"]
    assert (outside / "c.sqlite").read_bytes() == b""
