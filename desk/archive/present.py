"""Which imported events the archive holds already, so `desk archive import` can be run again.

An event is held when a record of its UTC day (any clone's file) has its id (the record's own
`id`, or the `desk.source_id` an earlier import kept), or the same `at`, `kind`, `content`,
`payload`, `session` and `actor` as stored. Each record answers for one input event only.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from desk.formats.archive import at_key
from desk.archive.store import archive_files
from desk.layout import DeskFolder
from desk.storage.hashing import sha256_hex

SOURCE_ID_META = "desk.source_id"


def content_key(record: dict[str, Any]) -> str:
    """A digest of what an event says and when (its id, desk, chain and meta left out)."""
    fields = [at_key(str(record.get("at", ""))), record.get("kind"), record.get("content"),
              record.get("payload"), record.get("session"), record.get("actor")]
    return sha256_hex(json.dumps(fields, ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass"))


def _source_id(event: dict[str, Any]) -> str | None:
    meta = event.get("meta")
    value = meta.get(SOURCE_ID_META) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def split_present(desk: DeskFolder, events: list[dict[str, Any]]
                  ) -> tuple[list[dict[str, Any]], int]:
    """(the events the archive does not hold yet, in their order; how many it holds already).
    Reads the archive files of the events' days only; call it under the archive lock."""
    ids: set[str] = set()
    contents: Counter[str] = Counter()
    for record in records_of_days(desk, events):
        ids.update(v for v in (record.get("id"), _source_id(record)) if isinstance(v, str))
        contents[content_key(record)] += 1
    new = []
    for event in events:
        key = content_key(event)
        source = _source_id(event)
        if contents[key] > 0:
            contents[key] -= 1  # the same record must not answer for another event too
        elif source is None or source not in ids:
            new.append(event)
    return new, len(events) - len(new)


def records_of_days(desk: DeskFolder, events: Iterable[dict[str, Any]], marker: bytes = b""
                    ) -> Iterator[dict[str, Any]]:
    """The records (with `marker` in their line) of the archive files of the events' UTC days."""
    days = {str(e["at"])[:10] for e in events}
    for afile in archive_files(desk):
        if afile.day not in days:
            continue
        with open(os.path.join(desk.root, afile.rel), "rb") as handle:
            for line in handle:
                if marker not in line:
                    continue
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):
                    continue  # a torn tail: `desk archive verify` reports it
                if isinstance(record, dict):
                    yield record
