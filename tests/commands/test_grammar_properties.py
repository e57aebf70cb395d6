"""Laws of the command grammar on generated comments."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from bot.comments.grammar import HELP, RETRY_FLAKY, CommandError, parse_command

HANDLE = "bot"

# Anything but a line break: a reason lives on the command's line.
one_line = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"))
reasons = one_line.filter(bool)
not_mention_start = st.characters(
    blacklist_categories=["Cs", "Zs", "Zl", "Zp", "Cc"], blacklist_characters="@"
)
blocked_prefixes = st.sampled_from(
    ["```", "~~~", "> ", ">", "    ", "\t", "  \t", "@bot-", "@botx", "@bot_", "@bot1", "`"]
)
blank_lines = st.lists(st.sampled_from(["", " ", "   ", "\t"]), max_size=3).map(
    lambda lines: "".join(line + "\n" for line in lines)
)
line_breaks = st.sampled_from(["\n", "\r\n", "\r"])


@given(first=not_mention_start, rest=st.text())
def test_a_comment_not_starting_with_a_mention_is_not_a_command(first: str, rest: str) -> None:
    assert parse_command(first + rest, HANDLE) is None


@given(prefix=blocked_prefixes, rest=st.text())
def test_code_quotes_and_other_handles_are_not_commands(prefix: str, rest: str) -> None:
    assert parse_command(prefix + "@bot help" + rest, HANDLE) is None
    if prefix.strip():  # an indentation alone may be followed by a real command line
        assert parse_command(prefix + rest, HANDLE) is None


@given(
    blank=blank_lines,
    indent=st.sampled_from(["", " ", "  ", "   "]),
    mention=st.sampled_from(["@bot", "@BOT", "@Bot"]),
    brk=line_breaks,
    later=st.text(),
)
def test_help_survives_blank_lines_indentation_and_later_lines(
    blank: str, indent: str, mention: str, brk: str, later: str
) -> None:
    command = parse_command(f"{blank}{indent}{mention} help{brk}{later}", HANDLE)
    assert command is not None
    assert command.name == HELP


@given(reason=reasons.filter(lambda text: not text.startswith("-")), brk=line_breaks)
def test_reason_round_trips(reason: str, brk: str) -> None:
    body = f"@bot retry-flaky --reason {shlex.quote(reason)}{brk}more text"
    command = parse_command(body, HANDLE)
    assert command is not None
    assert (command.name, command.args, dict(command.options)) == (
        RETRY_FLAKY,
        (),
        {"reason": reason},
    )


@given(reason=reasons)
def test_reason_round_trips_with_equals(reason: str) -> None:
    # The "--reason=" form carries any reason, even one that starts with "-".
    command = parse_command(f"@bot retry-flaky {shlex.quote('--reason=' + reason)}", HANDLE)
    assert command is not None
    assert dict(command.options) == {"reason": reason}


@given(rest=one_line)
def test_a_mention_parses_or_explains(rest: str) -> None:
    # Nothing but a Command or a CommandError with the usage: never a crash, never None.
    message = ""
    try:
        command = parse_command("@bot " + rest, HANDLE)
    except CommandError as exc:
        message = str(exc)
    if message:
        assert "Usage: `@bot " in message
    else:
        assert command is not None
