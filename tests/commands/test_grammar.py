"""Which comments are commands, and how their arguments are read."""

from __future__ import annotations

import pytest

from bot.comments.grammar import (
    HELP,
    MSG_ARGS_NEED_OPTION,
    MSG_MISSING_ARGS,
    MSG_MISSING_VALUE,
    MSG_OPTION_NEEDS_ARGS,
    MSG_REPEATED_OPTION,
    MSG_TOO_MANY_ARGS,
    MSG_UNEXPECTED_VALUE,
    MSG_UNKNOWN_OPTION,
    MSG_UNREADABLE,
    MSG_WITH_USAGE,
    RETRY_FLAKY,
    SPECS,
    Command,
    CommandError,
    CommandSpec,
    OptionSpec,
    parse_command,
)
from bot.github.permissions import Permission

RETRY_USAGE = "@bot retry-flaky [STEP_KEY --force] [--reason TEXT]"


def retry_error(message: str) -> str:
    return MSG_WITH_USAGE.format(message=message, usage=RETRY_USAGE)


def parse(body: str, handle: str = "bot") -> Command | None:
    return parse_command(body, handle)


# --- which line, and whether it addresses us ---------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "@bot help",
        "@bot help\nsecond line",
        "\n\n   \n@bot help",
        " @bot help",
        "   @bot help",
        "@bot help   ",
        "@bot\thelp",
        "@BOT help",
        "@Bot HELP",
        "@bot help\r\n@bot retry-flaky --bogus",
        "\r\n\r\n@bot help\r\n",
        "\r@bot help\r",
    ],
)
def test_help_commands(body: str) -> None:
    command = parse(body)
    assert command is not None
    assert (command.name, command.args, dict(command.options)) == (HELP, (), {})


@pytest.mark.parametrize(
    "body",
    [
        "",
        "   \n\t\n",
        "thanks @bot help",
        "please run\n@bot help",  # only the first non-empty line counts
        "@botx help",
        "@bot-other help",
        "@bot_ help",
        "@bo help",
        "bot help",
        "@ bot help",
        "```\n@bot help\n```",
        "~~~\n@bot help\n~~~",
        "```text\n@bot help\n```",
        "> @bot help",
        ">@bot help",
        "   > @bot help",
        "    @bot help",  # 4 spaces: an indented code block
        "\t@bot help",
        "  \t@bot help",
        "`@bot help`",
        "\\@bot help",
    ],
)
def test_not_commands(body: str) -> None:
    assert parse(body) is None


def test_bare_mention_is_help_and_keeps_the_line() -> None:
    assert parse("  @bot   \nmore") == Command(HELP, (), {}, "@bot")


def test_the_line_is_kept_as_written_without_indentation() -> None:
    command = parse('  @Bot retry-flaky --reason "image  pull"\r\nthanks!')
    assert command is not None
    assert command.line == '@Bot retry-flaky --reason "image  pull"'


def test_handle_is_compared_case_insensitively_both_ways() -> None:
    assert parse("@followup-BOT help", handle="FollowUp-bot") is not None
    assert parse("@followup help", handle="followup-bot") is None
    assert parse("@followup-bot-2 help", handle="followup-bot") is None


def test_empty_handle_is_refused() -> None:
    with pytest.raises(ValueError, match="handle"):
        parse_command("@ help", "")


# --- arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "args", "options"),
    [
        ("@bot retry-flaky", (), {}),
        ("@bot RETRY-FLAKY", (), {}),
        ('@bot retry-flaky --reason "CI image pull"', (), {"reason": "CI image pull"}),
        ("@bot retry-flaky --reason 'CI image pull'", (), {"reason": "CI image pull"}),
        ("@bot retry-flaky --reason=text", (), {"reason": "text"}),
        ('@bot retry-flaky --reason="a b"', (), {"reason": "a b"}),
        ("@bot retry-flaky --reason=a=b", (), {"reason": "a=b"}),
        ("@bot retry-flaky --reason OOM", (), {"reason": "OOM"}),
        ('@bot retry-flaky --reason "it\'s flaky"', (), {"reason": "it's flaky"}),
        (r"@bot retry-flaky --reason it\'s", (), {"reason": "it's"}),
        ("@bot retry-flaky gpu-test --force", ("gpu-test",), {"force": True}),
        ("@bot retry-flaky --force gpu-test", ("gpu-test",), {"force": True}),
        (
            '@bot retry-flaky gpu-test --force --reason "lost agent"',
            ("gpu-test",),
            {"force": True, "reason": "lost agent"},
        ),
        ("@bot retry-flaky - --force", ("-",), {"force": True}),
    ],
)
def test_retry_flaky_arguments(
    body: str, args: tuple[str, ...], options: dict[str, str | bool]
) -> None:
    command = parse(body)
    assert command is not None
    assert (command.name, command.args, dict(command.options)) == (RETRY_FLAKY, args, options)


def test_hash_is_not_a_comment() -> None:
    # Markdown has no "#" comments mid-line: the words after it are arguments.
    with pytest.raises(CommandError) as caught:
        parse("@bot retry-flaky --reason x # lost agent")
    given = "`lost` `agent`"
    assert str(caught.value) == retry_error(
        MSG_TOO_MANY_ARGS.format(command=RETRY_FLAKY, given=given)
    )


def test_later_lines_do_not_add_arguments() -> None:
    command = parse("@bot retry-flaky --reason first\n--force extra")
    assert command is not None
    assert dict(command.options) == {"reason": "first"}


