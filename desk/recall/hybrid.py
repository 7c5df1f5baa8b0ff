"""Hybrid recall (optional, off by default): a dense retriever a person plugs in, fused with the
lexical ranking by reciprocal rank fusion (docs/recall.md "Hybrid retrieval (optional)").

desk ships no model. An *embedder* is any object with a `name`, a `dimension` and
`embed(texts) -> vectors`; it is named by `--embedder` (or `$DESK_EMBEDDER`) as an entry point of
the `desk.embedders` group (an installed distribution declares it) or as `package.module:factory`,
and made by calling that factory with no arguments.

Record vectors live in `.git/desk-cache/embeddings.sqlite` (derived, never committed): keyed by record id,
embedder (name and dimension) and a hash of the record's text, and computed incrementally: a
recall embeds only the records the search cache gained since the last one (or whose text changed).
The dense ranking is an exact cosine over every searchable record's vector (stdlib only, linear in
the records); the fused score of a record is `1/(k + lexical rank) + 1/(k + dense rank)` (k = 60,
each list taken to `DEPTH`), and its breakdown names both ranks and both contributions, which sum
to the total.
"""

from __future__ import annotations

import hashlib
import heapq
import importlib
import math
import operator
import sqlite3
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from desk.errors import DeskError, UsageError
from desk.storage.sqlite_cache import open_cache

if TYPE_CHECKING:
    from desk.layout import DeskFolder
    from desk.recall.rank import ScoreBreakdown
    from desk.recall.search_cache import SearchCache

ENTRY_POINT_GROUP = "desk.embedders"
RRF_K = 60
DEPTH = 50  # how far down each ranking is fused
EMBED_BATCH = 64  # texts per embed() call
CACHE_FILE = "embeddings.sqlite"
_SCHEMA_SQL = """
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
    CREATE TABLE IF NOT EXISTS docmap (doc INTEGER PRIMARY KEY, rid TEXT NOT NULL, hash TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS vectors (embedder TEXT NOT NULL, rid TEXT NOT NULL, hash TEXT NOT NULL,
                                        vec BLOB NOT NULL, PRIMARY KEY (embedder, rid, hash)) WITHOUT ROWID;
"""
_HINT_SPEC = ("give an entry point name of the `desk.embedders` group or `package.module:factory` "
              "(docs/recall.md \"Hybrid retrieval (optional)\")")

Progress = Callable[[int, int], None]


@runtime_checkable
class Embedder(Protocol):
    """What a dense retriever gives desk: one vector of `dimension` floats per text, in order."""

    name: str
    dimension: int

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def installed_embedders() -> list[str]:
    """Names of the `desk.embedders` entry points of the installed distributions."""
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)})


def load_embedder(spec: str) -> Embedder:
    """The embedder `spec` names: an entry point of `desk.embedders`, or `package.module:factory`.

    UsageError (exit 2) when nothing by that name exists; DeskError (exit 1) when its module or
    factory fails, or what the factory returns is no embedder.
    """
    spec = spec.strip()
    if not spec:
        raise UsageError("--embedder is empty", hint=_HINT_SPEC)
    factory: Any
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                raise UsageError(f"--embedder {spec!r}: no module named {module_name!r}", hint=_HINT_SPEC) from None
            raise _failed(spec, "its module failed to import", exc) from None
        except Exception as exc:
            raise _failed(spec, "its module failed to import", exc) from None
        factory = getattr(module, attr, None)
        if factory is None:
            raise UsageError(f"--embedder {spec!r}: module {module_name!r} has no {attr!r}", hint=_HINT_SPEC)
    else:
        from importlib.metadata import entry_points

        found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == spec]
        if not found:
            names = installed_embedders()
            known = f"installed: {', '.join(names)}" if names else "none is installed"
            raise UsageError(f"--embedder {spec!r}: no embedder of that name ({known})", hint=_HINT_SPEC)
        try:
            factory = found[0].load()
        except Exception as exc:
            raise _failed(spec, "its entry point failed to load", exc) from None
    if not callable(factory):
        raise DeskError(f"--embedder {spec!r}: {factory!r} is not a factory",
                        hint="point at a function or class that takes no arguments and returns the embedder")
    try:
        made = factory()
    except Exception as exc:
        raise _failed(spec, "its factory raised", exc) from None
    return check_embedder(made, f"--embedder {spec!r}: the factory returned")


