"""Why a CI job failed, as far as a retry decision needs to know.

``classify`` puts one hard-failed Buildkite job in one class, first match
wins, each with one line of evidence a maintainer can check. A job someone
canceled (state ``canceled`` or ``canceling``) is no failure at all and comes
first: **canceled** → never retry, whatever its log says (it stops wherever the
cancel caught it), with the time of the cancel; Buildkite's REST API does not
say who canceled it. The failures proper:

0. **image missing**: the log says the registry has no manifest for the image the job
   pulls ("manifest unknown", "manifest for … not found") → never retry: the image was
   not built (or built under another tag), and a retry pulls the same missing tag.
   The registry table that proves it comes from ``bot.images``.
1. **infra**: the job never really ran or the machine under it failed: agent
   lost (exit status -1), an infra signal reason, expired, an empty log, or a
   log line matching an infra pattern → retry.
2. **known flaky**: a repository rule (step glob, label glob, log regex)
   matches → retry, naming the rule.
3. **broken trunk**: main's latest finished run of the step failed with the
   same signature → do not retry; link that main build.
4. **flaky by history**: main's latest run passed, and main has seen this
   very failure pass on retry → retry; link that main build.
5. **new failure**: anything else → do not retry.

Deliberately *not* infra by default, because they are usually the PR's own
doing and a retry would only hide it (a repository rule can still say
otherwise for a known case):

- CUDA out of memory inside a test: the PR made something bigger, or leaks;
- NCCL watchdog timeouts: a collective that never completes is most often a
  rank that diverged or deadlocked in the code under test;
- NCCL connection errors ("Connection closed by remote peer" between ranks):
  one rank died first, and its own failure is the real cause;
- a job that timed out, or that Buildkite failed with the signal reason ``cancel``.

Unknown evidence never counts: a signature of kind ``none`` matches nothing,
and a log that was not read (``log_tail is None``) is not an empty log.

Longer than 400 lines because the built-in infra patterns, each with why it is
infra, sit beside the order they are tried in: a verdict is questioned by
reading both together.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from fnmatch import fnmatchcase
from functools import lru_cache

from bot.abi.log import clean_log
from bot.buildkite.job_states import NO_AGENT_STATES
from bot.failures.signature import NO_SIGNATURE, Signature, signature_from_lines
from bot.images.missing import (
    MAX_SEARCHED_CHARS,
    MISSING_IMAGE_PATTERN,
    image_missing_line,
    masked,
)

MAX_EVIDENCE_CHARS = 240
EXCERPT_CHARS = 160  # of a matched log line
EXCERPT_CONTEXT = 40  # characters kept before the match in a long line
SIGNATURE_CHARS = 140  # of a signature shown in evidence, so the reason still fits

EVIDENCE_AGENT_LOST = "agent lost (exit status -1)"
EVIDENCE_SIGNAL = "signal reason {reason}: {meaning}"
EVIDENCE_EXPIRED = "job expired before an agent ran it"
EVIDENCE_EMPTY_LOG = "empty log: the job printed nothing"
EVIDENCE_INFRA_LINE = "{name}: {line}"
EVIDENCE_IMAGE_MISSING = "image missing: {line}"
EVIDENCE_RULE_LINE = "rule {name}: {line}"
EVIDENCE_BROKEN_TRUNK = "main build #{number} ({commit}) failed the same way: {signature}"
EVIDENCE_FLAKY_HISTORY = "passed on retry on main, build #{number} ({commit}): {signature}"
EVIDENCE_NEW = "{signature}; {why}"
WHY_NOT_READ = "log not read: no evidence that it is flaky"
WHY_NO_HISTORY = "no finished main run of this step to compare with"
WHY_MAIN_DIFFERENT = "main build #{number} failed differently"
WHY_NOT_SEEN = "main build #{number} passed; never seen passing on retry on main"
WHY_UNKNOWN_SIGNATURE = "nothing to compare with main"
# When a job was canceled: its ``finished_at``. Who canceled it, the REST API does not say.
EVIDENCE_CANCELED = "canceled at {when}"
EVIDENCE_CANCELED_UNTIMED = "canceled (Buildkite gives no time)"
CANCELED_TIME_FORMAT = "%Y-%m-%d %H:%M UTC"


class FailureClass(StrEnum):
    IMAGE_MISSING = "image-missing"
    INFRA = "infra"
    KNOWN_FLAKY = "known-flaky"
    BROKEN_TRUNK = "broken-trunk"
    FLAKY_BY_HISTORY = "flaky-by-history"
    NEW_FAILURE = "new-failure"
    CANCELED = "canceled"  # no failure: someone stopped the job (never retried, not counted)


RETRY = frozenset({FailureClass.INFRA, FailureClass.KNOWN_FLAKY, FailureClass.FLAKY_BY_HISTORY})


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _checked(kind: str, name: str, pattern: str) -> None:
    """Fail where the pattern is defined (config load), not in the middle of a command."""
    try:
        _compiled(pattern)
    except re.error as error:
        raise ValueError(f"{kind} {name!r}: invalid regular expression: {error}") from None


@dataclass(frozen=True)
class LogPattern:
    """A named regex, searched in each cleaned log line."""

    name: str
    pattern: str

    def __post_init__(self) -> None:
        _checked("infra pattern", self.name, self.pattern)

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)


@dataclass(frozen=True)
class FlakyRule:
    """A known-flaky rule: ``step`` and ``label`` are fnmatch globs (step key, job name)."""

    name: str
    log: str
    step: str = "*"
    label: str = "*"

    def __post_init__(self) -> None:
        _checked("flaky rule", self.name, self.log)

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.log)

    def applies_to(self, step_key: str | None, name: str) -> bool:
        return fnmatchcase(step_key or "", self.step) and fnmatchcase(name, self.label)


# Each pattern names a failure of the machine or of a service the job depends
# on, never of the code under test. Infra patterns are not searched inside
# pytest node ids (see _without_test_ids), so a test called test_oom_kill or
# a folder called image_pull/ is not taken for one.
DEFAULT_INFRA_PATTERNS: tuple[LogPattern, ...] = (
    # The kernel's OOM killer, in the runner's or the container runtime's words.
    # Host memory is shared by every job on the agent; GPU memory is not this.
    LogPattern(
        "runner-oom-kill",
        r"\boom[-_ ]kill\b|\bOOMKilled\b|Out of memory: Killed process|Memory cgroup out of memory",
    ),
    # bash reporting a child ended by SIGKILL: on an agent, the OOM killer or a
    # teardown of the machine (nothing in a test run sends SIGKILL itself).
    LogPattern("killed", r"^\s*Killed\s*$|(?:^|\s)line \d+:\s+\d+ Killed\b"),
    # The agent's verdict for the same thing: 137 = 128 + SIGKILL.
    LogPattern("exit-137", r"exited with status 137\b|exit status 137\b"),
    # The image the job runs in could not be fetched: registry or network
    # trouble (the image itself is built and pushed by an earlier step).
    LogPattern(
        "image-pull",
        r"\bErrImagePull\b|\bImagePullBackOff\b|[Ff]ailed to pull (?:and unpack )?image"
        r"|\btoomanyrequests: ",
    ),
    # The Hugging Face Hub answered 5xx or rate-limited us while a model was
    # being fetched: the Hub's state, not the PR's.
    LogPattern(
        "hf-hub-http",
        r"HfHubHTTPError: (?:5\d\d|429)\b"
        r"|\b(?:5\d\d|429) (?:Server|Client) Error\b.*(?:huggingface\.co|\bhf\.co)",
    ),
    # Timeouts and dropped connections to the Hub or its CDN. huggingface_hub
    # logs the same text with "Retrying in ..." when it will try again itself,
    # so those lines are skipped: they may have been followed by a success.
    LogPattern(
        "hf-hub-network",
        r"^(?!.*\bRetrying\b).*host='(?:[\w-]+\.)*(?:huggingface\.co|hf\.co)'"
        r".*(?:timed out|Max retries exceeded|Connection reset|Connection aborted"
        r"|RemoteDisconnected)",
    ),
    # huggingface_hub gave up reaching the Hub and had no cached copy. The
    # offline-mode message ("outgoing traffic has been disabled") is not this:
    # a missing cached model in offline mode is the PR's doing.
    LogPattern(
        "hf-hub-unreachable",
        r"cannot find the requested files in the local cache\. Please check your connection"
        r"|couldn't connect to 'https://huggingface\.co'",
    ),
    # The peer reset a streamed download mid-body: in a test job that is a
    # model or dataset download (requests' own wording; local test servers the
    # tests start are spoken to with httpx/aiohttp, which word it differently).
    LogPattern(
        "download-connection-reset",
        r"^(?!.*\b(?:Retrying|localhost|127\.0\.0\.1)\b)"
        r"(?:.*Connection broken: ConnectionResetError"
        r"|(?=.*(?:[Dd]ownload|huggingface|\bhf\.co)).*Connection reset by peer)",
    ),
    # The agent's disk filled up (docker layers, caches of earlier jobs).
    LogPattern("disk-full", r"No space left on device"),
    # The agent's container runtime is gone.
    LogPattern("docker-daemon", r"Cannot connect to the Docker daemon"),
    # The GPU or its driver on the agent is broken: hardware, not code.
    LogPattern(
        "gpu-unavailable",
        r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
        r"|nvidia-container-cli: (?:initialization|device) error|uncorrectable ECC error",
    ),
)

# The registry has no such tag: the image was never pushed under the name the step pulls
# (seed incident B). Not infra: nothing about the machine, and a retry cannot help.
IMAGE_MISSING = LogPattern("image-missing", MISSING_IMAGE_PATTERN)


# Buildkite's documented signal reasons, and what each means for a retry:
_SIGNAL_REASONS: Mapping[str, str] = {
    # the agent was stopped (scale-in, spot reclaim, a deploy) under the job
    "agent_stop": "the agent was stopped while running the job",
    # the agent would not take the job (its hooks or settings); another may
    "agent_refused": "the agent refused the job",
    # the agent is too old for what the job needs; another agent may not be
    "agent_incompatible": "the agent was incompatible with the job",
    # the process could not start, often for lack of memory or resources
    "process_run_error": "the agent could not start the job's process",
    # the stack (e.g. Kubernetes) could not launch the job: resources, scheduling
    "stack_error": "the agent stack could not launch the job",
}
# Not infra: ``cancel`` (a person, or a newer build, stopped the job: rerunning
# would overrule a decision and says nothing about flakiness) and
# ``signature_rejected`` (pipeline signing refused the job: the same definition
# would be refused again).
INFRA_SIGNAL_REASONS = frozenset(_SIGNAL_REASONS)
CANCELED_STATES = frozenset({"canceled", "canceling"})


@dataclass(frozen=True)
class Failure:
    """One hard-failed job of the PR's build."""

    job_id: str
    step_key: str | None
    name: str
    state: str
    exit_status: int | None
    signal_reason: str | None
    web_url: str
    log_tail: bytes | None  # None: not read (e.g. expired before running)
    finished_at: str | None = None  # as Buildkite writes it; for a canceled job, the cancel


