"""The wording of the red-on-main follow-ups: the issue, the comment on the culprit's PR,
the partial revert PR and its commit, and the `why-red` reply. Pure: text in, text out.

Every body ends in a hidden marker naming the step, the lane and the episode (the first
red build), so a bot that lost its store finds its own issue and comments again instead of
writing second ones. The regular lane's markers and titles are those of before lanes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from bot.github import neutralise
from bot.github.bot_branches import REVERT_PREFIX
from bot.main_red.culprit import Ranking, RouteChange
from bot.main_red.lanes import REGULAR, Lane
from bot.main_red.signals import StepRun, StepSignal
from bot.routing.model import RoutedStep
from bot.routing_check.report import TABLE_HEAD, routing_row

MARKER_ISSUE = (
    "<!-- followup-bot:red-on-main pipeline={pipeline} step={step} since={since}{lane} -->"
)
MARKER_CULPRIT = "<!-- followup-bot:red-on-main-culprit pipeline={pipeline} step={step}{lane} -->"
MARKER_GREEN = (
    "<!-- followup-bot:green-again pipeline={pipeline} step={step} since={since}{lane} -->"
)
MARKER_LANE = " lane={lane}"  # in a marker of a lane other than the regular one
MARKER_REVERT = "<!-- followup-bot:partial-revert step={step} -->"
MARKER_REVERT_DONE = "<!-- followup-bot:partial-revert-done step={step} since={since} -->"
TRAILER_REVERT = "Followup-Bot-Revert"
TRAILER_EDITS = "Followup-Bot-Edits"

ON_MAIN = "on main"
ON_MAIN_LANE = "on main ({lane})"
ISSUE_TITLE = "`{step}` red {on_main} since build {number}"
LANE_LINE = "Lane `{lane}`: main's builds with {env}, judged apart from main's other builds."
ENV_ITEM = "`{key}={value}`"
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
FIX_SAME_COMMIT = (
    "Nothing to revert: the last green and the first red build ran the same commit, so no "
    "commit of the repository came between them."
)
FIX_LANE_NO_REVERT = (
    "No partial revert from the `{lane}` lane: the bot proposes them from the regular "
    "lane's builds only (one revert branch per step). Revert by hand if that is the fix."
)
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
REVERT_FILE_KEYS = (
    "This puts {keys} back at the top level of `{file}`, where the step inherits it from; "
    "no other step of the file changes route."
)

WHY_RED_REPLY = "@{login} {body}"
WHY_RED_UNKNOWN_STEP = "no step `{step}` in the last {count} main builds of {pipelines}"
WHY_RED_GREEN = "`{step}` is green {on_main}: it passed in build {build} ({commit7})."
WHY_RED_STATE = "`{step}` {on_main}: {state} ({reason})."
WHY_RED_LAST_EPISODE = "Its last red run before that: {state} ({reason})."
WHY_RED_NO_RANKING = "No ranking: no passing run of the step before its red ones to compare with."

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
NOTE_SAME_COMMIT = (
    "the last green build {green} and the first red build {red} ran the same commit "
    "{commit7}: what changed is outside the repository (the lane's inputs, an image, the "
    "agents), so no commit is ranked"
)
WHY_SAME_COMMIT = "the last green and the first red build ran the same commit"


def short(sha: str) -> str:
    return sha[:7]


def on_main(lane: Lane = REGULAR) -> str:
    return ON_MAIN if lane.regular else ON_MAIN_LANE.format(lane=lane.name)


def lane_mark(lane: Lane) -> str:
    return MARKER_LANE.format(lane=lane.name) if lane.tag else ""


def issue_marker(pipeline: str, step: str, since: int, lane: Lane = REGULAR) -> str:
    return MARKER_ISSUE.format(pipeline=pipeline, step=step, since=since, lane=lane_mark(lane))


def culprit_marker(pipeline: str, step: str, lane: Lane = REGULAR) -> str:
    return MARKER_CULPRIT.format(pipeline=pipeline, step=step, lane=lane_mark(lane))


def green_marker(pipeline: str, step: str, since: int, lane: Lane = REGULAR) -> str:
    return MARKER_GREEN.format(pipeline=pipeline, step=step, since=since, lane=lane_mark(lane))


def lane_line(lane: Lane) -> str:
    env = ", ".join(ENV_ITEM.format(key=key, value=value) for key, value in lane.env)
    return LANE_LINE.format(lane=lane.name, env=env)


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


def issue_title(step: str, first: StepRun, lane: Lane = REGULAR) -> str:
    return ISSUE_TITLE.format(step=step, on_main=on_main(lane), number=f"#{first.build_number}")


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
    lane: Lane = REGULAR,
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
        *([] if lane.regular else [lane_line(lane)]),
        signal_table(signal, signatures, before, after),
        ROUTE_AS_OF.format(green7=short(green.commit), red7=short(first.commit)),
        culprit_section(ranking, changes),
        FIX_HEAD + "\n\n" + fix,
    ]
    if images:
        parts.append(images)
    if notes:
        parts.append(notes_section(notes))
    parts.append(issue_marker(pipeline, step, first.build_number, lane))
    return "\n\n".join(parts)


def notes_section(notes: Sequence[str]) -> str:
    return NOTES_HEAD + "\n" + "\n".join(f"- {note}" for note in notes)


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
