"""The service's Prometheus metrics, owned by one ``Metrics`` per app.

Each app has its own ``CollectorRegistry``, never prometheus_client's global one, so
several apps in one process (the tests start many) count apart and never collide on
a metric name; the process, platform and garbage-collector collectors the global one
would carry are registered on it. Counters are bumped where things happen; what the
store knows (the inbox's depth, each pin's lag behind upstream) is read when
``/metrics`` is scraped (``render``), so it is never stale and every replica shows the
same. No ``_created`` series: each would double the series a counter costs, and
Prometheus does not read them from the text format.

Part of the foundation: it imports nothing of the bot, because the GitHub and
Buildkite clients and the feature flows report to it.

Labels carry only bounded, public values (sources, event names a verified sender
used, handler ids, HTTP status codes, PR actions, failure classes); never a URL,
a token or anything an unverified sender chose.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.metadata
import platform
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

# The text format every Prometheus version reads (what ``generate_latest`` writes).
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

# Delivery outcomes: at intake, then at the end of each attempt.
ACCEPTED = "accepted"
REQUEUED = "requeued"
DUPLICATE = "duplicate"
REJECTED = "rejected"
NOT_STORED = "not_stored"  # the store failed; the sender got a 503 and may redeliver
DONE = "done"
RETRY = "retry"
FAILED = "failed"
# The event label of a refused request: its headers are unverified, so they name nothing.
UNVERIFIED = "unverified"

# What the bot did to one of its pull requests.
PR_OPENED = "opened"
PR_UPDATED = "updated"
PR_CLOSED = "closed"

# Where the remaining rate limit is read, per service (header names, any case).
RATE_LIMIT_HEADERS: Mapping[str, str] = {
    "github": "x-ratelimit-remaining",
    "buildkite": "ratelimit-remaining",
}

# Handlers range from a few milliseconds to minutes (a wheel download and audit).
HANDLER_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
# An intake answer is a signature check and one group commit: milliseconds, unless the
# database is slow, which is what this histogram is there to show.
INTAKE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

DISTRIBUTION = "followup-bot"
VERSION_UNKNOWN = "unknown"

# A process-wide switch of prometheus_client (it has no per-registry one); this module
# owns the only registries the bot exposes.
disable_created_metrics()  # type: ignore[no-untyped-call]  # unannotated upstream


@dataclass(frozen=True)
class PinLag:
    """How far one pin is behind upstream, as the bump flow last recorded it."""

    repository: str
    pin: str
    behind: int  # upstream commits not in the pin
    oldest_age: float  # seconds since the oldest of them was authored (0: none behind)


@dataclass(frozen=True)
class StoreFacts:
    """What a scrape read from the store: the inbox's ``(queued, running, oldest age)``
    and the pins' lag; None for what could not be read (its series are left out)."""

    inbox: tuple[int, int, float] | None
    pins: Sequence[PinLag] | None


class _InboxCollector(Collector):
    """The inbox's depth as of the last scrape (nothing before the first, or when the
    store could not be read: a missing series says "unknown", not "empty")."""

    def __init__(self) -> None:
        self.snapshot: tuple[int, int, float] | None = None

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        return self._families() if self.snapshot is not None else []

    def _families(self) -> list[Metric]:
        queued, running, oldest_age = self.snapshot or (0, 0, 0.0)
        depth = GaugeMetricFamily(
            "followup_bot_inbox_deliveries",
            "Deliveries in the inbox by status (queued: due or not).",
            labels=["status"],
        )
        depth.add_metric(["queued"], queued)
        depth.add_metric(["running"], running)
        age = GaugeMetricFamily(
            "followup_bot_inbox_oldest_queued_age_seconds",
            "Seconds since the oldest queued delivery arrived (0 when none is queued).",
            value=oldest_age,
        )
        return [depth, age]


class _PinsCollector(Collector):
    """Each pin's lag as of the last scrape (nothing when the store could not be read)."""

    def __init__(self) -> None:
        self.snapshot: Sequence[PinLag] | None = None

    def describe(self) -> Iterable[Metric]:
        return self._families(())

    def collect(self) -> Iterable[Metric]:
        return self._families(self.snapshot) if self.snapshot is not None else []

    def _families(self, pins: Sequence[PinLag]) -> list[Metric]:
        labels = ["repository", "pin"]
        behind = GaugeMetricFamily(
            "followup_bot_pin_commits_behind",
            "Upstream commits not yet rolled into the pin, as the bump flow last counted.",
            labels=labels,
        )
        age = GaugeMetricFamily(
            "followup_bot_pin_oldest_unrolled_commit_age_seconds",
            "Seconds since the oldest upstream commit not yet rolled was authored "
            "(0 when the pin is current).",
            labels=labels,
        )
        for pin in pins:
            behind.add_metric([pin.repository, pin.pin], pin.behind)
            age.add_metric([pin.repository, pin.pin], pin.oldest_age)
        return [behind, age]


