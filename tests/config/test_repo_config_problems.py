"""Each mistake is reported as file:line:column: field: message, all at once."""

from __future__ import annotations

import pytest

from bot.config import messages as msg
from bot.config.errors import ConfigError
from bot.config.parse import (
    MAX_CONFIG_BYTES,
    MAX_DEPTH,
    MAX_VALUES,
    parse_repo_config,
    parse_repo_config_bytes,
)

from .samples import FILENAME, PIN_LINES, problems_of


def at(line: int, column: int, field: str, message: str) -> str:
    return (
        f"{FILENAME}:{line}:{column}: {field}: {message}"
        if field
        else (f"{FILENAME}:{line}:{column}: {message}")
    )


def pins_with(*changes: str, drop: str = "") -> str:
    """The minimal valid pin, minus key ``drop``, plus extra lines ``changes``."""
    lines = [line for line in PIN_LINES if not (drop and line.strip(" -").startswith(drop))]
    if drop == "name":
        lines[0] = "  - " + lines[0].strip()
    return "pins:\n" + "\n".join(lines + [f"    {change}" for change in changes]) + "\n"


CASES = {
    "empty file": ("", [at(1, 1, "", msg.MSG_EMPTY_CONFIG)]),
    "only comments": ("# nothing yet\n", [at(1, 1, "", msg.MSG_EMPTY_CONFIG)]),
    "explicit null document": ("---\n", [at(1, 1, "", msg.MSG_EMPTY_CONFIG)]),
    "syntax error": (
        "handle: bot\npins: [a\n",
        [
            at(
                3,
                1,
                "",
                msg.MSG_YAML_SYNTAX.format(
                    problem="while parsing a flow sequence, "
                    "expected ',' or ']', but got '<stream end>'"
                ),
            )
        ],
    ),
    "two documents": (
        "handle: a\n---\nhandle: b\n",
        [
            at(
                2,
                1,
                "",
                msg.MSG_YAML_SYNTAX.format(
                    problem="expected a single document in the stream, but found another document"
                ),
            )
        ],
    ),
    "control character": (
        "handle: bot\npins: \x07\n",
        [
            at(
                2,
                7,
                "",
                msg.MSG_YAML_SYNTAX.format(problem="special characters are not allowed (U+0007)"),
            )
        ],
    ),
    "top level is a list": (
        "- a\n- b\n",
        [at(1, 1, "", msg.MSG_TOP_NOT_MAPPING.format(kind="a list"))],
    ),
    "top level is text": (
        "hello\n",
        [at(1, 1, "", msg.MSG_TOP_NOT_MAPPING.format(kind="string 'hello'"))],
    ),
    "unknown key with suggestion": (
        "pinz: []\n",
        [at(1, 1, "pinz", msg.MSG_UNKNOWN_KEY.format(key="pinz") + " (did you mean 'pins'?)")],
    ),
    "unknown key without suggestion": (
        "handle: bot\ncolour: red\n",
        [at(2, 1, "colour", msg.MSG_UNKNOWN_KEY.format(key="colour"))],
    ),
    "unknown key in a pin suggests a pin key": (
        pins_with("dependancy: x"),
        [
            at(
                6,
                5,
                "pins[0].dependancy",
                "unknown key 'dependancy'" + msg.MSG_DID_YOU_MEAN.format(suggestion="dependency"),
            )
        ],
    ),
    "YAML 1.1 boolean key is read as written": (
        "on: push\n",
        [at(1, 1, "on", msg.MSG_UNKNOWN_KEY.format(key="on"))],
    ),
    "duplicate key points at the second": (
        "handle: one\npins: []\nhandle: two\n",
        [at(3, 1, "handle", msg.MSG_DUPLICATE_KEY.format(key="handle", line=1))],
    ),
    "duplicate key inside a pin": (
        pins_with("file: other.cmake"),
        [at(6, 5, "pins[0].file", msg.MSG_DUPLICATE_KEY.format(key="file", line=4))],
    ),
    "key that is a list": (
        "? [a, b]\n: 1\n",
        [at(1, 3, "", msg.MSG_KEY_NOT_STRING.format(kind="a list"))],
    ),
    "python tag is refused, not executed": (
        "handle: !!python/object/apply:os.system [echo]\n",
        [at(1, 9, "handle", msg.MSG_UNSUPPORTED_TAG.format(tag="!!python/object/apply:os.system"))],
    ),
    "python tag on the top level": (
        "!!python/object:builtins.dict {}\n",
        [at(1, 1, "", msg.MSG_UNSUPPORTED_TAG.format(tag="!!python/object:builtins.dict"))],
    ),
    "custom local tag": (
        "handle: !env BOT\n",
        [at(1, 9, "handle", msg.MSG_UNSUPPORTED_TAG.format(tag="!env"))],
    ),
    "impossible date": (
        "handle: 2024-13-45\n",
        [
            at(
                1,
                9,
                "handle",
                msg.MSG_BAD_SCALAR.format(raw="2024-13-45", reason="month must be in 1..12"),
            )
        ],
    ),
    "integer where text is expected": (
        "handle: 42\n",
        [
            at(
                1,
                9,
                "handle",
                msg.MSG_WRONG_TYPE.format(expected="a string", kind="integer 42")
                + msg.MSG_QUOTE_HINT,
            )
        ],
    ),
    "YAML 1.1 boolean value": (
        pins_with("branch: yes"),
        [
            at(
                6,
                13,
                "pins[0].branch",
                msg.MSG_WRONG_TYPE.format(expected="a string", kind="boolean true")
                + msg.MSG_QUOTE_HINT,
            )
        ],
    ),
    "null where text is expected": (
        pins_with("branch:"),
        [at(6, 12, "pins[0].branch", msg.MSG_WRONG_TYPE.format(expected="a string", kind="null"))],
    ),
    "mapping expected": (
        "allowlist: [a]\n",
        [at(1, 12, "allowlist", msg.MSG_WRONG_TYPE.format(expected="a mapping", kind="a list"))],
    ),
    "list expected": (
        "pins: {name: x}\n",
        [at(1, 7, "pins", msg.MSG_WRONG_TYPE.format(expected="a list", kind="a mapping"))],
    ),
    "pin that is not a mapping": (
        "pins:\n  - flash-attention\n",
        [
            at(
                2,
                5,
                "pins[0]",
                msg.MSG_WRONG_TYPE.format(expected="a mapping", kind="string 'flash-attention'"),
            )
        ],
    ),
    "missing required key points at the pin": (
        pins_with(drop="upstream"),
        [at(2, 5, "pins[0].upstream", msg.MSG_MISSING)],
    ),
    "missing buildkite organization": (
        "buildkite:\n  pipelines: [ci]\n",
        [at(2, 3, "buildkite.organization", msg.MSG_MISSING)],
    ),
    "bad owner/repo": (
        pins_with().replace("vllm-project/flash-attention", "https://github.com/x/y"),
        [
            at(
                3,
                15,
                "pins[0].upstream",
                msg.MSG_BAD_UPSTREAM.format(value="https://github.com/x/y"),
            )
        ],
    ),
    "owner/repo without a repo": (
        pins_with().replace("vllm-project/flash-attention", "vllm-project"),
        [at(3, 15, "pins[0].upstream", msg.MSG_BAD_UPSTREAM.format(value="vllm-project"))],
    ),
    "pin name with a slash": (
        pins_with().replace("name: fa", "name: flash/attention"),
        [at(2, 11, "pins[0].name", msg.MSG_BAD_PIN_NAME.format(value="flash/attention"))],
    ),
    "pin name starting with a dash": (
        pins_with().replace("name: fa", "name: -fa"),
        [at(2, 11, "pins[0].name", msg.MSG_BAD_PIN_NAME.format(value="-fa"))],
    ),
    "pin name git cannot use": (
        pins_with().replace("name: fa", "name: fa.lock"),
        [at(2, 11, "pins[0].name", msg.MSG_PIN_NAME_NOT_A_REF.format(value="fa.lock"))],
    ),
    "branch git cannot use": (
        pins_with("branch: 'release..x'"),
        [
            at(
                6,
                13,
                "pins[0].branch",
                msg.MSG_BAD_BRANCH.format(
                    value="release..x", reason="it contains '..', '@{' or '//'"
                ),
            )
        ],
    ),
    "branch with a space": (
        pins_with("branch: my branch"),
        [
            at(
                6,
                13,
                "pins[0].branch",
                msg.MSG_BAD_BRANCH.format(
                    value="my branch",
                    reason="it contains a space, a control character or one of ~^:?*[\\",
                ),
            )
        ],
    ),
    "absolute file": (
        pins_with().replace("file: cmake/fa.cmake", "file: /etc/passwd"),
        [at(4, 11, "pins[0].file", msg.MSG_ABSOLUTE_PATH.format(value="/etc/passwd"))],
    ),
    "file escaping the repo": (
        pins_with().replace("file: cmake/fa.cmake", "file: cmake/../../x"),
        [at(4, 11, "pins[0].file", msg.MSG_PARENT_PATH.format(value="cmake/../../x"))],
    ),
    "empty file path": (
        "allowlist: {file: ''}\n",
        [at(1, 19, "allowlist.file", msg.MSG_EMPTY)],
    ),
    "bad dependency name": (
        pins_with().replace("dependency: vllm-flash-attn", "dependency: vllm flash"),
        [at(5, 17, "pins[0].dependency", msg.MSG_BAD_DEPENDENCY.format(value="vllm flash"))],
    ),
    "empty glob in owns": (
        pins_with("owns: ['vllm_flash_attn/*', '  ']"),
        [at(6, 33, "pins[0].owns[1]", msg.MSG_EMPTY)],
    ),
    "absolute glob in owns": (
        pins_with("owns: [/x/*.so]"),
        [at(6, 12, "pins[0].owns[0]", msg.MSG_ABSOLUTE_PATH.format(value="/x/*.so"))],
    ),
    "duplicate pin name points at the second": (
        pins_with()
        + "\n".join(PIN_LINES).replace("dependency: vllm-flash-attn", "dependency: other")
        + "\n",
        [at(6, 11, "pins[1].name", msg.MSG_DUPLICATE_PIN.format(name="fa", index=0))],
    ),
    "pin names differing only in case collide": (
        pins_with()
        + "\n".join(PIN_LINES)
        .replace("name: fa", "name: FA")
        .replace("dependency: vllm-flash-attn", "dependency: other")
        + "\n",
        [at(6, 11, "pins[1].name", msg.MSG_DUPLICATE_PIN.format(name="FA", index=0))],
    ),
    "two pins on one dependency": (
        pins_with() + "\n".join(PIN_LINES).replace("name: fa", "name: fa2") + "\n",
        [
            at(
                9,
                17,
                "pins[1].dependency",
                msg.MSG_DUPLICATE_DEPENDENCY.format(
                    index=0, dependency="vllm-flash-attn", file="cmake/fa.cmake"
                ),
            )
        ],
    ),
    "unknown merge method": (
        "landing: {merge_method: fast-forward}\n",
        [
            at(
                1,
                25,
                "landing.merge_method",
                msg.MSG_NOT_ONE_OF.format(
                    choices="'merge', 'squash', 'rebase'", kind="string 'fast-forward'"
                ),
            )
        ],
    ),
    "unknown blocked-build policy": (
        "landing: {blocked_builds: sometimes}\n",
        [
            at(
                1,
                27,
                "landing.blocked_builds",
                msg.MSG_NOT_ONE_OF.format(choices="'green', 'wait'", kind="string 'sometimes'"),
            )
        ],
    ),
    "absolute landing path": (
        "landing: {paths: [cmake/**, /etc]}\n",
        [at(1, 29, "landing.paths[1]", msg.MSG_ABSOLUTE_PATH.format(value="/etc"))],
    ),
    "label too long": (
        f"landing: {{labels_on_approval: [{'x' * 51}]}}\n",
        [
            at(
                1,
                32,
                "landing.labels_on_approval[0]",
                msg.MSG_LABEL_TOO_LONG.format(value="x" * 51, limit=50),
            )
        ],
    ),
    "no pipelines": (
        "buildkite: {organization: vllm, pipelines: []}\n",
        [at(1, 44, "buildkite.pipelines", msg.MSG_TOO_SHORT.format(items="1 item"))],
    ),
    "bad buildkite slug": (
        "buildkite: {organization: vllm/ci, pipelines: [ci]}\n",
        [at(1, 27, "buildkite.organization", msg.MSG_BAD_SLUG.format(value="vllm/ci"))],
    ),
    "bad handle": (
        "handle: '@bot'\n",
        [at(1, 9, "handle", msg.MSG_BAD_HANDLE.format(value="@bot"))],
    ),
    "allowlist variable that is not a name": (
        "allowlist: {variable: ALLOWED-LIBS}\n",
        [at(1, 23, "allowlist.variable", msg.MSG_BAD_IDENTIFIER.format(value="ALLOWED-LIBS"))],
    ),
    "audit step with a space": (
        "allowlist: {audit_step: torch abi}\n",
        [at(1, 25, "allowlist.audit_step", msg.MSG_HAS_WHITESPACE.format(value="torch abi"))],
    ),
    "too deeply nested": (
        "handle: " + "[" * 40 + "]" * 40 + "\n",
        [at(1, 41, "", msg.MSG_TOO_DEEP.format(limit=MAX_DEPTH))],
    ),
}