def check_embedder(made: object, label: str = "embedder=") -> Embedder:
    """`made` when it is an embedder (`name` text, `dimension` a positive int, `embed`
    callable); DeskError (exit 1) otherwise."""
    name, dimension = getattr(made, "name", None), getattr(made, "dimension", None)
    if (not isinstance(name, str) or not name.strip() or "\n" in name or not isinstance(dimension, int)
            or isinstance(dimension, bool) or dimension < 1 or not callable(getattr(made, "embed", None))):
        raise DeskError(f"{label} {type(made).__name__}, not an embedder",
                        hint="an embedder has `name` (text), `dimension` (a positive int) and "
                             "`embed(texts) -> list of vectors`")
    assert isinstance(made, Embedder)
    return made


def _failed(spec: str, what: str, exc: BaseException) -> DeskError:
    return DeskError(f"--embedder {spec!r}: {what}: {type(exc).__name__}: {exc}",
                     hint="fix or reinstall the embedder, or recall without --embedder (lexical only)")


def embed_checked(embedder: Embedder, texts: list[str]) -> list[array[float]]:
    """`embedder.embed(texts)`, checked (one vector per text, `dimension` finite numbers each)
    and scaled to unit length (a zero vector stays zero): DeskError (exit 1) otherwise."""
    label = f"embedder {embedder.name!r}"
    try:
        vectors = embedder.embed(list(texts))
    except Exception as exc:
        raise DeskError(f"{label} failed: {type(exc).__name__}: {exc}",
                        hint="fix the embedder, or recall without --embedder (lexical only)") from None
    try:
        vectors = list(vectors)
    except TypeError:
        vectors = []
    if len(vectors) != len(texts):
        raise DeskError(f"{label} returned {len(vectors)} vectors for {len(texts)} texts",
                        hint="embed() must return one vector per text, in order")
    out = []
    for vector in vectors:
        try:
            values = [float(x) for x in vector]
        except (TypeError, ValueError):
            raise DeskError(f"{label} returned a vector that is not a list of numbers",
                            hint="embed() must return lists of floats") from None
        if len(values) != embedder.dimension:
            raise DeskError(f"{label} returned a vector of dimension {len(values)}, not its declared "
                            f"{embedder.dimension}", hint="fix the embedder's `dimension` or its output")
        if not all(math.isfinite(x) for x in values):
            raise DeskError(f"{label} returned a vector holding NaN or infinity", hint="fix the embedder")
        norm = math.sqrt(sum(x * x for x in values))
        out.append(array("f", [x / norm for x in values] if norm else values))
    return out


def record_text(data: dict[str, Any]) -> str:
    """What is embedded of a record: a memory's name, description and body; an event's content."""
    parts = [data.get("name"), data.get("description"), data.get("text")]
    return " ".join(p for p in parts if isinstance(p, str) and p)


@dataclass(frozen=True)
class HybridBreakdown:
    """A fused hit's score: both rankings' ranks and their reciprocal-rank contributions."""

    lexical: ScoreBreakdown | None  # None: the lexical ranking did not find it within DEPTH
    lexical_rank: int | None
    dense_rank: int | None
    cosine: float | None
    embedder: str
    contributions: dict[str, float]
    total: float

    @property
    def matched_terms(self) -> tuple[str, ...]:
        return self.lexical.matched_terms if self.lexical else ()

    @property
    def lexical_coverage(self) -> float:
        return self.lexical.lexical_coverage if self.lexical else 0.0

    @property
    def recency(self) -> float:
        return self.lexical.recency if self.lexical else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"fusion": "rrf", "rrf_k": RRF_K, "depth": DEPTH,
                "matched_terms": list(self.matched_terms), "lexical_coverage": self.lexical_coverage,
                "recency": self.recency,
                "lexical": {"rank": self.lexical_rank,
                            "score_breakdown": self.lexical.to_json() if self.lexical else None},
                "dense": {"rank": self.dense_rank, "cosine": self.cosine, "embedder": self.embedder},
                "contributions": self.contributions, "total": self.total}


