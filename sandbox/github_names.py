"""Names GitHub compares without regard to case: account logins and repository names.

``/repos/NVIDIA/cutlass`` and ``/repos/nvidia/cutlass`` reach the same repository on
GitHub, and ``repository(owner: "nvidia", name: "CUTLASS")`` finds it too; every
answer spells the name as the repository was created (``full_name``, ``owner.login``,
``name``). The stand-in keeps its accounts and repositories in ``Caseless`` mappings,
so every lookup by a name ignores case while iteration and answers keep the canonical
spelling. GitHub's names are ASCII, so ``str.lower`` is its folding.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import TypeVar

V = TypeVar("V")


def same_name(a: str, b: str) -> bool:
    """Whether GitHub takes ``a`` and ``b`` (logins, ``owner/name``) for the same name."""
    return a.lower() == b.lower()


class Caseless(MutableMapping[str, V]):
    """A mapping whose keys are names GitHub compares without case.

    A key is kept as it was last stored (the canonical spelling); reading, testing or
    deleting with any other casing reaches the same entry.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, V]] = {}

    def __getitem__(self, key: str) -> V:
        return self._entries[key.lower()][1]

    def __setitem__(self, key: str, value: V) -> None:
        self._entries[key.lower()] = (key, value)

    def __delitem__(self, key: str) -> None:
        del self._entries[key.lower()]

    def __iter__(self) -> Iterator[str]:
        return (canonical for canonical, _ in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def canonical(self, key: str) -> str | None:
        """The spelling ``key`` was stored under; None when there is no such entry."""
        found = self._entries.get(key.lower())
        return None if found is None else found[0]
