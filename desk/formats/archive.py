"""The archive's record format: names, times, field rules, the chain, and byte-level line parsing
(pure functions shared by the writer, the readers, the gate and `desk archive verify`)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from desk.errors import Finding, InvalidFileError, UsageError
from desk.layout import ARCHIVE_DIR
from desk.storage.hashing import sha256_hex
from desk.text.times import TimeFormatError, parse_time

FIELDS = frozenset({"id", "desk_id", "at", "recorded_at", "kind", "session", "actor", "content",
                    "payload", "meta", "prev"})
MAX_RECORD_BYTES = 1024 * 1024
_FILE_RE = re.compile(r"(\d{4}-\d{2}-\d{2})\.([0-9a-z]{4,40})\.jsonl")
_ID_RE = re.compile(r"\d{8}T\d{12}Z-[0-9a-z]{4,40}-(\d{8})-(\d{6,})")
_KIND_RE = re.compile(r"[a-z][a-z0-9_.-]{0,39}")
_HASH_RE = re.compile(r"sha256:[0-9a-f]{64}")
# NaN and Infinity are refused: they are not JSON (RFC 8259), and other readers reject the line.
_JSON_TEXT = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
# A record's line: UTF-8 JSON, keys sorted, compact separators (docs/working-desk.md "File format").
record_json = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                               allow_nan=False).encode


class ArchiveFile(NamedTuple):
    """One archive file: its UTC day and the clone that writes it (a tuple: sorted by day, then clone)."""

    day: str
    clone: str

    @property
    def rel(self) -> str:
        return archive_file(self.day, self.clone)

    @classmethod
    def from_name(cls, name: str) -> ArchiveFile | None:
        m = _FILE_RE.fullmatch(name)
        return cls(m.group(1), m.group(2)) if m else None


def archive_file(day: str, clone: str) -> str:
    return f"{ARCHIVE_DIR}/{day}.{clone}.jsonl"


def is_stored_time(value: object) -> bool:
    """Whether `value` is a time spelled as the archive stores it (seconds or microseconds, `Z`)."""
    if not isinstance(value, str):
        return False
    try:
        parse_time(value, form="stored")
    except TimeFormatError:
        return False
    return True


def at_key(value: str) -> str:
    """A time string in the microsecond form, so the seconds form sorts with it correctly."""
    return value[:19] + ".000000Z" if len(value) == 20 else value


def line_hash(line: bytes) -> str:
    return "sha256:" + sha256_hex(line)  # no OpenSSL for a line of a few kB


def seq_of(event_id: object) -> int | None:
    m = _ID_RE.fullmatch(event_id) if isinstance(event_id, str) else None
    return int(m.group(2)) if m else None


MAX_PAYLOAD_DEPTH = 64  # redaction and every reader walk a payload recursively; ~500 levels overflowed


def payload_depth_problem(payload: object) -> str | None:
    """`payload: nested deeper than ...` when it is, else None (held only to new events)."""
    stack: list[tuple[object, int]] = [(payload, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_PAYLOAD_DEPTH:
                return f"payload: nested deeper than {MAX_PAYLOAD_DEPTH} levels"
            stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return None


def validate_fields(event: dict[str, Any], *, check_at: bool = True) -> str | None:
    """What is wrong with the caller-supplied fields of an event, or None (`check_at=False`: desk
    formatted `at` itself). On the append path: only what a lone surrogate breaks is encoded."""
    kind = event.get("kind")
    if not isinstance(kind, str) or not _KIND_RE.fullmatch(kind):
        return f"kind: {kind!r} must be a lowercase word ([a-z][a-z0-9_.-]*, at most 40 characters)"
    for key in ("session", "actor", "content"):
        if event.get(key) is not None and not isinstance(event[key], str):
            return f"{key}: must be a string or null"
    if event.get("payload") is not None and not isinstance(event["payload"], dict):
        return "payload: must be a JSON object or null"
    meta = event.get("meta")
    if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                             for k, v in meta.items()):
        return "meta: must map strings to strings"
    if check_at and not is_stored_time(event.get("at")):
        return f"at: {event.get('at')!r} is not a UTC time YYYY-MM-DDTHH:MM:SS[.ffffff]Z"
    for key, value in event.items():
        try:
            if isinstance(value, str):
                if not value.isascii():
                    value.encode("utf-8")
            elif value:
                _JSON_TEXT(value).encode("utf-8")
        except UnicodeEncodeError:
            return f"{key}: holds characters that are not valid UTF-8 (a lone surrogate)"
        except ValueError:  # allow_nan=False
            return f"{key}: holds NaN or Infinity, which JSON cannot carry (use null or a string)"
    return None


def check_record_size(line: bytes) -> None:
    """Refuse (exit 2) a record line over MAX_RECORD_BYTES, before anything is written."""
    if len(line) > MAX_RECORD_BYTES:
        raise UsageError(f"the record is {len(line):,} bytes; one archive record holds at most "
                         f"{MAX_RECORD_BYTES:,} bytes ({MAX_RECORD_BYTES // (1024 * 1024)} MiB)",
                         hint="store a large artefact as a file in the desk (or outside it) and "
                              "archive a reference to it")


def record_problem(rec: object, desk_id: str, day: str) -> str | None:
    """What makes `rec` an invalid record of this desk in the file of `day`, or None."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    missing = sorted(FIELDS - rec.keys())
    if missing:
        return "missing field(s): " + ", ".join(missing)
    extra = sorted(rec.keys() - FIELDS)
    if extra:
        return "unknown field(s): " + ", ".join(extra)
    problem = validate_fields(rec)
    if problem:
        return problem
    if rec["desk_id"] != desk_id:
        return f"desk_id {rec['desk_id']!r} is not this desk's ({desk_id})"
    if rec["at"][:10] != day:
        return f"at {rec['at']} does not belong in the file of {day}"
    if not is_stored_time(rec["recorded_at"]):
        return "recorded_at: not a UTC time"
    if seq_of(rec["id"]) is None:
        return f"id {rec['id']!r} is not a desk event id"
    if rec["prev"] is not None and not (isinstance(rec["prev"], str) and _HASH_RE.fullmatch(rec["prev"])):
        return "prev: must be sha256:<64 hex> or null"
    return None


