"""What `@bot retry-flaky` says: the sticky comment and its refusals."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from bot.github import neutralise

MARKER_STICKY = "<!-- followup-bot:retry-flaky -->"

REFUSE_NO_BUILD = "there is no Buildkite build of this PR's head commit `{head7}` yet"
REFUSE_HEAD_MOVED = (
    "the PR's head moved from `{old7}` to `{new7}` while the bot was looking; nothing was "
    "retried. Ask again once the new build has results"
)
REFUSE_NOT_CONFIGURED = (
    "retry-flaky is not set up for this repository (it needs the `buildkite` section in "
    "`.github/followup-bot.yml` and a Buildkite token on the bot)"
)
REFUSE_NOT_A_PR = "retry-flaky works on pull requests only"
REFUSE_FORCE_NEEDS_STEP = "`--force` needs the step key of the one job to retry"
REFUSE_FORCE_NEEDS_REASON = "`--force` needs `--reason TEXT`: forced retries are recorded"
REFUSE_FORCE_PERMISSION = "only people with write access can force a retry"
# {step} and {command} are what a commenter typed: filled in as code spans.
REFUSE_FORCE_UNKNOWN_STEP = "no failed job with step key {step} in build {build}"
REPLY_REFUSED = "@{login} I did not run {command}: {reason}."
REPLY_ERROR = "@{login} I could not read that command: {reason}."

TOO_MANY_FAILED = (
    "**{count} jobs failed** (more than {limit}): that looks like a real break or an "
    "outage, so the bot retried nothing. For a deliberate full rerun, use `/ci retry`."
)

ACTION_RETRIED = "retried → [new job]({url})"
ACTION_FORCED = "retried by force ({reason}) → [new job]({url})"
ACTION_NOT_RETRIED = "not retried: {why}"
ACTION_CAP = "not retried: the bot already retried this step {count} times in this build"
ACTION_NOT_RETRYABLE = "not retried: Buildkite refused ({message})"
WHY = {
    "image-missing": "the image it pulls is not in the registry; a retry pulls the same tag",
    "broken-trunk": "it fails the same way on main",
    "new-failure": "it looks like a real failure",
    # A cancel is someone's decision, and the job did not fail: it is not counted either.
    "canceled": "it was canceled, not failed (not counted as a failure)",
}
OUTCOME_PASSED = "passed on retry (flakiness confirmed)"
OUTCOME_FAILED = "failed again (not retried again automatically)"
OUTCOME_RUNNING = "running"
# An action the bot does not recognise is cut only when absurdly long.
ACTION_LIMIT = 2000


def _cell(text: str) -> str:
    """Others' text (a job label, a log excerpt, a reason) for a table cell or link text."""
    return neutralise.inline(text)


def _template_pattern(template: str) -> re.Pattern[str]:
    """What ``template.format(...)`` can give, with its fields as named groups."""
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else rf"(?P<{part}>{_URL if part == 'url' else '.*'})"
        for i, part in enumerate(parts)
    )
    return re.compile(regex, re.S)


_URL = r"[^\s()<>|\\]*"
# Actions the flow stores formatted: taken apart again so that others' words in
# them (the asker's reason, Buildkite's message) are neutralised while the bot's
# own new-job link is kept as it is (a job id fragment such as `#6a1…` must not
# be defused like an issue reference).
_ACTIONS_WITH_TEXT = [
    (template, _template_pattern(template))
    for template in (ACTION_RETRIED, ACTION_FORCED, ACTION_NOT_RETRYABLE)
]


def _action_cell(action: str) -> str:
    """An action for a table cell: others' words in it are rendered inert, and the
    bot's own Markdown (the new-job link) is kept."""
    for template, pattern in _ACTIONS_WITH_TEXT:
        if match := pattern.fullmatch(action):
            fields = {
                name: value if name == "url" else neutralise.inline(value)
                for name, value in match.groupdict().items()
            }
            return template.format(**fields)
    return neutralise.defuse(neutralise.one_line(action, limit=ACTION_LIMIT)).replace("|", "\\|")


def sticky_body(
    *,
    builds: Sequence[Mapping[str, Any]],
    requested_by: str,
    reason: str | None,
    command_url: str,
    rows: Sequence[Mapping[str, Any]],
    note: str | None = None,
) -> str:
    """The one comment per PR, rewritten from the recorded decisions each time."""
    asked = f"Asked by @{requested_by} ([comment]({command_url}))"
    if reason:
        asked += f", reason: {_cell(reason)}"
    shown = ", ".join(f"[{_cell(str(b['pipeline']))} #{b['number']}]({b['url']})" for b in builds)
    lines = [
        f"### `retry-flaky` on {shown}",
        "",
        asked + ".",
        "",
    ]
    if note:
        lines += [note, ""]
    if rows:
        lines += [
            "| job | class | evidence | action | outcome |",
            "|---|---|---|---|---|",
        ]
        for row in rows:
            link = f"[{_cell(str(row['name']))}]({row['url']})"
            evidence = _cell(str(row["evidence"]))
            if row.get("evidence_link"):
                evidence += f" ([see]({row['evidence_link']}))"
            lines.append(
                f"| {link} | {_cell(str(row['class']))} | {evidence} "
                f"| {_action_cell(str(row['action']))} "
                f"| {row.get('outcome') or ''} |"
            )
    lines += ["", MARKER_STICKY]
    return "\n".join(lines)