def installed_version() -> str:
    """The installed distribution's version, for the build-info series."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return VERSION_UNKNOWN


class Metrics:
    """Every metric of one app, in its own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        Info("followup_bot_build", "The running release and Python.", registry=r).info(
            {"version": installed_version(), "python": platform.python_version()}
        )
        self.intake_duration = Histogram(
            "followup_bot_intake_duration_seconds",
            "Time from a webhook's request to its 202 answer (the delivery stored).",
            ["source"],
            buckets=INTAKE_BUCKETS,
            registry=r,
        )
        self.last_reconcile = Gauge(
            "followup_bot_last_reconcile_timestamp_seconds",
            "When this replica last completed a repository's reconcile tick (epoch seconds; "
            "take the max over replicas).",
            ["repository"],
            registry=r,
        )
        self.deliveries = Counter(
            "followup_bot_deliveries",
            "Deliveries by source, event and outcome (intake: accepted, requeued, duplicate, "
            "rejected, not_stored; end of an attempt: done, retry, failed).",
            ["source", "event", "outcome"],
            registry=r,
        )
        self.handler_duration = Histogram(
            "followup_bot_handler_duration_seconds",
            "Time one handler took on one delivery attempt.",
            ["handler"],
            buckets=HANDLER_BUCKETS,
            registry=r,
        )
        self.handler_attempts = Counter(
            "followup_bot_handler_attempts", "Handler runs.", ["handler"], registry=r
        )
        self.handler_failures = Counter(
            "followup_bot_handler_failures", "Handler runs that raised.", ["handler"], registry=r
        )
        self.http_requests = Counter(
            "followup_bot_http_requests",
            "Answers from the GitHub and Buildkite APIs by status code (each retry counts).",
            ["service", "code"],
            registry=r,
        )
        self.rate_limit_remaining = Gauge(
            "followup_bot_rate_limit_remaining",
            "Requests left in the rate-limit window, as the service's last answer said.",
            ["service"],
            registry=r,
        )
        self.pull_requests = Counter(
            "followup_bot_pull_requests",
            "The bot's pull requests opened, updated and closed.",
            ["action"],
            registry=r,
        )
        self.job_retries = Counter(
            "followup_bot_job_retries",
            "Buildkite jobs the bot retried, by failure class and by who asked.",
            ["failure_class", "flow"],
            registry=r,
        )
        self.landings = Counter(
            "followup_bot_landings",
            "Pull requests the bot merged itself, by merge method.",
            ["method"],
            registry=r,
        )
        self._inbox = _InboxCollector()
        r.register(self._inbox)
        self._pins = _PinsCollector()
        r.register(self._pins)

    # -- the service's own call sites -------------------------------------------------

    def delivery(self, source: str, event: str, outcome: str) -> None:
        self.deliveries.labels(source, event, outcome).inc()

    def response(self, service: str, status: int, headers: Mapping[str, str]) -> None:
        """One HTTP answer from ``service`` (the clients' ``ResponseObserver``)."""
        self.http_requests.labels(service, str(status)).inc()
        wanted = RATE_LIMIT_HEADERS.get(service)
        for name, value in headers.items():
            if name.lower() == wanted:
                with contextlib.suppress(ValueError):
                    self.rate_limit_remaining.labels(service).set(float(value))
                break

    def intake(self, source: str, seconds: float) -> None:
        """A webhook of ``source`` answered 202 after ``seconds``."""
        self.intake_duration.labels(source).observe(seconds)

    def reconciled(self, repository: str, at: float) -> None:
        """``repository``'s reconcile tick completed at ``at`` (epoch seconds)."""
        self.last_reconcile.labels(repository).set(at)

    def render(self, facts: StoreFacts) -> bytes:
        """The exposition text, with what the store said just now."""
        self._inbox.snapshot = facts.inbox
        self._pins.snapshot = facts.pins
        return generate_latest(self.registry)


# The metrics of the delivery being handled, for call sites deep in the flows
# (``create_pull``, a job's retry, a merge). Those get a GitHub client or a RepoScope,
# not the Services; threading ``Metrics`` through every signature on the way would
# touch dozens of functions for a counter each. The dispatcher binds it around each
# delivery, so nothing outside a delivery (and no other app's delivery) is counted.
_current: contextvars.ContextVar[Metrics | None] = contextvars.ContextVar(
    "followup_bot_metrics", default=None
)


@contextlib.contextmanager
def bound(metrics: Metrics) -> Iterator[None]:
    """Make ``metrics`` the current delivery's metrics within the block."""
    token = _current.set(metrics)
    try:
        yield
    finally:
        _current.reset(token)


def pull_request(action: str) -> None:
    """The bot opened, updated or closed a pull request."""
    metrics = _current.get()
    if metrics is not None:
        metrics.pull_requests.labels(action).inc()


def job_retried(failure_class: str, flow: str) -> None:
    """The bot retried a Buildkite job of ``failure_class`` for ``flow``."""
    metrics = _current.get()
    if metrics is not None:
        metrics.job_retries.labels(failure_class, flow).inc()


def landed(method: str) -> None:
    """The bot merged a pull request with ``method``."""
    metrics = _current.get()
    if metrics is not None:
        metrics.landings.labels(method).inc()
