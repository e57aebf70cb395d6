"""The help text: every command, its usage, what it does and who may run it."""

from __future__ import annotations

from bot.comments.grammar import (
    HELP_HEADER,
    HELP_INTRO,
    HELP_QUOTING,
    SPECS,
    CommandSpec,
    OptionSpec,
    help_text,
    parse_command,
)
from bot.github.permissions import Permission, who_may


def table_rows(text: str) -> list[str]:
    header_end = text.index(HELP_HEADER) + len(HELP_HEADER)
    rows = text[header_end:].strip().split("\n\n")[0]
    return rows.splitlines()


def test_layout() -> None:
    text = help_text("bot")
    assert text.startswith(HELP_INTRO)
    assert text.endswith(HELP_QUOTING)
    assert len(table_rows(text)) == len(SPECS)


def cell(text: str) -> str:
    """``text`` inside a markdown table cell, where a bare ``|`` would end the cell."""
    return text.replace("|", "\\|")


def test_every_command_with_usage_summary_and_rule() -> None:
    rows = table_rows(help_text("ci-helper", ready_label="ci/full"))
    for spec, row in zip(SPECS.values(), rows, strict=True):
        usage = spec.usage.format(handle="ci-helper").replace("|", "\\|")  # a table cell
        assert row.startswith(f"| `{usage}` | {spec.summary}")
        assert row.endswith(f" | {who_may(spec.permission, ready_label='ci/full')} |")
        for option in spec.options:
            assert f"`{cell(option.synopsis)}`: {option.help}" in row


def test_retry_flaky_row_as_users_read_it() -> None:
    row = table_rows(help_text("bot"))[1]
    assert row.startswith("| `@bot retry-flaky [STEP_KEY --force] [--reason TEXT]` | Retries only")
    assert "`--reason TEXT`: why you are asking; recorded with the retry" in row
    assert "`--force`: with STEP_KEY" in row
    assert "(only people with write access to this repository)" in row
    assert row.endswith(
        "| people with write access to this repository, or the PR's author once the PR has "
        "the `ready` label |"
    )


def test_help_lists_what_the_parser_knows() -> None:
    # The help must match what the bot does: every listed command is one it parses.
    for name, spec in SPECS.items():
        args = " x" * spec.min_args
        command = parse_command(f"@bot {name}{args}", "bot")
        assert command is not None
        assert command.name == name


def test_a_longer_table_is_listed_and_pipes_are_escaped() -> None:
    pause = CommandSpec(
        name="freeze",
        usage="@{handle} freeze PIN|all",
        summary="Stops changing a pin.",
        permission=Permission.WRITE,
        options=(OptionSpec("why", True, "recorded", "TEXT", permission=Permission.WRITE),),
        max_args=1,
    )
    text = help_text("bot", specs={**SPECS, "freeze": pause})
    rows = table_rows(text)
    assert len(rows) == len(SPECS) + 1
    # An option under the command's own rule does not repeat it.
    assert rows[-1] == (
        "| `@bot freeze PIN\\|all` | Stops changing a pin.<br>`--why TEXT`: recorded "
        "| people with write access to this repository |"
    )