class DenseIndex:
    """One embedder's vectors of the search cache's records; kept warm across recalls."""

    def __init__(self, desk: DeskFolder, embedder: Embedder, progress: Progress | None = None) -> None:
        self.desk = desk
        self.embedder = embedder
        self.progress = progress  # progress(done, total) in records while a sync embeds
        self.key = f"{embedder.name}/{embedder.dimension}"
        self.path = desk.cache_dir / CACHE_FILE
        self._db: sqlite3.Connection | None = None
        self._vectors: dict[int, array[float]] = {}  # record number -> unit vector
        self._loaded = 0  # record numbers below this are in _vectors (when they have one)
        self._mark = ""  # the search cache's lineage at _loaded
        self.embedded = 0  # texts the last sync sent to the embedder

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = open_cache(self.path, _SCHEMA_SQL, wal=True)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def sync(self, cache: SearchCache) -> int:
        """Embed the searchable records that have no vector for this embedder yet (new records,
        or a changed text); return how many. All or nothing: a failing embedder writes nothing.

        Record numbers are the search cache's; they start over when it is rebuilt, which the rid
        of its first and last numbered record tells (then the map is made again from the search
        cache, and vectors, keyed by record id and text, are reused).
        """
        db = self._connect()
        count = cache.columns.count
        mark = _lineage(cache, count)
        if self._loaded and (self._loaded > count or _lineage(cache, self._loaded) != self._mark):
            self._vectors, self._loaded = {}, 0  # this process's map is of a rebuilt cache
        upto = f"upto:{self.key}"
        meta = dict(db.execute("SELECT key, value FROM meta"))
        if meta.get("lineage") == mark and int(meta.get(upto) or 0) == count:
            self.embedded = 0  # nothing new: no write transaction
            self._load(db, count, mark)
            return 0
        db.execute("BEGIN IMMEDIATE")
        try:
            missing = self._embed_missing(db, cache, count, upto)
            db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                           [("synced", count), ("lineage", mark), (upto, count)])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.embedded = len(missing)
        if missing:
            self._loaded = min(self._loaded, missing[0][0])
        self._load(db, count, mark)
        return len(missing)

    def _embed_missing(self, db: sqlite3.Connection, cache: SearchCache, count: int,
                       upto: str) -> list[tuple[int, str, str]]:
        """Map the records numbered since the last sync, then embed those of them (and of the
        records numbered since this embedder's last sync) that have no vector: inside the
        caller's transaction."""
        dead = cache.columns.dead
        meta = dict(db.execute("SELECT key, value FROM meta"))
        synced, first = int(meta.get("synced") or 0), int(meta.get(upto) or 0)
        if synced > count or meta.get("lineage") != _lineage(cache, synced):
            db.execute("DELETE FROM docmap")  # the search cache was rebuilt: map it again
            db.execute("DELETE FROM meta WHERE key LIKE 'upto:%'")
            synced = first = 0
            self._vectors, self._loaded = {}, 0
        texts: dict[int, str] = {}
        rows = []
        for doc in range(synced, count):
            if doc in dead:
                continue
            data = cache.record_data(doc)
            text = texts[doc] = record_text(data)
            rows.append((doc, str(data["rid"]), hashlib.sha256(text.encode()).hexdigest()[:32]))
        db.executemany("INSERT OR REPLACE INTO docmap VALUES (?, ?, ?)", rows)
        if synced == 0:  # a full map of the live records: a vector no record has is stale
            db.execute("DELETE FROM vectors WHERE NOT EXISTS (SELECT 1 FROM docmap d "
                       "WHERE d.rid = vectors.rid AND d.hash = vectors.hash)")
        missing = [(d, r, h) for d, r, h in db.execute(
            "SELECT d.doc, d.rid, d.hash FROM docmap d LEFT JOIN vectors v ON v.embedder=? AND "
            "v.rid=d.rid AND v.hash=d.hash WHERE d.doc >= ? AND v.rid IS NULL ORDER BY d.doc",
            (self.key, min(first, synced))) if d not in dead]
        for start in range(0, len(missing), EMBED_BATCH):
            part = missing[start:start + EMBED_BATCH]
            batch = [texts[d] if d in texts else record_text(cache.record_data(d)) for d, _, _ in part]
            vectors = embed_checked(self.embedder, batch)
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                           [(self.key, r, h, v.tobytes()) for (_, r, h), v in zip(part, vectors)])
            if self.progress is not None:
                self.progress(start + len(part), len(missing))
        return missing

    def _load(self, db: sqlite3.Connection, count: int, mark: str) -> None:
        if self._loaded < count:
            for doc, blob in db.execute(
                    "SELECT d.doc, v.vec FROM docmap d JOIN vectors v ON v.embedder=? AND v.rid=d.rid AND "
                    "v.hash=d.hash WHERE d.doc >= ?", (self.key, self._loaded)):
                vector = array("f")
                vector.frombytes(blob)
                self._vectors[doc] = vector
        self._loaded, self._mark = count, mark

    def ranking(self, query_text: str, excluded: set[int], depth: int,
                rid_of: Callable[[int], str]) -> list[tuple[int, float]]:
        """The `depth` records nearest the query (cosine, exact), best first; ties by record id."""
        (q,) = embed_checked(self.embedder, [query_text])
        best = heapq.nlargest(depth, ((sum(map(operator.mul, q, v)), doc)
                                      for doc, v in self._vectors.items() if doc not in excluded))
        ordered = sorted(best, key=lambda item: (-item[0], rid_of(item[1])))
        return [(doc, cosine) for cosine, doc in ordered]


