"""Whether this process can reach its database, as its background loops find it.

An outage is weather, not a bug: the inbox's workers, the intake, the reconcile
ticker, retention and (on PostgreSQL) the replica-recovery loop all meet it at
once, each of them over and over until the database is back. So they tell one
``Outage`` (every store has one, ``Store.outage``) instead of logging: it writes
ONE warning when the outage begins ("database unreachable since ...") and ONE
line when a call succeeds again ("database back after ..."), whoever notices, and
the loops back off (``pause``) instead of writing a traceback per second.

Only errors a retry can cure count (``bot.core.errors.is_transient``: a lost
connection, a server shutting down, a locked SQLite file); anything else is a bug
whose caller logs its traceback as before.

``since`` is the fact the status page and readiness read: the epoch second the
current outage began, None while the database answers.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable

from bot.core.errors import is_transient

log = logging.getLogger(__name__)

LOG_UNREACHABLE = (
    "database unreachable since %s (%s); retrying with backoff, quietly until it is back"
)
LOG_BACK = "database back after %.1f s (unreachable since %s)"

# A loop's pauses between tries while the database is away: doubling from PAUSE_BASE
# up to PAUSE_CAP, each with up to half of it as jitter, so replicas spread out and
# a database coming back is not met by every worker of every replica at once.
PAUSE_BASE = 0.5
PAUSE_CAP = 30.0


def pause(failures: int, rand: float, *, base: float = PAUSE_BASE, cap: float = PAUSE_CAP) -> float:
    """Seconds to wait after ``failures`` failed tries in a row (``rand`` in [0, 1)):
    between half and all of ``min(cap, base * 2^(failures - 1))``."""
    ceiling = min(cap, base * 2.0 ** max(failures - 1, 0))
    return ceiling / 2 + ceiling / 2 * rand


def _shown(when: float) -> str:
    return datetime.datetime.fromtimestamp(when, datetime.UTC).isoformat(timespec="seconds")


class Outage:
    """The database's reachability as this process last found it.

    ``since``: when the current outage began (epoch seconds of the store's clock),
    None while the database answers. ``reason``: the first error of the outage.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.since: float | None = None
        self.reason: str | None = None

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, exc: BaseException) -> bool:
        """Count ``exc`` against the database if a retry can cure it (logging the
        outage's one warning when it begins); False: not an outage, the caller's bug."""
        if not is_transient(exc):
            return False
        if self.since is None:
            self.since = self._clock()
            self.reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            log.warning(LOG_UNREACHABLE, _shown(self.since), self.reason)
        return True

    def answered(self) -> None:
        """A call reached the database: an outage in progress ends (one line)."""
        if self.since is None:
            return
        since, self.since, self.reason = self.since, None, None
        log.warning(LOG_BACK, max(self._clock() - since, 0.0), _shown(since))