@dataclass(frozen=True)
class MainRun:
    """One finished main build's latest attempt of a step; newest first in a history."""

    build_number: int
    build_url: str
    commit: str
    finished_at: float
    passed: bool
    signature: Signature | None  # of the failed first attempt; None if passed or not known
    passed_on_retry: bool  # failed, was retried, and a later attempt passed


@dataclass(frozen=True)
class Verdict:
    failure_class: FailureClass
    evidence: str  # one short line a maintainer can check
    rule: str | None = None  # the flaky rule or infra pattern that matched
    link: str | None = None  # the main build the verdict rests on

    @property
    def retry(self) -> bool:
        return self.failure_class in RETRY


def _short(text: str, limit: int = MAX_EVIDENCE_CHARS) -> str:
    text = text.strip()
    if len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def _excerpt(line: str, matched: LogPattern | FlakyRule) -> str:
    """The line, or for a long one the part around the match (that is the evidence)."""
    line = line.strip()[:MAX_SEARCHED_CHARS]
    if len(line) <= EXCERPT_CHARS:
        return line
    found = matched.regex.search(line)
    if found is None:
        return _short(line, EXCERPT_CHARS)
    # A pattern like `^(?!...).*word` matches from the line's start: show where it ends.
    anchor = found.start()
    if found.end() - anchor > EXCERPT_CHARS - EXCERPT_CONTEXT:
        anchor = found.end() - (EXCERPT_CHARS - EXCERPT_CONTEXT)
    start = max(0, anchor - EXCERPT_CONTEXT)
    excerpt = line[start : start + EXCERPT_CHARS]
    return ("…" if start else "") + excerpt + ("…" if start + EXCERPT_CHARS < len(line) else "")


