"""Paths and path globs in the config follow a strict grammar: nothing that means
something in a URL (``?``, ``#``, ``%``, ``&``), no way out of the repository, one
spelling per path. Each trick gets its own case and the exact error text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.config import messages as msg
from bot.config.parse import parse_repo_config

from .samples import FILENAME, PIN_LINES, problems_of

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
LONG = "a/" * 127 + "bc"  # 256 characters


BUILDKITE = "buildkite: {organization: vllm, pipelines: [ci]}\n"


def allowlist_file(value: str) -> str:
    """The config with ``allowlist.file`` set to ``value`` (a JSON string is YAML)."""
    return f"allowlist: {{file: {json.dumps(value)}}}\n{BUILDKITE}"


def file_error(message: str) -> str:
    # The value starts right after "allowlist: {file: ", at column 19.
    return f"{FILENAME}:1:19: allowlist.file: {message}"


def bad_char(char: str, value: str, rule: str = msg.REPO_PATH_RULE) -> str:
    shown = f"{char!r} (U+{ord(char):04X})"
    return msg.MSG_PATH_CHARACTER.format(char=shown, value=value, rule=rule)


def not_normal(what: str, value: str, rule: str = msg.REPO_PATH_RULE) -> str:
    return msg.MSG_PATH_NOT_NORMAL.format(what=what, value=value, rule=rule)


def test_the_rules_read_as_documented() -> None:
    assert msg.REPO_PATH_RULE == (
        "a file path is relative to the repository root: names made of ASCII letters, digits, "
        "'.', '_', '-', '+' and '@', joined by single '/', none of them '.' or '..', "
        "at most 255 characters in all"
    )
    assert msg.PATH_GLOB_RULE == (
        "a path glob is written like a file path (names made of ASCII letters, digits, "
        "'.', '_', '-', '+' and '@', joined by single '/', none of them '.' or '..', "
        "at most 255 characters in all) and may also use '*', '?', '[', ']' and '!'"
    )
    # The docs quote both rules in block quotes, wrapped at any space.
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    docs = " ".join(" ".join(line.removeprefix(">").split()) for line in lines)
    assert msg.REPO_PATH_RULE in docs
    assert msg.PATH_GLOB_RULE in docs


def test_a_query_in_a_file_path_is_refused_with_the_rule_spelled_out() -> None:
    assert problems_of(allowlist_file("x.py?ref=evil")) == [
        f"{FILENAME}:1:19: allowlist.file: must not contain '?' (U+003F), got 'x.py?ref=evil' "
        "(a file path is relative to the repository root: names made of ASCII letters, "
        "digits, '.', '_', '-', '+' and '@', joined by single '/', none of them '.' or '..', "
        "at most 255 characters in all)"
    ]


FILE_TRICKS = {
    "query": ("x.py?ref=evil", bad_char("?", "x.py?ref=evil")),
    "another endpoint": ("x?/../../pulls", msg.MSG_PARENT_PATH.format(value="x?/../../pulls")),
    "fragment": ("x.py#frag", bad_char("#", "x.py#frag")),
    "percent-encoded parent": ("%2e%2e/x.py", bad_char("%", "%2e%2e/x.py")),
    "percent-encoded slash": ("a%2Fb.py", bad_char("%", "a%2Fb.py")),
    "parent": ("..", msg.MSG_PARENT_PATH.format(value="..")),
    "parent inside": ("a/../b.py", msg.MSG_PARENT_PATH.format(value="a/../b.py")),
    "parent at the end": ("a/..", msg.MSG_PARENT_PATH.format(value="a/..")),
    "parent behind a backslash": ("a\\..\\b", msg.MSG_PARENT_PATH.format(value="a\\..\\b")),
    "absolute": ("/abs/x.py", msg.MSG_ABSOLUTE_PATH.format(value="/abs/x.py")),
    "absolute with a backslash": ("\\abs\\x.py", msg.MSG_ABSOLUTE_PATH.format(value="\\abs\\x.py")),
    "drive letter": ("C:/x.py", msg.MSG_ABSOLUTE_PATH.format(value="C:/x.py")),
    "double slash": ("a//b.py", not_normal("'//'", "a//b.py")),
    "dot segment": ("a/./b.py", not_normal("a '.' name", "a/./b.py")),
    "leading dot segment": ("./b.py", not_normal("a '.' name", "./b.py")),
    "only a dot": (".", not_normal("a '.' name", ".")),
    "trailing slash": ("cmake/", not_normal("a trailing '/'", "cmake/")),
    "backslash": ("cmake\\fa.py", bad_char("\\", "cmake\\fa.py")),
    "ampersand": ("a&b.py", bad_char("&", "a&b.py")),
    "equals": ("a=b.py", bad_char("=", "a=b.py")),
    "space": ("check torch.py", bad_char(" ", "check torch.py")),
    "leading space": (" x.py", bad_char(" ", " x.py")),
    "tab": ("x\t.py", bad_char("\t", "x\t.py")),
    "newline": ("x\n.py", bad_char("\n", "x\n.py")),
    "bell": ("x\x07.py", bad_char("\x07", "x\x07.py")),
    "NUL": ("x\x00.py", bad_char("\x00", "x\x00.py")),
    "DEL": ("x\x7f.py", bad_char("\x7f", "x\x7f.py")),
    "colon": ("ab:c.py", bad_char(":", "ab:c.py")),
    "semicolon": ("a;b.py", bad_char(";", "a;b.py")),
    "star (a file path is not a glob)": ("*.py", bad_char("*", "*.py")),
    "tilde": ("~/x.py", bad_char("~", "~/x.py")),
    "quote": ("a'b.py", bad_char("'", "a'b.py")),
    "braces": ("{x}.py", bad_char("{", "{x}.py")),
    "division slash look-alike": ("a\u2215b.py", bad_char("\u2215", "a\u2215b.py")),
    "fullwidth dots": ("\uff0e\uff0e/x.py", bad_char("\uff0e", "\uff0e\uff0e/x.py")),
    "one-dot leaders": ("\u2024\u2024/x.py", bad_char("\u2024", "\u2024\u2024/x.py")),
    "cyrillic a": ("cm\u0430ke.py", bad_char("\u0430", "cm\u0430ke.py")),
    "non-breaking space": ("a\u00a0b.py", bad_char("\u00a0", "a\u00a0b.py")),
    "right-to-left override": ("a\u202eyp.b", bad_char("\u202e", "a\u202eyp.b")),
    "too long": (
        LONG,
        msg.MSG_PATH_TOO_LONG.format(limit=255, length=256, rule=msg.REPO_PATH_RULE),
    ),
}


@pytest.mark.parametrize(("value", "message"), list(FILE_TRICKS.values()), ids=list(FILE_TRICKS))
def test_each_trick_in_a_file_path_is_refused(value: str, message: str) -> None:
    assert problems_of(allowlist_file(value)) == [file_error(message)]


def test_a_pin_file_is_held_to_the_same_rule() -> None:
    lines = [line.replace("cmake/fa.cmake", "'cmake/fa.cmake#L1'") for line in PIN_LINES]
    text = "pins:\n" + "\n".join(lines) + "\n"
    assert problems_of(text) == [
        f"{FILENAME}:4:11: pins[0].file: " + bad_char("#", "cmake/fa.cmake#L1")
    ]


@pytest.mark.parametrize(
    "value",
    [
        ".buildkite/check-torch-abi.py",
        "a+b/c@d/-e/_f/.g/h..i/...",
        "x" * 255,
        "/".join("ab" for _ in range(85)),  # 254 characters
    ],
)
def test_odd_but_legal_file_paths_are_kept(value: str) -> None:
    config = parse_repo_config(allowlist_file(value))
    assert config.allowlist is not None
    assert config.allowlist.file == value


# --- globs: landing.paths and pins[].owns ---------------------------------------------


def landing_paths(*values: str) -> str:
    return f"landing: {{paths: [{', '.join(json.dumps(value) for value in values)}]}}\n"


def glob_error(column: int, index: int, message: str) -> str:
    return f"{FILENAME}:1:{column}: landing.paths[{index}]: {message}"


GLOB_TRICKS = {
    "query": ("cmake/*?ref=x", bad_char("=", "cmake/*?ref=x", msg.PATH_GLOB_RULE)),
    "fragment": ("cmake/#*", bad_char("#", "cmake/#*", msg.PATH_GLOB_RULE)),
    "percent": ("%2e%2e/**", bad_char("%", "%2e%2e/**", msg.PATH_GLOB_RULE)),
    "parent": ("../**", msg.MSG_PARENT_PATH.format(value="../**")),
    "absolute": ("/etc/*", msg.MSG_ABSOLUTE_PATH.format(value="/etc/*")),
    "double slash": ("cmake//*", not_normal("'//'", "cmake//*", msg.PATH_GLOB_RULE)),
    "dot segment": ("./cmake/**", not_normal("a '.' name", "./cmake/**", msg.PATH_GLOB_RULE)),
    "trailing slash": ("cmake/", not_normal("a trailing '/'", "cmake/", msg.PATH_GLOB_RULE)),
    "backslash": ("cmake\\*", bad_char("\\", "cmake\\*", msg.PATH_GLOB_RULE)),
    "ampersand": ("a&*", bad_char("&", "a&*", msg.PATH_GLOB_RULE)),
    "space": ("cmake/* x", bad_char(" ", "cmake/* x", msg.PATH_GLOB_RULE)),
    "control character": ("cmake/\x1b*", bad_char("\x1b", "cmake/\x1b*", msg.PATH_GLOB_RULE)),
    "look-alike star": ("cmake/\u2217", bad_char("\u2217", "cmake/\u2217", msg.PATH_GLOB_RULE)),
    "brace expansion": ("{a,b}/*", bad_char("{", "{a,b}/*", msg.PATH_GLOB_RULE)),
    "too long": (
        LONG,
        msg.MSG_PATH_TOO_LONG.format(limit=255, length=256, rule=msg.PATH_GLOB_RULE),
    ),
}


@pytest.mark.parametrize(("value", "message"), list(GLOB_TRICKS.values()), ids=list(GLOB_TRICKS))
def test_each_trick_in_a_landing_glob_is_refused(value: str, message: str) -> None:
    # After "landing: {paths: [" (column 19) and '"cmake/**", ' (12 characters).
    assert problems_of(landing_paths("cmake/**", value)) == [glob_error(31, 1, message)]


def test_an_owned_glob_is_held_to_the_glob_rule() -> None:
    text = "pins:\n" + "\n".join([*PIN_LINES, "    owns: ['x/*%00']"]) + "\n"
    assert problems_of(text) == [
        f"{FILENAME}:6:12: pins[0].owns[0]: " + bad_char("%", "x/*%00", msg.PATH_GLOB_RULE)
    ]


def test_wildcards_are_kept_in_globs() -> None:
    globs = ("cmake/**", "**/*.cmake", "cmake/?.cmake", "cmake/[!a-c]*.txt", "@x/+y/.z")
    config = parse_repo_config(landing_paths(*globs))
    assert config.landing is not None
    assert config.landing.paths == globs


def test_step_and_label_globs_are_not_paths() -> None:
    # Buildkite labels have spaces, colons and brackets; they never reach a URL.
    text = BUILDKITE + (
        "retry:\n  flaky_rules:\n"
        "    - {name: nccl, log: 'NCCL timeout', step: 'gpu-*', label: ':nvidia: (L4) #1 *'}\n"
    )
    rule = parse_repo_config(text).retry.flaky_rules[0]
    assert (rule.step, rule.label) == ("gpu-*", ":nvidia: (L4) #1 *")


@pytest.mark.parametrize("branch", ["release/./x", "release/.hidden", "x.lock/y"])
def test_a_branch_part_git_would_refuse_is_refused(branch: str) -> None:
    lines = [*PIN_LINES, f"    branch: {branch}"]
    reason = "a part between '/' starts with '.' or ends with '.lock'"
    assert problems_of("pins:\n" + "\n".join(lines) + "\n") == [
        f"{FILENAME}:6:13: pins[0].branch: "
        + msg.MSG_BAD_BRANCH.format(value=branch, reason=reason)
    ]


def test_a_branch_with_url_characters_is_kept_for_escaping() -> None:
    # git allows '#', '%' and '&' in branch names; bot.github.changes escapes them in URLs.
    lines = [*PIN_LINES, "    branch: 'rel#2/50%&x'"]
    config = parse_repo_config("pins:\n" + "\n".join(lines) + "\n")
    assert config.pins[0].branch == "rel#2/50%&x"
