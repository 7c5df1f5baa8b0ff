"""SHA-1 and SHA-256 in hex without loading OpenSSL for small inputs.

`import hashlib` loads OpenSSL (~3 ms at every process start that needs one digest). CPython's own
`_sha1` and `_sha256` (as `random` takes `_sha512`) hash a few kilobytes faster than that costs, but
are ~20x slower per byte than OpenSSL's: above `SMALL` bytes hashlib is imported and used. Both give
the same digests (tests/storage/test_hashing.py).
"""

from __future__ import annotations

from typing import Any, Protocol

try:  # CPython 3.11
    from _sha1 import sha1 as _small_sha1  # type: ignore[import-not-found,unused-ignore]
    from _sha256 import sha256 as _small_sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # CPython 3.12+ keeps SHA-256 in _sha2; another Python has neither
    try:
        from _sha1 import sha1 as _small_sha1  # type: ignore[import-not-found,unused-ignore,no-redef]
        from _sha2 import sha256 as _small_sha256  # type: ignore[import-not-found,unused-ignore,no-redef]
    except ImportError:
        _small_sha1 = _small_sha256 = None
SMALL = 1 << 15


def _digest(data: bytes | bytearray, small: Any, name: str) -> str:
    if small is not None and len(data) < SMALL:
        return str(small(data).hexdigest())
    import hashlib

    return hashlib.new(name, data).hexdigest()


def sha1_hex(data: bytes | bytearray) -> str:
    """The SHA-1 of `data` in hex (the pre-commit hook and desk's objects hash mostly small inputs)."""
    return _digest(data, _small_sha1, "sha1")


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of `data` in hex (a recall's query id hashes a few dozen bytes)."""
    return _digest(data, _small_sha256, "sha256")


class Streaming(Protocol):
    """What `streaming` returns: hashlib's hasher or CPython's own, fed in parts."""

    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


def streaming(name: str) -> Streaming:
    """A streaming `sha1` or `sha256` hasher (`update`, `hexdigest`, as hashlib's) without OpenSSL,
    for inputs fed in parts that stay within a few hundred kilobytes (a code fingerprint, a rendered
    `desk context`): CPython's own is ~4 ms per MiB, importing hashlib ~3 ms. hashlib's on a Python
    without them."""
    small = {"sha1": _small_sha1, "sha256": _small_sha256}[name]
    if small is not None:
        hasher: Streaming = small()  # CPython's own are untyped
        return hasher
    import hashlib

    return hashlib.new(name)


def blake2b_hex(data: bytes) -> str:
    """A 160-bit BLAKE2b of `data` in hex: a cache key over large outputs (`validate --all`'s
    listing of the whole index, ~0.8 MB at 10,000 files) at ~1 GB/s from CPython's own `_blake2`,
    where SHA-1 would load OpenSSL (~2 ms) or take ~3 ms in `_sha1`."""
    try:
        from _blake2 import blake2b  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # another Python: hashlib's, whatever it loads
        from hashlib import blake2b
    return str(blake2b(data, digest_size=20).hexdigest())
