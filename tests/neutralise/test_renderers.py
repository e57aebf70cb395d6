"""Every place the bot repeats others' text, fed hostile text: nothing of it acts."""

from __future__ import annotations

import ast
import re

from bot.allowlist import text as allowlist_text
from bot.dashboard import text as dashboard_text
from bot.dashboard.text import DashboardData, EntryRow, PinRow, RetryRow
from bot.landing import text as landing_text
from bot.pins import text as bump_text
from bot.pins.text import UpstreamCommit
from bot.retry import text as retry_text
from tests.bump.test_bump_text import NEW, OLD, WEB, render
from tests.neutralise.laws import WJ, acts, table_cells, unescaped_markdown

_CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`).*?(?<!`)\1(?!`)")  # an escaped ` opens none


def links(markdown: str) -> int:
    """How many ``](`` start a link target: not escaped, not inside a code span."""
    return len(re.findall(r"(?<!\\)\]\(", _CODE_SPAN.sub("", markdown)))


EVIL = (
    "fixes #1, closes o/r#2, resolves https://github.com/o/r/issues/3 GH-4 "
    "@maintainer @org/team [x](javascript:alert(1)) ![i](http://t.example/p.png) "
    "<img src=x> <!-- followup-bot:dashboard --> | cell\n# heading\n```\r\x00\u2028end"
)
EVIL_AUTHOR = "@maintainer"


UPSTREAM_LINK = re.compile(rf"\[[\w.-]+/[\w.-]+#{WJ}\d+\]\({re.escape(WEB)}/issues/\d+\)")


def render_bump(subject: str, author: str = EVIL_AUTHOR) -> bump_text.BumpText:
    sha = "c" * 40
    commit = UpstreamCommit(sha, "2026-08-01", author, subject, f"{WEB}/commit/{sha}")
    return render([commit])


def test_bump_pr_body_lists_a_hostile_subject_inertly() -> None:
    body = render_bump(EVIL + " (#77)").body
    [line] = [line for line in body.splitlines() if line.startswith("- 2026-08-01")]
    text, link = line.rsplit(" (", 1)
    assert link == f"[#77]({WEB}/pull/77))"  # the upstream PR link stays
    # The bot's own links of bare "#N" to the upstream repository are the only acts.
    upstream_links = re.findall(rf"\[[\w.-]+/[\w.-]+#{WJ}\d+\]\(([^)]*)\)", text)
    assert all(url.startswith(f"{WEB}/issues/") for url in upstream_links)
    inert = UPSTREAM_LINK.sub("", text)
    assert acts(inert) == []
    assert unescaped_markdown(inert.removeprefix("- 2026-08-01 · ").replace(" · ", " ", 1)) == []
    assert f"@{WJ}maintainer · " in line  # the author, defused
    assert body.count("<!--") == 1  # the bot's own marker only
    assert body.endswith(bump_text.MARKER.format(pin="flash-attention", target=NEW))


def test_bump_commit_message_is_inert_and_its_trailers_are_the_bots() -> None:
    forged = f"{EVIL}\n\n{bump_text.TRAILER_PIN}: evil\n{bump_text.TRAILER_TARGET}: {'d' * 40}"
    message = render_bump(forged).commit_message
    [line] = [line for line in message.splitlines() if line.startswith("- 2026-08-01")]
    assert acts(line) == []
    assert bump_text.commit_trailers(message) == {
        bump_text.TRAILER_PIN: "flash-attention",
        bump_text.TRAILER_FROM: OLD,
        bump_text.TRAILER_TARGET: NEW,
    }


def test_bump_title_carries_no_upstream_text() -> None:
    assert render_bump(EVIL).title == "Bump flash-attention from aaaaaaa to bbbbbbb (1 commit)"


def test_dashboard_rows_from_others_stay_in_their_cells_and_inert() -> None:
    data = DashboardData(
        repo="a/b",
        config_errors=("x.yml:1:1: bad value '```'", EVIL),
        # no PR numbers or logins of the bot's own here: every row is others' text only
        pins=(
            PinRow("p", "a" * 40, "b" * 40, 1, 2.0, None, None, False, last_failure=EVIL,
                   follows="tags v*", companions=(("tools/a.sh", EVIL), ("tools/b.sh", None))),
        ),
        entries=(EntryRow(EVIL, "p", "stale", "2026-01-01"),),
        retries=(
            RetryRow("j", None, step=EVIL, job_class="flaky", rule=EVIL, outcome="passed",
                     requested_by=None, reason=EVIL, at=0.0),
        ),
    )  # fmt: skip
    body = dashboard_text.render(data, handle="bot")
    assert body.count("<!--") == 1
    assert body.endswith(dashboard_text.MARKER + "\n")
    table = [line for line in body.splitlines() if line.startswith("|")]
    for line in table:
        assert acts(line) == [], line
        assert links(line) == 0, line
        assert "<img" not in _CODE_SPAN.sub("", line).replace("\\<img", ""), line
    widths = {"| pin ": 10, "| entry ": 4, "| date ": 8, "| step ": 4, "| rule or class ": 3}
    width = 0
    for line in table:
        width = next((w for head, w in widths.items() if line.startswith(head)), width)
        assert table_cells(line) == width, line
    # the config errors are one block that the "```" in an error cannot close
    lines = body.splitlines()
    start = lines.index("````text")
    assert lines.index("````", start) > start + 2
    assert lines.count("````") == 1


def test_retry_sticky_comment_keeps_others_text_in_its_cells() -> None:
    body = retry_text.sticky_body(
        builds=[{"pipeline": EVIL, "number": 1, "url": "https://bk.example/b/1"}],
        requested_by="alice",
        reason=EVIL,
        command_url="https://github.com/a/b/pull/5#issuecomment-1",
        rows=[
            {
                "name": EVIL,
                "url": "https://bk.example/j/1",
                "class": "infra",
                "evidence": EVIL,
                "evidence_link": None,
                "action": retry_text.ACTION_FORCED.format(
                    reason=EVIL, url="https://bk.example/j/2"
                ),
                "outcome": retry_text.OUTCOME_RUNNING,
            }
        ],
    )
    assert body.count("<!--") == 1
    assert body.endswith(retry_text.MARKER_STICKY)
    heading, _, asked, *_ = body.splitlines()
    pipeline = heading.removeprefix("### `retry-flaky` on [").rsplit(" #1](", 1)[0]
    assert acts(pipeline) == []
    assert unescaped_markdown(pipeline) == []
    reason = asked.split(", reason: ", 1)[1].removesuffix(".")
    assert acts(reason) == []
    assert unescaped_markdown(reason) == []
    rows = [line for line in body.splitlines() if line.startswith("| [")]
    assert len(rows) == 1
    assert table_cells(rows[0]) == 5
    assert acts(rows[0]) == []
    assert links(rows[0]) == 2  # the bot's job link and new-job link only


def test_landing_rows_and_paths() -> None:
    rows = landing_text.failing_rows(
        [{"name": EVIL, "url": "https://bk.example/j/1", "class": "new-failure", "evidence": EVIL}]
    )
    assert len(rows.splitlines()) == 1
    assert acts(rows) == []
    assert links(rows) == 1  # only the bot's link to the job
    paths = landing_text.code(["ok.py", "we`ird @x <!--.py"])
    assert paths == f"`ok.py`, ``we`ird @{WJ}x <{WJ}!--.py``"


def test_allowlist_texts() -> None:
    described = allowlist_text.describe_changes([EVIL], {"a/*": ["a/b.so", "x`y"]})
    assert acts(described) == []
    assert "\n#" not in described
    assert described.endswith("- narrow `a/*` to `a/b.so`, ``x`y``")
    evidence = allowlist_text.evidence_block(None, [f"Not allowed: {EVIL}"], "T\n````\n")
    assert acts(evidence) == []
    assert evidence.count("`````") == 2  # the table's block is fenced past its own ````
    assert allowlist_text.code_list(["a`b", "c"]) == "- ``a`b``\n- `c`"


def test_allowlist_suggestion_is_python_that_means_the_patterns() -> None:
    patterns = ["vllm_flash_attn/_C.abi3.so", 'x", __import__("os"), "', "tab\tback\\", "é"]
    lines = allowlist_text.allowlist_lines(patterns)
    assert ast.literal_eval("(\n" + lines + "\n)") == tuple(patterns)
    hostile = allowlist_text.allowlist_lines(["@x <!-- #1"])
    assert acts(hostile) == []
    assert hostile == '    "@\\u2060x <\\u2060!-- #\\u20601",'


def test_retry_sticky_comment_keeps_the_new_job_link_intact() -> None:
    new_job = "https://bk.example/vllm/ci/builds/2#63bcf4b2-6b66-4712-ac25-d631c90a4624"
    body = retry_text.sticky_body(
        builds=[{"pipeline": "ci", "number": 2, "url": "https://bk.example/vllm/ci/builds/2"}],
        requested_by="alice",
        reason=None,
        command_url="https://github.com/a/b/pull/5#issuecomment-1",
        rows=[
            {
                "name": "GPU",
                "url": "https://bk.example/vllm/ci/builds/2#242ec064",
                "class": "infra",
                "evidence": "agent lost",
                "evidence_link": None,
                "action": retry_text.ACTION_RETRIED.format(url=new_job),
                "outcome": retry_text.OUTCOME_RUNNING,
            }
        ],
    )
    assert f"retried → [new job]({new_job})" in body
