"""desk.storage.hashing gives hashlib's digests, and git's object ids."""

from __future__ import annotations

import hashlib
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from desk.storage.hashing import blake2b_hex, sha1_hex, sha256_hex


@settings(max_examples=200)
@given(st.binary(max_size=2048))
def test_any_input_hashes_as_hashlib_does(data: bytes) -> None:
    assert sha1_hex(data) == hashlib.sha1(data).hexdigest()
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()
    assert len(blake2b_hex(data)) == 40 and blake2b_hex(data) != blake2b_hex(data + b"\0")


def test_a_blob_id_is_git_s() -> None:
    data = b"a line\r\nand \xff bytes\n"
    ours = sha1_hex(b"blob %d\0" % len(data) + data)
    theirs = subprocess.run(["git", "hash-object", "--stdin"], input=data, capture_output=True,
                            check=True).stdout.decode().strip()
    assert ours == theirs