def cancel_time(finished_at: object) -> str | None:
    """When a canceled job stopped (its ``finished_at``), in UTC; None when unknown."""
    if not isinstance(finished_at, str):
        return None
    try:
        moment = datetime.fromisoformat(finished_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:  # Buildkite writes UTC with a Z; no zone is taken as UTC
        moment = moment.astimezone(UTC)
    return moment.strftime(CANCELED_TIME_FORMAT)


def canceled_verdict(finished_at: object) -> Verdict:
    """A canceled job: no failure, never retried; when, as far as Buildkite says."""
    when = cancel_time(finished_at)
    evidence = EVIDENCE_CANCELED_UNTIMED if when is None else EVIDENCE_CANCELED.format(when=when)
    return Verdict(FailureClass.CANCELED, evidence)


def _canceled(failure: Failure) -> Verdict | None:
    # Before anything the log says: it stops wherever the cancel caught it, and a
    # retry would overrule whoever stopped the job.
    if failure.state not in CANCELED_STATES:
        return None
    return canceled_verdict(failure.finished_at)


def _infra(
    failure: Failure, lines: list[str] | None, patterns: Sequence[LogPattern]
) -> Verdict | None:
    infra = FailureClass.INFRA
    reason = (failure.signal_reason or "").lower()
    # A job Buildkite failed on a cancel signal is never infra, whatever it left
    # behind: the agent reports -1 for a process it ended on cancel, and the log
    # stops wherever the cancel caught it. (A canceled one never gets here.)
    if reason == "cancel":
        return None
    if failure.exit_status == -1:
        return Verdict(infra, EVIDENCE_AGENT_LOST)
    if reason in INFRA_SIGNAL_REASONS:
        return Verdict(
            infra, EVIDENCE_SIGNAL.format(reason=reason, meaning=_SIGNAL_REASONS[reason])
        )
    if failure.state in NO_AGENT_STATES:
        return Verdict(infra, EVIDENCE_EXPIRED)
    if lines is None:
        return None
    if not any(line.strip() for line in lines):
        return Verdict(infra, EVIDENCE_EMPTY_LOG)
    # Patterns in order (the specific ones first), each from the end of the log:
    # the match nearest the failure is the one that explains it.
    # Test names are not evidence about the machine: pytest node ids are masked.
    searched = [masked(line) for line in lines]
    for pattern in patterns:
        for line, hidden in zip(reversed(lines), reversed(searched), strict=True):
            if pattern.regex.search(hidden):
                evidence = EVIDENCE_INFRA_LINE.format(
                    name=pattern.name, line=_excerpt(line, pattern)
                )
                return Verdict(infra, _short(evidence), rule=pattern.name)
    return None


def _image_missing(failure: Failure, lines: list[str] | None) -> Verdict | None:
    if (failure.signal_reason or "").lower() == "cancel":
        return None
    line = image_missing_line(lines)
    if line is None:
        return None
    evidence = EVIDENCE_IMAGE_MISSING.format(line=_excerpt(line, IMAGE_MISSING))
    return Verdict(FailureClass.IMAGE_MISSING, _short(evidence), rule=IMAGE_MISSING.name)


def _known_flaky(
    failure: Failure, lines: list[str] | None, rules: Sequence[FlakyRule]
) -> Verdict | None:
    if not lines:
        return None
    for rule in rules:
        if not rule.applies_to(failure.step_key, failure.name):
            continue
        line = next(
            (line for line in reversed(lines) if rule.regex.search(line[:MAX_SEARCHED_CHARS])),
            None,
        )
        if line is not None:
            evidence = EVIDENCE_RULE_LINE.format(name=rule.name, line=_excerpt(line, rule))
            return Verdict(FailureClass.KNOWN_FLAKY, _short(evidence), rule=rule.name)
    return None


def _from_history(signature: Signature, runs: Sequence[MainRun], log_read: bool) -> Verdict:
    new = FailureClass.NEW_FAILURE
    described = _short(signature.describe(), SIGNATURE_CHARS)
    if not log_read:
        return Verdict(new, WHY_NOT_READ)
    if signature.kind == "none":
        return Verdict(new, EVIDENCE_NEW.format(signature=described, why=WHY_UNKNOWN_SIGNATURE))
    if not runs:
        return Verdict(new, _short(EVIDENCE_NEW.format(signature=described, why=WHY_NO_HISTORY)))
    latest = runs[0]
    if not latest.passed:
        if signature.matches(latest.signature):
            evidence = EVIDENCE_BROKEN_TRUNK.format(
                number=latest.build_number, commit=latest.commit[:7], signature=described
            )
            return Verdict(FailureClass.BROKEN_TRUNK, _short(evidence), link=latest.build_url)
        why = WHY_MAIN_DIFFERENT.format(number=latest.build_number)
        evidence = EVIDENCE_NEW.format(signature=described, why=why)
        return Verdict(new, _short(evidence), link=latest.build_url)
    seen = next(
        (run for run in runs if run.passed_on_retry and signature.matches(run.signature)), None
    )
    if seen is not None:
        evidence = EVIDENCE_FLAKY_HISTORY.format(
            number=seen.build_number, commit=seen.commit[:7], signature=described
        )
        return Verdict(FailureClass.FLAKY_BY_HISTORY, _short(evidence), link=seen.build_url)
    why = WHY_NOT_SEEN.format(number=latest.build_number)
    return Verdict(new, _short(EVIDENCE_NEW.format(signature=described, why=why)))


def classify(
    failure: Failure,
    *,
    history: Sequence[MainRun],
    rules: Sequence[FlakyRule] = (),
    infra: Sequence[LogPattern] = DEFAULT_INFRA_PATTERNS,
    pr_commit: str | None = None,
    lines: Sequence[str] | None = None,
) -> Verdict:
    """The class of one failed job, with its evidence (see the module docstring).

    ``lines``: the log already cleaned (``clean_log``), read instead of ``log_tail``.
    """
    if lines is None and failure.log_tail is not None:
        lines = clean_log(failure.log_tail)
    lines = None if lines is None else list(lines)
    verdict = (
        _canceled(failure)
        or _image_missing(failure, lines)
        or _infra(failure, lines, infra)
        or _known_flaky(failure, lines, rules)
    )
    if verdict is not None:
        return verdict
    signature = NO_SIGNATURE if lines is None else signature_from_lines(lines)
    # Runs on the PR's own commit say nothing about main apart from the PR
    # (main's build of a merged PR, or a PR built from main's head). Newest
    # first by finish time; a stable sort keeps the given order on ties.
    runs = sorted(
        (run for run in history if pr_commit is None or run.commit != pr_commit),
        key=lambda run: run.finished_at,
        reverse=True,
    )
    return _from_history(signature, runs, log_read=lines is not None)
