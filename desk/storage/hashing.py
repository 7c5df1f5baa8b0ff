"""Hex digests, from hashlib: SHA-1 for git's object ids, SHA-256 for desk's content keys, a
160-bit BLAKE2b for cache keys over large outputs (a listing of the whole index)."""

from __future__ import annotations

import hashlib


def sha1_hex(data: bytes | bytearray) -> str:
    return hashlib.sha1(data).hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blake2b_hex(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()
