"""Comment commands: ``@<handle> <command> [args]`` on the first line of a PR comment.

Only the first non-empty line counts, and only when it is plain Markdown text:
a fenced code block, a quote or an indented code block is someone showing or
citing a command, not running one. Arguments are split like a POSIX shell
(``--reason "image pull failed"``), then checked against the command's spec so
a typo is answered with what went wrong and the usage, never acted on.

New commands are added by appending a ``CommandSpec`` to ``COMMAND_SPECS``;
the parser, the permission check and the help text all read from there, so
the help can never describe a command the bot does not have.

Longer than 400 lines because the command table is data that the parser, the
permission check and the help text all read: one place to add a command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from bot.github.permissions import Decision, Permission, decide, stricter, who_may

HELP = "help"
RETRY_FLAKY = "retry-flaky"
BUMP = "bump"
RECREATE = "recreate"
PAUSE = "pause"
RESUME = "resume"
WHY_RED = "why-red"

# Markdown: up to 3 spaces of indentation is still a paragraph; 4 (or a tab) is code.
MAX_PARAGRAPH_INDENT = 3

MSG_UNREADABLE = (
    "cannot split the command into arguments: "
    "a quote is not closed, or the line ends with a backslash"
)
MSG_UNKNOWN_OPTION = "`{command}` has no option `{option}`"
MSG_MISSING_VALUE = "`{option}` needs a value: `{option} {metavar}`"
MSG_UNEXPECTED_VALUE = "`{option}` takes no value"
MSG_REPEATED_OPTION = "`{option}` is given more than once"
MSG_TOO_MANY_ARGS = "too many arguments for `{command}`: {given}"
MSG_MISSING_ARGS = "missing argument for `{command}`: it needs {limit}, got {count}"
MSG_ARGS_NEED_OPTION = "`{command}` takes {given} only together with `{option}`"
MSG_OPTION_NEEDS_ARGS = "`{option}` only works together with an argument"
MSG_WITH_USAGE = "{message}. Usage: `{usage}`"

HELP_INTRO = (
    "Write a command as the first line of a comment on a pull request "
    "(not quoted, not in a code block):"
)
HELP_HEADER = "| command | what it does | who may run it |\n|---|---|---|"
HELP_ROW = "| `{usage}` | {summary} | {who} |"
HELP_OPTION = "`{synopsis}`: {help}"
HELP_OPTION_PERMISSION = "{help} (only {who})"
HELP_QUOTING = 'Quote an argument that has spaces: `--reason "image pull failed"`.'


class CommandError(Exception):
    """A command line the bot cannot act on; ``str()`` is the user-facing reason."""


@dataclass(frozen=True)
class OptionSpec:
    name: str  # without the leading "--"
    takes_value: bool
    help: str
    metavar: str = "VALUE"
    # A stricter rule for using this option than the command's own (e.g. --force).
    permission: Permission | None = None

    @property
    def flag(self) -> str:
        return f"--{self.name}"

    @property
    def synopsis(self) -> str:
        return f"{self.flag} {self.metavar}" if self.takes_value else self.flag


@dataclass(frozen=True)
class CommandSpec:
    name: str
    usage: str  # "{handle}" is filled in with the repository's handle
    summary: str
    permission: Permission
    options: tuple[OptionSpec, ...] = ()
    max_args: int = 0
    min_args: int = 0
    # An option that is given exactly when positional arguments are
    # (retry-flaky: a STEP_KEY only makes sense with --force, and vice versa).
    args_option: str | None = None

    def option(self, name: str) -> OptionSpec | None:
        return next((option for option in self.options if option.name == name), None)

    def usage_for(self, handle: str) -> str:
        return self.usage.format(handle=handle)


@dataclass(frozen=True)
class Command:
    name: str
    args: tuple[str, ...] = ()
    options: Mapping[str, str | bool] = field(default_factory=lambda: MappingProxyType({}))
    line: str = ""  # the command line as written, without its indentation


COMMAND_SPECS: tuple[CommandSpec, ...] = (
    CommandSpec(
        name=HELP,
        usage="@{handle} help",
        summary="Lists the commands, what they do and who may run them.",
        permission=Permission.ANYONE,
    ),
    CommandSpec(
        name=RETRY_FLAKY,
        usage="@{handle} retry-flaky [STEP_KEY --force] [--reason TEXT]",
        summary=(
            "Retries only the failed jobs of this PR's latest build that look flaky or "
            "caused by the CI infrastructure, leaves real failures alone, and answers "
            "with the evidence for each job."
        ),
        permission=Permission.WRITE_OR_READY_AUTHOR,
        options=(
            OptionSpec("reason", True, "why you are asking; recorded with the retry", "TEXT"),
            OptionSpec(
                "force",
                False,
                "with STEP_KEY, retries that step's failed job even if it does not look "
                "flaky; recorded",
                permission=Permission.WRITE,
            ),
        ),
        max_args=1,
        args_option="force",
    ),
    CommandSpec(
        name=BUMP,
        usage="@{handle} bump PIN [--to SHA|TAG]",
        summary=(
            "Rolls PIN now to the head of its upstream branch (or newest release tag), or "
            "to the chosen upstream commit or tag (until upstream moves again)."
        ),
        permission=Permission.WRITE,
        options=(
            OptionSpec("to", True, "the upstream commit (or, for a tag pin, tag)", "SHA|TAG"),
        ),
        max_args=1,
        min_args=1,
    ),
    CommandSpec(
        name=RECREATE,
        usage="@{handle} recreate",
        summary=(
            "On a bump PR: rebuilds its branch from scratch on the base branch, discarding "
            "commits others pushed to it."
        ),
        permission=Permission.WRITE,
    ),
    CommandSpec(
        name=PAUSE,
        usage="@{handle} pause PIN",
        summary="Stops the bot changing PIN (it is still reconciled and shown on the dashboard).",
        permission=Permission.WRITE,
        max_args=1,
        min_args=1,
    ),
    CommandSpec(
        name=RESUME,
        usage="@{handle} resume PIN",
        summary="Lets the bot change PIN again after `pause`.",
        permission=Permission.WRITE,
        max_args=1,
        min_args=1,
    ),
    CommandSpec(
        name=WHY_RED,
        usage="@{handle} why-red STEP",
        summary=(
            "Says how the CI step STEP (its key) fares on main: the last green and the red "
            "builds with their failure signatures and routes, and the commits that may have "
            "broken it, ranked by evidence. Works on any issue or PR."
        ),
        permission=Permission.WRITE,
        max_args=1,
        min_args=1,
    ),
)
SPECS: Mapping[str, CommandSpec] = MappingProxyType({spec.name: spec for spec in COMMAND_SPECS})

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def parse_command(
    body: str, handle: str, *, specs: Mapping[str, CommandSpec] = SPECS
) -> Command | None:
    """The command in a comment ``body`` addressed to ``@handle``, or None.

    Raises ``CommandError`` for a known command written wrongly. An unknown
    command word is returned as a ``Command`` whose name is not in ``specs``:
    the caller answers it with the help text.
    """
    if not handle:
        raise ValueError("the handle must not be empty")
    line = _first_line(body)
    if line is None:
        return None
    rest = _addressed_text(line, handle)
    if rest is None:
        return None
    parts = rest.split(maxsplit=1)
    if not parts:
        return Command(HELP, line=line)
    word, remainder = parts[0], parts[1] if len(parts) > 1 else ""
    name = word.lower()
    spec = specs.get(name)
    if spec is None:
        try:
            args = shlex.split(remainder)
        except ValueError:
            args = remainder.split()
        return Command(name, tuple(args), line=line)
    try:
        tokens = shlex.split(remainder)
    except ValueError:
        raise _error(spec, handle, MSG_UNREADABLE) from None
    args, options = _bind(spec, handle, tokens)
    return Command(name, tuple(args), MappingProxyType(options), line)


def required_permission(
    command: Command, *, specs: Mapping[str, CommandSpec] = SPECS
) -> Permission:
    """The rule for running ``command`` with the options it was given."""
    spec = specs.get(command.name)
    if spec is None:
        return Permission.ANYONE  # an unknown command only gets the help text
    rule = spec.permission
    for option in _raising_options(spec):
        if option.name in command.options:
            rule = stricter(rule, option.permission or rule)
    return rule


def authorize(
    command: Command,
    *,
    level: str,
    is_author: bool,
    labels: Collection[str],
    ready_label: str = "ready",
    specs: Mapping[str, CommandSpec] = SPECS,
) -> Decision:
    """``decide`` for ``command``, naming the option that made it stricter, if any."""
    spec = specs.get(command.name)
    label = command.name
    if spec is not None:
        strict = [
            option.flag for option in _raising_options(spec) if option.name in command.options
        ]
        label = " ".join([command.name, *strict])
    return decide(
        required_permission(command, specs=specs),
        level=level,
        is_author=is_author,
        labels=labels,
        ready_label=ready_label,
        command=label,
    )


def _raising_options(spec: CommandSpec) -> tuple[OptionSpec, ...]:
    """The options that need a stricter rule than the command itself."""
    return tuple(
        option
        for option in spec.options
        if option.permission is not None
        and stricter(spec.permission, option.permission) is not spec.permission
    )


def help_text(
    handle: str, *, ready_label: str = "ready", specs: Mapping[str, CommandSpec] = SPECS
) -> str:
    """Markdown: every command, its usage, what it does and who may run it."""
    rows = [HELP_ROW.format(**_help_cells(spec, handle, ready_label)) for spec in specs.values()]
    return "\n\n".join([HELP_INTRO, "\n".join([HELP_HEADER, *rows]), HELP_QUOTING])


def _help_cells(spec: CommandSpec, handle: str, ready_label: str) -> dict[str, str]:
    parts = [spec.summary]
    raising = _raising_options(spec)
    for option in spec.options:
        text = option.help
        if option in raising and option.permission is not None:
            text = HELP_OPTION_PERMISSION.format(
                help=text, who=who_may(option.permission, ready_label=ready_label)
            )
        parts.append(HELP_OPTION.format(synopsis=option.synopsis, help=text))
    return {
        "usage": _cell(spec.usage_for(handle)),
        "summary": _cell("<br>".join(parts)),
        "who": _cell(who_may(spec.permission, ready_label=ready_label)),
    }


def _cell(text: str) -> str:
    # A bare "|" would end the table cell.
    return text.replace("|", "\\|")


def _first_line(body: str) -> str | None:
    """The first non-blank line without its indentation; None when it is Markdown code."""
    for raw in _LINE_BREAK.split(body):
        if not raw.strip():
            continue
        text = raw.lstrip(" \t")
        indent = raw[: len(raw) - len(text)]
        if "\t" in indent or len(indent) > MAX_PARAGRAPH_INDENT:
            return None
        return text.rstrip()
    return None


def _addressed_text(line: str, handle: str) -> str | None:
    """What follows ``@handle`` on ``line``, or None when the line does not address us.

    Fences (```` ``` ````, ``~~~``) and quotes (``>``) need no check of their
    own: such a line does not start with ``@``.
    """
    mention = "@" + handle
    if line[: len(mention)].casefold() != mention.casefold():
        return None
    rest = line[len(mention) :]
    if rest and not rest[0].isspace():
        return None  # "@handle-other", "@handlex": someone else
    return rest


def _bind(
    spec: CommandSpec, handle: str, tokens: Sequence[str]
) -> tuple[list[str], dict[str, str | bool]]:
    """Split ``tokens`` into positional arguments and options, checked against ``spec``."""
    args: list[str] = []
    options: dict[str, str | bool] = {}
    pending = list(tokens)
    while pending:
        token = pending.pop(0)
        if not _looks_like_option(token):
            args.append(token)
            continue
        name, has_value, value = token.removeprefix("--").partition("=")
        option = spec.option(name) if token.startswith("--") else None
        if option is None:
            raise _error(spec, handle, MSG_UNKNOWN_OPTION, command=spec.name, option=token)
        if option.name in options:
            raise _error(spec, handle, MSG_REPEATED_OPTION, option=option.flag)
        if not option.takes_value:
            if has_value:
                raise _error(spec, handle, MSG_UNEXPECTED_VALUE, option=option.flag)
            options[option.name] = True
            continue
        if not has_value and pending and not _looks_like_option(pending[0]):
            value = pending.pop(0)
        if not value:
            raise _error(
                spec, handle, MSG_MISSING_VALUE, option=option.flag, metavar=option.metavar
            )
        options[option.name] = value
    _check_args(spec, handle, args, options)
    return args, options


def _looks_like_option(token: str) -> bool:
    # A lone "-" is an ordinary argument, as in a shell.
    return token.startswith("-") and token != "-"


def _check_args(
    spec: CommandSpec, handle: str, args: Sequence[str], options: Mapping[str, str | bool]
) -> None:
    if len(args) > spec.max_args:
        given = " ".join(f"`{arg}`" for arg in args[spec.max_args :])
        raise _error(spec, handle, MSG_TOO_MANY_ARGS, command=spec.name, given=given)
    if len(args) < spec.min_args:
        raise _error(
            spec, handle, MSG_MISSING_ARGS, command=spec.name, limit=spec.min_args, count=len(args)
        )
    if spec.args_option is None:
        return
    flag = f"--{spec.args_option}"
    if args and spec.args_option not in options:
        given = " ".join(f"`{arg}`" for arg in args)
        raise _error(
            spec, handle, MSG_ARGS_NEED_OPTION, command=spec.name, given=given, option=flag
        )
    if not args and spec.args_option in options:
        raise _error(spec, handle, MSG_OPTION_NEEDS_ARGS, option=flag)


def _error(spec: CommandSpec, handle: str, template: str, **fields: object) -> CommandError:
    message = template.format(**fields)
    return CommandError(MSG_WITH_USAGE.format(message=message, usage=spec.usage_for(handle)))
