"""What one `@bot retry-flaky` command asks (`RetryRequest`) and what it did
(`Retried`, the log line's summary)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.comments.grammar import Command
from bot.core.outcome import Outcome


@dataclass(frozen=True)
class RetryRequest:
    pr: int
    comment_id: int
    comment_url: str
    login: str
    command: Command

    @property
    def reason(self) -> str | None:
        value = self.command.options.get("reason")
        return value if isinstance(value, str) else None

    @property
    def forced(self) -> bool:
        return self.command.options.get("force") is True


class RetryFlakyOutcome(enum.StrEnum):
    """What one ``retry-flaky`` command did (the log line's first words)."""

    HANDLED_ALREADY = "command already handled"
    REFUSED = "refused"
    TOO_MANY_FAILED = "too many failed jobs: retried nothing"
    RETRIED = "failed jobs retried"
    FORCED = "forced retry"


Retried = Outcome[RetryFlakyOutcome]
