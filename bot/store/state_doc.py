"""A small JSON document in the store, as a dataclass that keeps unknown keys.

Keys a newer (or older) version of the bot wrote survive a load/dump round
trip in ``extra``, so two versions never erase each other's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self


@dataclass
class StateDoc:
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)

    @classmethod
    def load(cls, doc: Mapping[str, Any] | None) -> Self:
        if not doc:
            return cls()
        known = {name for name in cls.__dataclass_fields__ if name != "extra"}
        return cls(
            **{k: v for k, v in doc.items() if k in known},
            extra={k: v for k, v in doc.items() if k not in known},
        )

    def dump(self) -> dict[str, Any]:
        doc = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "extra"}
        return {**self.extra, **doc}
