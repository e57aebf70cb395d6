"""What one call into a feature flow did: a member of the flow's outcome enum and an
optional detail, read by tests and written as one log line."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Generic, TypeVar

E = TypeVar("E", bound=enum.StrEnum)


@dataclass(frozen=True)
class Outcome(Generic[E]):
    outcome: E
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.outcome}: {self.detail}" if self.detail else str(self.outcome)