def fuse(lexical: Sequence[tuple[ScoreBreakdown, int]], dense: Sequence[tuple[int, float]], limit: int,
         embedder: str, rid_of: Callable[[int], str]) -> list[tuple[HybridBreakdown, int]]:
    """Reciprocal rank fusion of the two rankings: the top `limit` by the summed contributions,
    then the better of the two ranks, then record id."""
    lex = {doc: (rank, breakdown) for rank, (breakdown, doc) in enumerate(lexical, 1)}
    den = {doc: (rank, cosine) for rank, (doc, cosine) in enumerate(dense, 1)}
    scored = []
    for doc in lex.keys() | den.keys():
        lrank, breakdown = lex.get(doc, (None, None))
        drank, cosine = den.get(doc, (None, None))
        parts = {"lexical_rrf": round(1 / (RRF_K + lrank), 9) if lrank else 0.0,
                 "dense_rrf": round(1 / (RRF_K + drank), 9) if drank else 0.0}
        total = round(parts["lexical_rrf"] + parts["dense_rrf"], 9)
        hit = HybridBreakdown(breakdown, lrank, drank, None if cosine is None else round(cosine, 6),
                              embedder, parts, total)
        scored.append(((-total, min(lrank or DEPTH + 1, drank or DEPTH + 1), rid_of(doc)), hit, doc))
    scored.sort(key=lambda item: item[0])
    return [(hit, doc) for _, hit, doc in scored[:limit]]


def hybrid_top(index: DenseIndex, cache: SearchCache, query_text: str,
               lexical_top: Callable[[int], Sequence[tuple[ScoreBreakdown, int]]],
               excluded: set[int], limit: int) -> list[tuple[HybridBreakdown, int]]:
    """Stages 3 and 4 with a dense retriever: the records the search cache gained are embedded,
    then the lexical top `DEPTH` (`lexical_top(DEPTH)`, whichever ranker the query chose) and the
    dense top `DEPTH` are fused."""
    index.sync(cache)
    lexical = lexical_top(DEPTH)
    dense = index.ranking(query_text, excluded, DEPTH, cache.rid)
    return fuse(lexical, dense, limit, index.key, cache.rid)


def _lineage(cache: SearchCache, count: int) -> str:
    """Which numbering of the search cache's records the first `count` are: the ids of its first
    and last record (a rebuilt cache numbers its records anew)."""
    return f"{count}:{cache.rid(0)}:{cache.rid(count - 1)}" if count else "0"
