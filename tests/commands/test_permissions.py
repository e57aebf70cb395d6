"""Who may run what: the rule table, its wording, and the stricter ``--force``."""

from __future__ import annotations

import pytest

from bot.comments.grammar import (
    Command,
    CommandSpec,
    OptionSpec,
    authorize,
    parse_command,
    required_permission,
)
from bot.github.permissions import (
    ALLOWED_ANYONE,
    ALLOWED_READY_AUTHOR,
    ALLOWED_WRITE,
    LEVELS,
    REFUSED,
    REFUSED_NOT_READY,
    UNNAMED_COMMAND,
    WHO_ANYONE,
    WHO_WRITE,
    Decision,
    Permission,
    decide,
    has_write,
    stricter,
    who_may,
)

WRITERS = ("admin", "maintain", "write")
OTHERS = ("triage", "read", "none", "", "Admin", "owner")
READY_AUTHOR_WHO = (
    "people with write access to this repository, or the PR's author once the PR has "
    "the `ready` label"
)


@pytest.mark.parametrize("level", WRITERS)
def test_write_levels(level: str) -> None:
    assert has_write(level)


@pytest.mark.parametrize("level", OTHERS)
def test_other_levels_have_no_write(level: str) -> None:
    assert not has_write(level)


def test_levels_are_githubs() -> None:
    assert set(LEVELS) == {*WRITERS, "triage", "read", "none"}


# Every combination that matters: rule, access, authorship and labels.
@pytest.mark.parametrize(
    ("permission", "level", "is_author", "labels", "allowed"),
    [
        (Permission.ANYONE, "none", False, (), True),
        (Permission.ANYONE, "admin", True, ("ready",), True),
        (Permission.WRITE, "admin", False, (), True),
        (Permission.WRITE, "maintain", False, (), True),
        (Permission.WRITE, "write", False, (), True),
        (Permission.WRITE, "triage", False, (), False),
        (Permission.WRITE, "read", True, ("ready",), False),
        (Permission.WRITE, "none", True, ("ready",), False),
        (Permission.WRITE_OR_READY_AUTHOR, "write", False, (), True),
        (Permission.WRITE_OR_READY_AUTHOR, "maintain", True, (), True),
        (Permission.WRITE_OR_READY_AUTHOR, "read", True, ("ready",), True),
        (Permission.WRITE_OR_READY_AUTHOR, "none", True, ("bug", "ready"), True),
        (Permission.WRITE_OR_READY_AUTHOR, "none", True, ("Ready",), True),
        (Permission.WRITE_OR_READY_AUTHOR, "read", True, (), False),
        (Permission.WRITE_OR_READY_AUTHOR, "read", True, ("ready-run-all-tests",), False),
        (Permission.WRITE_OR_READY_AUTHOR, "triage", False, ("ready",), False),
        (Permission.WRITE_OR_READY_AUTHOR, "none", False, ("ready",), False),
    ],
)
def test_decide_truth_table(
    permission: Permission, level: str, is_author: bool, labels: tuple[str, ...], allowed: bool
) -> None:
    decision = decide(
        permission, level=level, is_author=is_author, labels=labels, ready_label="ready"
    )
    assert decision.allowed is allowed
    assert decision.reason


def test_reasons_name_the_command_and_the_rule() -> None:
    def run(permission: Permission, level: str, is_author: bool, *labels: str) -> Decision:
        return decide(
            permission,
            level=level,
            is_author=is_author,
            labels=labels,
            ready_label="ready",
            command="retry-flaky",
        )

    assert run(Permission.ANYONE, "none", False) == Decision(
        True, ALLOWED_ANYONE.format(command="`retry-flaky`")
    )
    assert run(Permission.WRITE_OR_READY_AUTHOR, "maintain", False) == Decision(
        True, ALLOWED_WRITE.format(level="maintain")
    )
    assert run(Permission.WRITE_OR_READY_AUTHOR, "read", True, "ready") == Decision(
        True, ALLOWED_READY_AUTHOR.format(ready_label="ready")
    )
    assert run(Permission.WRITE_OR_READY_AUTHOR, "read", False, "ready") == Decision(
        False,
        "only people with write access to this repository, or the PR's author once the PR "
        "has the `ready` label can run `retry-flaky`",
    )
    assert run(Permission.WRITE_OR_READY_AUTHOR, "none", True) == Decision(
        False,
        REFUSED_NOT_READY.format(
            who=READY_AUTHOR_WHO, command="`retry-flaky`", ready_label="ready"
        ),
    )
    assert run(Permission.WRITE, "read", True, "ready") == Decision(
        False, "only people with write access to this repository can run `retry-flaky`"
    )


