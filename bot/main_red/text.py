"""The wording of the red-on-main follow-ups: the issue, the comment on the culprit's PR,
the partial revert PR and its commit, and the `why-red` reply. Pure: text in, text out.

Every body ends in a hidden marker naming the step and the episode (the first red
build), so a bot that lost its store finds its own issue and comments again instead of
writing second ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from bot.github import neutralise
from bot.github.bot_branches import REVERT_PREFIX
from bot.main_red.culprit import Ranking, RouteChange
from bot.main_red.signals import StepRun, StepSignal
from bot.routing.model import RoutedStep
from bot.routing_check.report import TABLE_HEAD, routing_row

MARKER_ISSUE = "<!-- followup-bot:red-on-main pipeline={pipeline} step={step} since={since} -->"
MARKER_CULPRIT = "<!-- followup-bot:red-on-main-culprit pipeline={pipeline} step={step} -->"
MARKER_GREEN = "<!-- followup-bot:green-again pipeline={pipeline} step={step} since={since} -->"
MARKER_REVERT = "<!-- followup-bot:partial-revert step={step} -->"
MARKER_REVERT_DONE = "<!-- followup-bot:partial-revert-done step={step} since={since} -->"
TRAILER_REVERT = "Followup-Bot-Revert"
TRAILER_EDITS = "Followup-Bot-Edits"

ISSUE_TITLE = "`{step}` red on main since build {number}"
INTRO = (
    "`{step}` (pipeline `{pipeline}`) has failed on main since build {first} "
    "({commit7}), the same way each time: {signature}. It last passed in build {green} "
    "({green7})."
)
SIGNAL_HEAD = "| build | commit | state | failure signature | route |\n|---|---|---|---|---|"
SIGNAL_ROW = "| {build} | {commit7} | {state} | {signature} | {route} |"
ROUTE_CELL = "{queue} · {plugin} · {image}"
ROUTE_AS_OF = (
    "Routes as the pipeline generator computes them from the last green ({green7}) and "
    "the first red ({red7}) trees."
)
CULPRIT_HEAD = "### Culprit"
CULPRIT_LINE = "{confidence} ({why}): {commit}"
NO_CULPRIT = "No single culprit ({why})."
CANDIDATES_HEAD = (
    "Commits between the last green and the first red build, strongest evidence first:"
)
CANDIDATE_ROW = "- {commit}: {evidence}"
NO_EVIDENCE = "no evidence"
ROUTE_CHANGE_HEAD = "The step's route changed:"
ROUTE_CHANGE_ROW = "- {field}: {before} → {after}"
FIX_HEAD = "### Fix"
FIX_REVERT = (
    "Partial revert: #{pr} puts back only this step's {keys} as they were in {green7}; "
    "the rest of the culprit's change stays."
)
FIX_NO_REVERT_CODE = (
    "The culprit did not change the step's route: the bot proposes no revert (it never "
    "reverts code). Fix forward, or revert by hand."
)
FIX_UNTRUSTED = (
    "No partial revert: main's history between the two builds is not a plain line (see the notes)."
)
FIX_REVERT_OPENING = "Partial revert: being opened (this issue is updated with its number)."
FIX_REVERT_FAILED = "No partial revert: {reason}."
FIX_REVERT_OFF = "Partial reverts are off (`main_red.revert: false`)."
IMAGES_HEAD = "### Images of build {build}"
NOTES_HEAD = "### Notes"

COMMENT_CULPRIT = (
    "The bot thinks this PR broke `{step}` on main ({confidence}: {why}): it has failed "
    "since build {first}. Evidence and the signal table: #{issue}."
)
COMMENT_GREEN = "`{step}` passed again on main in build {build} ({commit7}). Closing."
COMMENT_REVERT_DONE = (
    "`{step}` passed again on main in build {build}: this partial revert is no longer "
    "needed. Closing."
)

REVERT_TITLE = "Partial revert: route `{step}` as before {culprit7}"
REVERT_INTRO = (
    "`{step}` has failed on main since build {first}; {culprit} changed its route. "
    "This puts back only the step's {keys} from {green7} (build {green}, the last green "
    "one); nothing else of that change is touched. Details: #{issue}."
)
REVERT_ROUTE_HEAD = "Route of the step, first red → with this PR:"

WHY_RED_REPLY = "@{login} {body}"
WHY_RED_UNKNOWN_STEP = "no step `{step}` in the last {count} main builds of {pipelines}"
WHY_RED_GREEN = "`{step}` is green on main: it passed in build {build} ({commit7})."
WHY_RED_STATE = "`{step}` on main: {state} ({reason})."

# Reasons that a follow-up was not written, said on the issue rather than guessed around.
NOTE_REVERT_GONE = "the step is no longer in `{file}` on {head7}"
NOTE_REVERT_NOT_ROUTE = "reverting its keys would not give the step its last green route back"
NOTE_REVERT_MOVES_OTHERS = "reverting its keys would also re-route {keys}"
NOTE_REVERT_HUMAN = "someone else pushed to `{branch}`; the bot leaves that branch alone"
NOTE_NOT_A_PULL = (
    "the culprit {commit7} names #{number}, which is not the pull request that merged it, "
    "so no comment was posted there"
)
NOTE_NO_PULL = "the culprit {commit7} names no pull request, so no comment was posted on one"


def short(sha: str) -> str:
    return sha[:7]


def revert_branch(step: str) -> str:
    return f"{REVERT_PREFIX}{step}"


def edits_digest(path: str, text: str) -> str:
    return hashlib.sha256(path.encode() + b"\0" + text.encode()).hexdigest()[:16]


def _link(run: StepRun) -> str:
    return f"[#{run.build_number}]({run.build_url})" if run.build_url else f"#{run.build_number}"


def _route_cell(step: RoutedStep | None) -> str:
    if step is None:
        return "—"
    image = "no commit image" if step.image_suffix is None else (step.image_suffix or "CUDA")
    return ROUTE_CELL.format(queue=step.queue, plugin=step.plugin or "none", image=image)


def _commit(commit_sha: str, subject: str, pull: int | None) -> str:
    """``sha7 subject (#N)``: others' subject made inert, the PR number a real link."""
    if pull is not None:
        subject = subject.removesuffix(f"(#{pull})").rstrip()
    title = neutralise.inline(subject)
    return f"{short(commit_sha)} {title}" + (f" (#{pull})" if pull is not None else "")


def _value(value: str) -> str:
    return f"`{value}`" if value else '`""`'


def signal_table(
    signal: StepSignal,
    signatures: dict[str, str],
    before: RoutedStep | None,
    after: RoutedStep | None,
) -> str:
    """One row per red build of the streak (newest first) and the last green one."""
    rows = []
    for run in signal.streak:
        signature = neutralise.inline(signatures.get(run.job_id, "—"))
        rows.append(
            SIGNAL_ROW.format(
                build=_link(run),
                commit7=short(run.commit),
                state=run.state,
                signature=signature,
                route=_route_cell(after),
            )
        )
    if signal.last_green is not None:
        green = signal.last_green
        rows.append(
            SIGNAL_ROW.format(
                build=_link(green),
                commit7=short(green.commit),
                state="passed",
                signature="—",
                route=_route_cell(before),
            )
        )
    return SIGNAL_HEAD + "\n" + "\n".join(rows)


def culprit_section(ranking: Ranking, changes: Sequence[RouteChange]) -> str:
    parts = [CULPRIT_HEAD]
    top = ranking.culprit
    if top is not None:
        commit = _commit(top.commit.sha, top.commit.subject, top.commit.pull_number)
        parts.append(
            CULPRIT_LINE.format(confidence=ranking.confidence.value, why=ranking.why, commit=commit)
        )
    else:
        parts.append(NO_CULPRIT.format(why=ranking.why))
    if changes:
        rows = [
            ROUTE_CHANGE_ROW.format(field=c.field, before=_value(c.before), after=_value(c.after))
            for c in changes
        ]
        parts.append(ROUTE_CHANGE_HEAD + "\n" + "\n".join(rows))
    if ranking.candidates:
        rows = [
            CANDIDATE_ROW.format(
                commit=_commit(c.commit.sha, c.commit.subject, c.commit.pull_number),
                evidence=", ".join(e.value for e in c.evidence) or NO_EVIDENCE,
            )
            for c in ranking.candidates
        ]
        parts.append(CANDIDATES_HEAD + "\n" + "\n".join(rows))
    return "\n\n".join(parts)


def issue_title(step: str, first: StepRun) -> str:
    return ISSUE_TITLE.format(step=step, number=f"#{first.build_number}")


def issue_body(
    *,
    pipeline: str,
    step: str,
    signal: StepSignal,
    first: StepRun,
    signatures: dict[str, str],
    before: RoutedStep | None,
    after: RoutedStep | None,
    ranking: Ranking,
    changes: Sequence[RouteChange],
    fix: str,
    images: str | None,
    notes: Sequence[str],
) -> str:
    green = signal.last_green
    assert green is not None  # a broken step passed before its streak
    signature = neutralise.inline(signatures.get(first.job_id, "—"))
    parts = [
        INTRO.format(
            step=step,
            pipeline=pipeline,
            first=_link(first),
            commit7=short(first.commit),
            signature=signature,
            green=_link(green),
            green7=short(green.commit),
        ),
        signal_table(signal, signatures, before, after),
        ROUTE_AS_OF.format(green7=short(green.commit), red7=short(first.commit)),
        culprit_section(ranking, changes),
        FIX_HEAD + "\n\n" + fix,
    ]
    if images:
        parts.append(images)
    if notes:
        parts.append(NOTES_HEAD + "\n" + "\n".join(f"- {note}" for note in notes))
    parts.append(MARKER_ISSUE.format(pipeline=pipeline, step=step, since=first.build_number))
    return "\n\n".join(parts)


def images_section(build_number: int, rows_table: str) -> str:
    return IMAGES_HEAD.format(build=f"#{build_number}") + "\n\n" + rows_table


def revert_title(step: str, culprit_sha: str) -> str:
    return REVERT_TITLE.format(step=step, culprit7=short(culprit_sha))


def revert_body(
    *,
    step: str,
    first: StepRun,
    green: StepRun,
    culprit: str,
    keys: Sequence[str],
    issue: int,
    after: RoutedStep | None,
    restored: RoutedStep | None,
) -> str:
    intro = REVERT_INTRO.format(
        step=step,
        first=_link(first),
        culprit=culprit,
        keys=_keys(keys),
        green7=short(green.commit),
        green=_link(green),
        issue=issue,
    )
    table = TABLE_HEAD + "\n" + routing_row(step, after, restored)
    return "\n\n".join([intro, REVERT_ROUTE_HEAD + "\n\n" + table, MARKER_REVERT.format(step=step)])


def revert_commit_message(step: str, culprit_sha: str, keys: Sequence[str], digest: str) -> str:
    body = f"Puts back {_keys(keys)} of `{step}` as they were before {short(culprit_sha)}."
    trailers = f"{TRAILER_REVERT}: {step}\n{TRAILER_EDITS}: {digest}"
    return "\n\n".join([revert_title(step, culprit_sha), body, trailers]) + "\n"


def _keys(keys: Sequence[str]) -> str:
    return ", ".join(f"`{key}`" for key in keys)


def fix_revert(pr: int, keys: Sequence[str], green_sha: str) -> str:
    return FIX_REVERT.format(pr=pr, keys=_keys(keys), green7=short(green_sha))
