"""`Frozen`: the base of desk's plain immutable records (MemoryMeta, MemoryFile, IndexEntry,
frontmatter's Document, SecretFinding).

The pre-commit hook builds these records in a fresh process on every commit of a memory, where
importing `dataclasses` (with `inspect`, `ast`, `dis`, `tokenize`) costs ~6 ms. A record subclasses
`Frozen`, names its fields in `__match_args__` and fills `self.__dict__` in its own `__init__`;
`Frozen` gives it the rest of what `@dataclass(frozen=True)` would make.
"""

from __future__ import annotations


class Frozen:
    """Equality and hash over `_values()` (every field of `__match_args__`, unless a subclass
    leaves one out or spells the tuple out for speed), a repr naming the fields, no assignment."""

    __match_args__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__match_args__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__qualname__}({shown})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")
