"""desk.storage.hashing gives hashlib's digests on both sides of its small-input threshold."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from desk.storage.hashing import SMALL, sha1_hex, sha256_hex

EDGES = [b"", b"x", b"\0" * (SMALL - 1), b"\0" * SMALL, b"\xff" * (SMALL + 1), b"blob 3\0abc"]


def test_the_edges_of_the_threshold_hash_as_hashlib_does() -> None:
    for data in EDGES:
        assert sha1_hex(data) == hashlib.sha1(data).hexdigest()
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


@settings(max_examples=200)
@given(st.binary(max_size=2048))
def test_any_small_input_hashes_as_hashlib_does(data: bytes) -> None:
    assert sha1_hex(data) == hashlib.sha1(data).hexdigest()
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_small_inputs_load_no_openssl() -> None:
    code = ("import sys; from desk.storage.hashing import sha1_hex, sha256_hex; "
            "sha1_hex(b'a' * 100); sha256_hex(b'b' * 100); print('hashlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