@pytest.mark.parametrize(("text", "expected"), list(CASES.values()), ids=list(CASES))
def test_each_mistake_is_located_and_explained(text: str, expected: list[str]) -> None:
    assert problems_of(text) == expected


def test_all_problems_are_reported_together_in_file_order() -> None:
    text = "\n".join(
        [
            "handle: bot",  # 1
            "handle: again",  # 2  duplicate key
            "pinz: []",  # 3  unknown key
            "pins:",  # 4
            "  - name: -bad",  # 5  bad name
            "    upstream: nope",  # 6  bad upstream
            "    file: /abs",  # 7  absolute path
            "    dependency: d",  # 8
            "  - name: b",  # 9  upstream missing
            "    file: f.cmake",  # 10
            "    dependency: 5",  # 11 wrong type
            "landing: {merge_method: ff}",  # 12 unknown merge method
        ]
    )
    assert problems_of(text) == [
        at(2, 1, "handle", msg.MSG_DUPLICATE_KEY.format(key="handle", line=1)),
        at(3, 1, "pinz", "unknown key 'pinz' (did you mean 'pins'?)"),
        at(5, 11, "pins[0].name", msg.MSG_BAD_PIN_NAME.format(value="-bad")),
        at(6, 15, "pins[0].upstream", msg.MSG_BAD_UPSTREAM.format(value="nope")),
        at(7, 11, "pins[0].file", msg.MSG_ABSOLUTE_PATH.format(value="/abs")),
        at(9, 5, "pins[1].upstream", msg.MSG_MISSING),
        at(
            11,
            17,
            "pins[1].dependency",
            msg.MSG_WRONG_TYPE.format(expected="a string", kind="integer 5") + msg.MSG_QUOTE_HINT,
        ),
        at(
            12,
            25,
            "landing.merge_method",
            msg.MSG_NOT_ONE_OF.format(choices="'merge', 'squash', 'rebase'", kind="string 'ff'"),
        ),
    ]


