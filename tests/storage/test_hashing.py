"""desk.storage.hashing gives hashlib's digests on both sides of its small-input threshold."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from desk.storage.hashing import SMALL, sha1_hex, sha256_hex, streaming

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


@settings(max_examples=100)
@given(st.lists(st.binary(max_size=4096), max_size=8))
def test_a_streaming_hasher_fed_in_parts_gives_hashlib_s_digest(parts: list[bytes]) -> None:
    for name in ("sha1", "sha256"):
        fed = streaming(name)
        for part in parts:
            fed.update(part)
        assert fed.hexdigest() == hashlib.new(name, b"".join(parts)).hexdigest()


def test_a_streaming_hasher_loads_no_openssl() -> None:
    code = ("import sys; from desk.storage.hashing import streaming; h = streaming('sha256'); "
            "h.update(b'a' * 100000); h.hexdigest(); print('hashlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
