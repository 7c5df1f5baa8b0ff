"""Recall as of a time (`desk recall --as-of T`, docs/time.md): the search cache seen as the desk
committed at the last commit at or before T.

The cache holds the memory files of the work tree, each by blob id. A read as of T keeps the
records whose (path, blob) the commit holds, sets the others aside as tombstones do (out of every
statistic), and adds records for the commit's files the cache does not hold (changed, renamed or
forgotten since): only those blobs are read, in one `cat-file --batch`, and their records are
kept in the cache (`pastrecs`, by path and blob) so the next read as of a time does not parse
them again. Which records a commit keeps, sets aside and adds is kept too (`pastviews`, by
commit and the cache's generation, which every change of the cache moves on), so a read at the
same commit skips the `ls-tree` and the comparison. Nothing else is written. Memories not valid
at T (`valid_from <= T < valid_to`) are set aside too. Conversation records are the archive's up to T, as every recall at a time reads them.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from collections.abc import Iterable
from typing import Any

from desk.layout import DeskFolder
from desk.memory.past import Past, memory_blobs
from desk.recall.records import KIND_NAMES, VALIDITY_TAG, Record, memory_record
from desk.recall.search_cache import SearchCache
from desk.recall.search_writer import Columns
from desk.text.times import parse_time


def _loaded(text: str) -> Record | None:
    found = json.loads(text)
    if found is None:
        return None  # the file did not parse: not searchable
    rid, kind, time, expires, terms, data, tags = found
    return Record(rid, kind, time, expires, Counter(terms), data, tuple(tags))


class PastView:
    """What `desk.recall.search.search` reads of a cache (columns, postings, rids, record data),
    for the desk as committed at `past.commit` and valid at `past.when`."""

    def __init__(self, cache: SearchCache, past: Past) -> None:
        self.desk: DeskFolder = cache.desk
        self.past = past
        self._cache = cache
        base = cache.columns
        columns = self.columns = Columns(base.generation)
        columns.times, columns.lengths = array("d", base.times), array("I", base.lengths)
        columns.kinds, columns.sessions = bytearray(base.kinds), array("I", base.sessions)
        columns.dead, columns.expires = set(base.dead), dict(base.expires)
        columns.sum_len, columns.max_time = base.sum_len, base.max_time
        assert past.commit is not None  # before the first commit there is nothing to view
        kept_view = cache.past_view(past.commit)
        if kept_view is None:
            files = memory_blobs(cache.desk, past)
            held = cache.memory_docs()
            keep = {doc for path, (blob, doc) in held.items() if doc is not None and files.get(path) == blob}
            drop = sorted(cache.memory_records() - keep)
            wanted = sorted(f"{path}\0{blob}" for path, blob in files.items() if held.get(path, (None, None))[0] != blob)
            cache.keep_past_view(past.commit, json.dumps([sorted(keep), drop, wanted]))
        else:
            listed, drop, wanted = json.loads(kept_view)
            keep = set(listed)
        for doc in drop:
            self.columns.drop(doc)
        kept = cache.past_records(wanted)
        data = cache.desk.git.objects.read_blobs({k.partition("\0")[2] for k in wanted if k not in kept})
        self._extra: dict[int, Record] = {}
        self._extra_postings: dict[str, list[tuple[int, int]]] = {}
        made = {}
        for key in wanted:
            path, _, blob = key.partition("\0")
            if key in kept:
                record = _loaded(kept[key])
            elif blob in data:
                record = memory_record(data[blob], path)
                made[key] = json.dumps(None if record is None else [
                    record.rid, record.kind, record.time, record.expires, record.terms, record.data,
                    record.tags], ensure_ascii=False)
            else:
                continue
            if record is not None:
                self._add(record)
        cache.keep_past_records(made)
        for doc in [*cache.postings(VALIDITY_TAG)[0], *self._extra]:
            if doc in keep or doc in self._extra:
                shown = self.record_data(doc)["provenance"]
                start, end = (shown.get(k) for k in ("valid_from", "valid_to"))
                if (start and parse_time(start) > past.when) or (end and parse_time(end) <= past.when):
                    self.columns.drop(doc)
        # A memory the commit holds existed then, whatever its `updated` says (a clock ahead, a
        # person's hand): it is searched, as updated no later than T.
        when, times = past.when.timestamp(), columns.times
        for doc in [*keep, *self._extra]:
            if times[doc] > when:
                times[doc] = when

    def _add(self, record: Record) -> None:
        c = self.columns
        doc = c.count
        length = sum(record.terms.values())
        c.times.append(float("nan") if record.time is None else record.time)
        c.lengths.append(length)
        c.kinds.append(record.kind)
        c.sessions.append(0)
        c.sum_len += length
        if record.expires is not None:
            c.expires[doc] = record.expires
        self._extra[doc] = record
        for term, tf in [*record.terms.items(), *((t, 1) for t in record.tags)]:
            self._extra_postings.setdefault(term, []).append((doc, min(tf, 255)))

    def postings(self, term: str) -> tuple[array[int], array[int]]:
        """The cache's posting list of `term`, then the added records' (numbered after the cache's)."""
        ids, tfs = self._cache.postings(term)
        extra = self._extra_postings.get(term)
        if not extra:
            return ids, tfs
        return array("I", [*ids, *(d for d, _ in extra)]), array("B", [*tfs, *(f for _, f in extra)])

    def rids(self, docs: Iterable[int]) -> dict[int, str]:
        wanted = list(docs)
        found = self._cache.rids(d for d in wanted if d not in self._extra)
        found.update({d: self._extra[d].rid for d in wanted if d in self._extra})
        return found

    def record_data(self, doc: int) -> dict[str, Any]:
        record = self._extra.get(doc)
        if record is None:
            return self._cache.record_data(doc)
        return {"rid": record.rid, "kind": KIND_NAMES[record.kind], **record.data}

    def memory_records(self) -> set[int]:
        return self._cache.memory_records() | set(self._extra)