def test_a_bad_value_under_an_unknown_key_gives_both_problems_once() -> None:
    assert problems_of("colour: !!python/name:os.system\n") == [
        at(1, 1, "colour", "unknown key 'colour'"),
        at(1, 9, "colour", msg.MSG_UNSUPPORTED_TAG.format(tag="!!python/name:os.system")),
    ]


def test_a_value_refused_while_reading_yaml_is_not_reported_again_as_a_wrong_type() -> None:
    # The tag makes the value unusable; pydantic would add "expected a string, got null".
    assert problems_of("handle: !!binary aGVsbG8=\n") == [
        at(1, 9, "handle", msg.MSG_UNSUPPORTED_TAG.format(tag="!!binary"))
    ]


def test_a_key_that_is_not_text_does_not_hide_other_problems() -> None:
    assert problems_of("? [a]\n: 1\nhandle: 7.5\n") == [
        at(1, 3, "", msg.MSG_KEY_NOT_STRING.format(kind="a list")),
        at(
            3,
            9,
            "handle",
            msg.MSG_WRONG_TYPE.format(expected="a string", kind="number 7.5") + msg.MSG_QUOTE_HINT,
        ),
    ]


def test_huge_text_is_refused_before_parsing() -> None:
    text = "handle: bot\n" + "#" * MAX_CONFIG_BYTES
    assert problems_of(text) == [f"{FILENAME}: " + msg.MSG_TOO_LARGE.format(limit=MAX_CONFIG_BYTES)]


