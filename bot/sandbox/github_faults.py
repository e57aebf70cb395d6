"""Faults the tests can inject into the GitHub stand-in's API answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SERVER_ERROR_MESSAGE = "Server Error"
PRIMARY_LIMIT_MESSAGE = (
    "API rate limit exceeded for installation. If you reach out to GitHub Support for help, "
    "please include the request ID."
)
SECONDARY_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID."
)


@dataclass(frozen=True)
class Fault:
    """One planned bad answer: a 5xx (``kind`` "error") or a 403 rate limit."""

    kind: Literal["error", "primary", "secondary"]
    status: int
    operation: str | None
    retry_after: int = 1


class Faults:
    """Planned faults, consumed in order by the requests they match."""

    def __init__(self) -> None:
        self.latency: float = 0.0
        self._pending: list[Fault] = []

    def fail_next(self, count: int, status: int = 502, operation: str | None = None) -> None:
        self._pending.extend(Fault("error", status, operation) for _ in range(count))

    def rate_limit_next(
        self,
        count: int,
        kind: Literal["primary", "secondary"] = "secondary",
        operation: str | None = None,
        retry_after: int = 1,
    ) -> None:
        self._pending.extend(Fault(kind, 403, operation, retry_after) for _ in range(count))

    def take(self, operation_id: str) -> Fault | None:
        """The first pending fault for this operation (or for any), removed from the plan."""
        for index, fault in enumerate(self._pending):
            if fault.operation in (None, operation_id):
                return self._pending.pop(index)
        return None

    def clear(self) -> None:
        self.latency = 0.0
        self._pending.clear()