def test_options_cannot_be_changed_after_parsing() -> None:
    command = parse("@bot retry-flaky --reason x")
    assert command is not None
    with pytest.raises(TypeError):
        command.options["reason"] = "y"  # type: ignore[index]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('@bot retry-flaky --reason "CI image pull', MSG_UNREADABLE),
        ("@bot retry-flaky --reason 'CI", MSG_UNREADABLE),
        ("@bot retry-flaky --reason x\\", MSG_UNREADABLE),
        (
            "@bot retry-flaky --bogus",
            MSG_UNKNOWN_OPTION.format(command=RETRY_FLAKY, option="--bogus"),
        ),
        (
            "@bot retry-flaky --bogus=1",
            MSG_UNKNOWN_OPTION.format(command=RETRY_FLAKY, option="--bogus=1"),
        ),
        ("@bot retry-flaky -f x", MSG_UNKNOWN_OPTION.format(command=RETRY_FLAKY, option="-f")),
        ("@bot retry-flaky --", MSG_UNKNOWN_OPTION.format(command=RETRY_FLAKY, option="--")),
        (
            "@bot retry-flaky --Reason x",
            MSG_UNKNOWN_OPTION.format(command=RETRY_FLAKY, option="--Reason"),
        ),
        ("@bot retry-flaky --reason", MSG_MISSING_VALUE.format(option="--reason", metavar="TEXT")),
        ("@bot retry-flaky --reason=", MSG_MISSING_VALUE.format(option="--reason", metavar="TEXT")),
        (
            '@bot retry-flaky --reason ""',
            MSG_MISSING_VALUE.format(option="--reason", metavar="TEXT"),
        ),
        (
            "@bot retry-flaky --reason --force x",
            MSG_MISSING_VALUE.format(option="--reason", metavar="TEXT"),
        ),
        ("@bot retry-flaky x --force=yes", MSG_UNEXPECTED_VALUE.format(option="--force")),
        ("@bot retry-flaky x --force --force", MSG_REPEATED_OPTION.format(option="--force")),
        (
            "@bot retry-flaky --reason a --reason=b",
            MSG_REPEATED_OPTION.format(option="--reason"),
        ),
        (
            "@bot retry-flaky one two --force",
            MSG_TOO_MANY_ARGS.format(command=RETRY_FLAKY, given="`two`"),
        ),
        (
            "@bot retry-flaky one two three --force",
            MSG_TOO_MANY_ARGS.format(command=RETRY_FLAKY, given="`two` `three`"),
        ),
        (
            "@bot retry-flaky gpu-test",
            MSG_ARGS_NEED_OPTION.format(command=RETRY_FLAKY, given="`gpu-test`", option="--force"),
        ),
        ("@bot retry-flaky --force", MSG_OPTION_NEEDS_ARGS.format(option="--force")),
    ],
)
def test_retry_flaky_errors(body: str, message: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse(body)
    assert str(caught.value) == retry_error(message)


def test_help_takes_no_arguments() -> None:
    with pytest.raises(CommandError) as caught:
        parse("@bot help me")
    expected = MSG_TOO_MANY_ARGS.format(command=HELP, given="`me`")
    assert str(caught.value) == MSG_WITH_USAGE.format(message=expected, usage="@bot help")


def test_usage_in_errors_names_the_repository_handle() -> None:
    with pytest.raises(CommandError, match="Usage: `@ci-helper retry-flaky"):
        parse_command("@ci-helper retry-flaky --nope", "ci-helper")


# --- unknown commands go back to the caller, who answers with the help ------------------


@pytest.mark.parametrize(
    ("body", "name", "args"),
    [
        ("@bot retry", "retry", ()),
        ("@bot Rebase now please", "rebase", ("now", "please")),
        ('@bot merge --when "checks pass"', "merge", ("--when", "checks pass")),
        ("@bot don't retry", "don't", ("retry",)),
        ("@bot what's up", "what's", ("up",)),  # unbalanced quote: split on spaces instead
        ("@bot thanks!", "thanks!", ()),
    ],
)
def test_unknown_commands_are_returned_not_raised(
    body: str, name: str, args: tuple[str, ...]
) -> None:
    command = parse(body)
    assert command is not None
    assert (command.name, command.args, dict(command.options)) == (name, args, {})
    assert command.name not in SPECS


# --- the spec table is open for issue 5's commands ---------------------------------------

PAUSE = CommandSpec(
    name="pause",
    usage="@{handle} pause PIN",
    summary="Stops changing a pin.",
    permission=Permission.WRITE,
    max_args=1,
    min_args=1,
)
BUMP = CommandSpec(
    name="bump",
    usage="@{handle} bump PIN [--to SHA|TAG]",
    summary="Rolls a pin now.",
    permission=Permission.WRITE,
    options=(OptionSpec("to", True, "the upstream commit", "SHA"),),
    max_args=1,
    min_args=1,
)
LATER = {**SPECS, PAUSE.name: PAUSE, BUMP.name: BUMP}


def test_a_spec_table_with_more_commands() -> None:
    bump = parse_command("@bot bump flash-attention --to abc123", "bot", specs=LATER)
    assert bump is not None
    assert (bump.name, bump.args, dict(bump.options)) == (
        "bump",
        ("flash-attention",),
        {"to": "abc123"},
    )
    pause = parse_command("@bot pause flash-attention", "bot", specs=LATER)
    assert pause is not None
    assert pause.args == ("flash-attention",)
    # Unknown to the default table: nothing is checked.
    default = parse_command("@bot freeze", "bot")
    assert default is not None
    assert default.name == "freeze"


def test_missing_required_argument() -> None:
    with pytest.raises(CommandError) as caught:
        parse_command("@bot pause", "bot", specs=LATER)
    expected = MSG_MISSING_ARGS.format(command="pause", limit=1, count=0)
    assert str(caught.value) == MSG_WITH_USAGE.format(message=expected, usage="@bot pause PIN")
