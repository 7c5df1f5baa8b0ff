"""A tiny deterministic embedder for hybrid recall's tests: hashed character trigrams.

Each text becomes a `DIMENSION`-float vector: every character trigram of its casefolded words
(with a space at each end) adds ±1 at a slot chosen by a hash. Texts sharing trigrams ("deploy",
"deployment") get close vectors without sharing a word, which is what a dense retriever adds to
the lexical ranking. The other factories here are broken on purpose, for the error paths.
"""

from __future__ import annotations

import hashlib

DIMENSION = 64


class TrigramEmbedder:
    name = "trigram-test"
    dimension = DIMENSION

    def __init__(self) -> None:
        self.calls: list[list[str]] = []  # every embed() call's texts, for the tests

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._one(t) for t in texts]

    @staticmethod
    def _one(text: str) -> list[float]:
        vector = [0.0] * DIMENSION
        for word in text.casefold().split():
            padded = f" {word} "
            for i in range(len(padded) - 2):
                digest = hashlib.blake2b(padded[i:i + 3].encode(), digest_size=4).digest()
                slot = int.from_bytes(digest, "big")
                vector[slot % DIMENSION] += 1.0 if slot & 1 << 31 else -1.0
        return vector


def factory() -> TrigramEmbedder:
    return TrigramEmbedder()


def failing_factory() -> TrigramEmbedder:
    raise RuntimeError("model file /models/none.bin not found")


class _Raising(TrigramEmbedder):
    def embed(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("CUDA out of memory")


def raising_factory() -> TrigramEmbedder:
    return _Raising()


class _WrongDimension(TrigramEmbedder):
    name = "trigram-short"

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [v[:DIMENSION // 2] for v in super().embed(texts)]


def wrong_dimension_factory() -> TrigramEmbedder:
    return _WrongDimension()


def not_an_embedder() -> object:
    return object()