def redact_event(event: dict[str, Any]) -> dict[str, Any]:
    """Redact known secrets in content, payload and meta (keys and values at any depth); `session`
    and `actor` are ids, never redacted: one holding a secret is refused (`refuse_secret_ids`)."""
    from desk.text.secrets import redact  # here: readers of the archive (context's recent facts) never redact

    refuse_secret_ids(event)  # the fields are valid here: content a string or None, payload an object or None
    kinds: list[str] = []
    out = {**event, **{key: _redact_value(event[key], kinds, redact) for key in ("content", "payload", "meta")}}
    if kinds:
        out["meta"]["desk.redacted"] = ",".join(sorted(set(kinds)))
    return out


def refuse_secret_ids(event: dict[str, Any]) -> None:
    """UsageError when `session` or `actor` holds a secret: ids are never redacted in place."""
    from desk.text.secrets import SHORTEST_SECRET, scan

    for key in ("session", "actor"):
        value = event.get(key)
        # No pattern matches fewer than SHORTEST_SECRET characters: short ids (most) skip the scan.
        if isinstance(value, str) and len(value) >= SHORTEST_SECRET and (found := scan(value)):
            raise UsageError(f"{key}: holds what looks like a secret ({found[0].kind}, {found[0].preview}); "
                             "ids are kept as they are and become file names", hint=f"pass another {key}")


def _redact_value(value: Any, kinds: list[str], redact: Callable[[str], tuple[str, list[str]]]) -> Any:
    if isinstance(value, str):
        text, found = redact(value)
        kinds.extend(found)
        return text
    if isinstance(value, dict):
        return {_redact_value(k, kinds, redact): _redact_value(v, kinds, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, kinds, redact) for v in value]
    return value


