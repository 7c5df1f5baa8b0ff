"""One reader per foreign format: `read_source(format, path)` returns a `Source`, or raises
UsageError naming the malformed file (and line) with nothing written."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from desk.errors import UsageError
from desk.interchange.items import Source
from desk.vocabulary import IMPORT_FORMATS


def read_source(fmt: str, path: Path) -> Source:
    """Read SOURCE in format `fmt` (one of IMPORT_FORMATS)."""
    if fmt not in IMPORT_FORMATS:
        raise UsageError(f"unknown import format {fmt!r}; choose one of {', '.join(IMPORT_FORMATS)}")
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder", hint="give the folder or file to import")
    module = import_module(f"desk.interchange.readers.{fmt.replace('-', '_')}")
    source: Source = module.read(path)
    return source
