"""One reader per foreign format: `read_source(format, path)` returns a `Source`, or raises
UsageError naming the malformed file (and line) with nothing written."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from desk.errors import UsageError
from desk.interchange.foreign import reading_source, source_limit
from desk.interchange.items import Source
from desk.vocabulary import IMPORT_FORMATS


def read_source(fmt: str, path: Path, limit: int | None = None) -> Source:
    """Read SOURCE in format `fmt` (one of IMPORT_FORMATS); refused when its files together pass
    `limit` bytes (None: `source_limit()`, $DESK_IMPORT_MAX_MIB or 256 MiB), each file's size
    checked before it is read."""
    if fmt not in IMPORT_FORMATS:
        raise UsageError(f"unknown import format {fmt!r}; choose one of {', '.join(IMPORT_FORMATS)}")
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder", hint="give the folder or file to import")
    module = import_module(f"desk.interchange.readers.{fmt.replace('-', '_')}")
    with reading_source(source_limit(limit)):
        source: Source = module.read(path)
    return source