def test_reason_without_a_command_name() -> None:
    decision = decide(
        Permission.WRITE, level="none", is_author=False, labels=(), ready_label="ready"
    )
    assert decision.reason == REFUSED.format(who=WHO_WRITE, command=UNNAMED_COMMAND)


def test_configured_ready_label_is_used_and_worded() -> None:
    allowed = decide(
        Permission.WRITE_OR_READY_AUTHOR,
        level="read",
        is_author=True,
        labels=("ci/full",),
        ready_label="ci/full",
    )
    assert allowed.allowed
    refused = decide(
        Permission.WRITE_OR_READY_AUTHOR,
        level="read",
        is_author=True,
        labels=("ready",),
        ready_label="ci/full",
    )
    assert not refused.allowed
    assert "`ci/full`" in refused.reason
    assert "`ready`" not in refused.reason


def test_who_may_wording() -> None:
    assert who_may(Permission.ANYONE) == WHO_ANYONE
    assert who_may(Permission.WRITE, ready_label="x") == WHO_WRITE
    assert who_may(Permission.WRITE_OR_READY_AUTHOR) == READY_AUTHOR_WHO


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (Permission.ANYONE, Permission.WRITE, Permission.WRITE),
        (Permission.WRITE, Permission.ANYONE, Permission.WRITE),
        (Permission.WRITE_OR_READY_AUTHOR, Permission.WRITE, Permission.WRITE),
        (Permission.ANYONE, Permission.WRITE_OR_READY_AUTHOR, Permission.WRITE_OR_READY_AUTHOR),
        (Permission.ANYONE, Permission.ANYONE, Permission.ANYONE),
    ],
)
def test_stricter(first: Permission, second: Permission, expected: Permission) -> None:
    assert stricter(first, second) is expected


# --- commands: the option that raises the bar ----------------------------------------------


def command(body: str) -> Command:
    parsed = parse_command(body, "bot")
    assert parsed is not None
    return parsed


@pytest.mark.parametrize(
    ("body", "rule"),
    [
        ("@bot help", Permission.ANYONE),
        ("@bot", Permission.ANYONE),
        ("@bot no-such-command", Permission.ANYONE),
        ("@bot retry-flaky", Permission.WRITE_OR_READY_AUTHOR),
        ("@bot retry-flaky --reason oom", Permission.WRITE_OR_READY_AUTHOR),
        ("@bot retry-flaky gpu-test --force", Permission.WRITE),
    ],
)
def test_required_permission(body: str, rule: Permission) -> None:
    assert required_permission(command(body)) is rule


def as_ready_author(body: str) -> Decision:
    return authorize(command(body), level="read", is_author=True, labels=("ready",))


def test_ready_author_may_retry_but_not_force() -> None:
    assert as_ready_author("@bot retry-flaky --reason oom").allowed
    forced = as_ready_author("@bot retry-flaky gpu-test --force")
    assert forced == Decision(
        False,
        "only people with write access to this repository can run `retry-flaky --force`",
    )


def test_writer_may_force() -> None:
    decision = authorize(
        command("@bot retry-flaky gpu-test --force"), level="write", is_author=False, labels=()
    )
    assert decision == Decision(True, ALLOWED_WRITE.format(level="write"))


def test_anyone_gets_help() -> None:
    decision = authorize(command("@bot help"), level="none", is_author=False, labels=())
    assert decision == Decision(True, ALLOWED_ANYONE.format(command="`help`"))


def test_an_option_under_the_commands_own_rule_is_not_named() -> None:
    pause = CommandSpec(
        name="pause",
        usage="@{handle} pause PIN",
        summary="Stops changing a pin.",
        permission=Permission.WRITE,
        options=(OptionSpec("why", True, "recorded", "TEXT", permission=Permission.WRITE),),
        max_args=1,
    )
    specs = {"pause": pause}
    parsed = parse_command("@bot pause fa --why revert", "bot", specs=specs)
    assert parsed is not None
    assert required_permission(parsed, specs=specs) is Permission.WRITE
    decision = authorize(parsed, level="read", is_author=True, labels=("ready",), specs=specs)
    assert decision.reason == REFUSED.format(who=WHO_WRITE, command="`pause`")