def _loads(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None


def read_tail(fd: int, size: int) -> tuple[str | None, int, bool]:
    """(hash of the last line, seq of the last parseable record, ends with a newline) of an open file."""
    return _tail(lambda length, offset: os.pread(fd, length, offset), size)


def _tail(pread: Callable[[int, int], bytes], size: int) -> tuple[str | None, int, bool]:
    """`read_tail` of the first `size` bytes `pread(length, offset)` reads, backwards in growing chunks."""
    if size == 0:
        return None, 0, True
    chunk = 4096
    while True:
        start = max(0, size - chunk)
        data = pread(size - start, start)
        ends = data.endswith(b"\n")
        lines = (data[:-1] if ends else data).split(b"\n")
        if start > 0:
            lines = lines[1:]  # the first piece may begin mid-line
        if not lines:
            chunk *= 4
            continue
        prev = line_hash(lines[-1])
        for line in reversed(lines):
            rec = _loads(line)
            seq = seq_of(rec.get("id")) if isinstance(rec, dict) else None
            if seq is not None:
                return prev, seq, ends
        if start == 0:
            return prev, 0, ends
        chunk *= 4


def _closed_by_next(data: bytes, end: int, this_hash: str) -> bool:
    """Whether the line after the one ending at `end` chains onto it: a torn fragment a later append closed."""
    nxt_end = data.find(b"\n", end + 1)
    nxt = _loads(data[end + 1:nxt_end]) if nxt_end >= 0 else None
    return isinstance(nxt, dict) and nxt.get("prev") == this_hash


def parse_lines(data: bytes, path: str, problems: list[Finding]) -> list[tuple[int, int, dict[str, Any]]]:
    """(line, offset, record) for each JSON-object line of an archive file; an unterminated final
    fragment and a fragment a later append closed are reported, any other bad line raises."""
    out: list[tuple[int, int, dict[str, Any]]] = []
    pos, line_no, size = 0, 1, len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        if end < 0:
            problems.append(Finding(path, line_no, "archive-torn",
                                    f"unterminated final fragment ({size - pos} bytes) skipped",
                                    "warning"))
            break
        rec = _loads(data[pos:end])
        if isinstance(rec, dict):
            out.append((line_no, pos, rec))
        else:
            if _closed_by_next(data, end, line_hash(data[pos:end])):
                problems.append(Finding(path, line_no, "archive-torn",
                                        "fragment of a torn write, closed by the next append; skipped",
                                        "warning"))
            else:
                raise InvalidFileError([Finding(path, line_no, "archive-record", "not a JSON record")],
                                       hint="run `desk archive verify` to see every damaged record")
        pos, line_no = end + 1, line_no + 1
    return out


def check_lines(path: str, data: bytes, start: int, desk_id: str, day: str) -> list[Finding]:
    """Check the complete lines of `data` from byte `start` (a line start): records, chain, seq."""
    findings: list[Finding] = []
    line_no = data.count(b"\n", 0, start) + 1
    last_seq: int | None
    prev, last_seq, _ends = _tail(lambda length, offset: data[offset:offset + length], start)
    prev_ok = True  # False after a damaged line: its successor's prev cannot be judged
    pos, size = start, len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        if end < 0:
            findings.append(Finding(path, line_no, "archive-torn",
                                    f"record is truncated: unterminated final fragment of {size - pos} bytes",
                                    "warning"))
            break
        raw = data[pos:end]
        rec = _loads(raw)
        this_hash = line_hash(raw)
        if not isinstance(rec, dict):
            if _closed_by_next(data, end, this_hash):
                findings.append(Finding(path, line_no, "archive-torn",
                                        "fragment of a torn write, closed by the next append", "warning"))
                prev_ok = True
            else:
                findings.append(Finding(path, line_no, "archive-record",
                                        "not valid JSON: the record is damaged"))
                prev_ok, last_seq = False, None
        else:
            problem = record_problem(rec, desk_id, day)
            if problem is None and len(raw) > MAX_RECORD_BYTES:
                problem = f"the record is {len(raw):,} bytes; one record holds at most {MAX_RECORD_BYTES:,}"
            if problem:
                findings.append(Finding(path, line_no, "archive-record", problem))
            seq = seq_of(rec.get("id"))
            gap = seq is not None and last_seq is not None and seq != last_seq + 1
            if gap:
                findings.append(Finding(path, line_no, "archive-chain",
                                        f"sequence jumps from {last_seq} to {seq}: "
                                        "records before this one were removed or reordered"))
            elif prev_ok and rec.get("prev") != prev:
                if prev is None or rec.get("prev") is None:
                    findings.append(Finding(path, line_no, "archive-chain",
                                            "prev does not match the previous line"))
                else:
                    # The sequence is unbroken, so nothing was removed: the line before was altered.
                    findings.append(Finding(path, line_no - 1, "archive-chain",
                                            f"record altered: its hash no longer matches the prev "
                                            f"stored by line {line_no}"))
            prev_ok, last_seq = True, seq if seq is not None else None
        prev = this_hash
        pos, line_no = end + 1, line_no + 1
    return findings


def changed_line(old: bytes, new: bytes) -> int:
    """The line of `old` where `new` first differs from it."""
    return old.count(b"\n", 0, len(os.path.commonprefix([old, new]))) + 1


def check_archive_change(path: str, old: bytes | None, new: bytes, desk_id: str) -> list[Finding]:
    """Findings for a change of one archive file from `old` (None: new file) to `new`: a pure append
    of valid records of this desk, the hash chain and the per-file sequence intact."""
    name = path.rsplit("/", 1)[-1]
    afile = ArchiveFile.from_name(name)
    if afile is None:
        return [Finding(path, 1, "archive-record",
                        "archive files are named YYYY-MM-DD.<clone-id>.jsonl")]
    start = 0
    if old:
        if not new.startswith(old):
            line = changed_line(old, new)
            what = "was cut off" if new == old[:len(new)] else "was changed"
            return [Finding(path, line, "archive-append-only",
                            f"line {line} {what}; committed archive history may only grow")]
        start = old.rfind(b"\n") + 1  # an unterminated old tail is checked again, now complete
    return check_lines(path, new, start, desk_id, afile.day)