def test_huge_bytes_are_refused_before_decoding() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_repo_config_bytes(b"\xff" * (MAX_CONFIG_BYTES + 1), filename=FILENAME)
    assert [str(p) for p in caught.value.problems] == [
        f"{FILENAME}: " + msg.MSG_TOO_LARGE.format(limit=MAX_CONFIG_BYTES)
    ]


def test_invalid_utf8_is_located() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_repo_config_bytes(b"handle: bot\npins:\n  - name: \xff\n", filename=FILENAME)
    assert [str(p) for p in caught.value.problems] == [
        at(3, 11, "", msg.MSG_NOT_UTF8.format(reason="invalid start byte"))
    ]


def test_alias_bombs_stop_at_the_value_limit() -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 6):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    problems = problems_of("\n".join(lines) + "\n")
    assert len(problems) == 1
    assert problems[0].endswith(": " + msg.MSG_TOO_MANY_VALUES.format(limit=MAX_VALUES))


def test_nesting_deeper_than_the_yaml_parser_can_follow_is_refused() -> None:
    depth = 5000
    assert problems_of("handle: " + "[" * depth + "]" * depth + "\n") == [
        f"{FILENAME}: " + msg.MSG_TOO_DEEP.format(limit=MAX_DEPTH)
    ]


def test_retry_and_allowlist_without_buildkite_are_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_repo_config("retry: {max_failed_jobs: 3}\nallowlist: {}\n")
    assert str(raised.value).splitlines() == [
        f".github/followup-bot.yml:1:1: retry: {msg.MSG_RETRY_NEEDS_BUILDKITE}",
        f".github/followup-bot.yml:2:1: allowlist: {msg.MSG_ALLOWLIST_NEEDS_EVIDENCE}",
    ]


def test_an_allowlist_with_its_own_wheel_audit_needs_no_buildkite() -> None:
    url = "https://wheels.example.org/{commit}/vllm.whl"
    config = parse_repo_config(f"allowlist: {{wheel_url: '{url}'}}\n")
    assert config.allowlist is not None
    assert config.buildkite is None
