"""YAML companions: a key path ``a.b.c`` to a scalar, found on PyYAML's nodes."""

from __future__ import annotations

import pytest

from bot.config.models import CompanionConfig
from bot.edit import companion as comp
from bot.edit.companion import CompanionError, CompanionValue, read_companion, set_companion

FILE = ".buildkite/deps.yaml"
PATH = "deps.deepgemm.ref"
COMPANION = CompanionConfig(file=FILE, variable=PATH)

DEPS = """# Upstream refs the CI images build from.
deps:
  flashmla:
    ref: c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00
  deepgemm:
    url: https://github.com/deepseek-ai/DeepGEMM.git
    ref: "a0c4f6e2b8d1357924680ace13579bdf02468ace"  # kept in sync with deepgemm.cmake
images: [cuda, rocm]
"""


def read(text: str, path: str = PATH) -> CompanionValue:
    return read_companion(text, CompanionConfig(file=FILE, variable=path), filename=FILE)


def refusal(text: str, path: str = PATH) -> str:
    with pytest.raises(CompanionError) as caught:
        read(text, path)
    return str(caught.value)


def not_literal(line: int, reason: str, path: str = PATH) -> str:
    return comp.MSG_NOT_LITERAL.format(filename=FILE, line=line, name=path, reason=reason)


def test_reads_a_nested_double_quoted_value() -> None:
    sha = "a0c4f6e2b8d1357924680ace13579bdf02468ace"

    assert read(DEPS) == CompanionValue(sha, 7, DEPS.index(sha), DEPS.index(sha) + 40)


def test_sets_only_the_value() -> None:
    new = "feedfacefeedfacefeedfacefeedfacefeedface"

    edited = set_companion(DEPS, COMPANION, new, filename=FILE)

    assert edited == DEPS.replace("a0c4f6e2b8d1357924680ace13579bdf02468ace", new)


@pytest.mark.parametrize(
    "value",
    ["v1.2.3", "'v1.2.3'", '"v1.2.3"', "v1.2.3   # a comment", "'v1.2.3'  # a comment"],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_reads_and_sets_plain_and_quoted_scalars(value: str, newline: str) -> None:
    text = newline.join(["a:", "  b:", f"    c: {value}", "  d: 1", ""])

    found = read(text, "a.b.c")

    assert (found.value, found.line) == ("v1.2.3", 3)
    edited = set_companion(
        text, CompanionConfig(file=FILE, variable="a.b.c"), "v1.3", filename=FILE
    )
    assert edited == text.replace("v1.2.3", "v1.3")


def test_reads_a_flow_mapping_and_a_byte_order_mark() -> None:
    text = "\ufeffdeps: {deepgemm: {ref: v1.2.3, url: x}}\n"

    found = read(text)

    assert text[found.start : found.end] == "v1.2.3"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("deps:\n  deepgemm:\n    ref: |\n      v1\n", 3, comp.REASON_YAML_BLOCK),
        ("deps:\n  deepgemm:\n    ref: >-\n      v1\n", 3, comp.REASON_YAML_BLOCK),
        ("base: &ref v1\ndeps:\n  deepgemm:\n    ref: *ref\n", 4, comp.REASON_YAML_ALIAS),
        ("deps:\n  deepgemm:\n    ref: &ref v1\n", 3, comp.REASON_YAML_FORM),
        ("deps:\n  deepgemm:\n    ref: !!str v1\n", 3, comp.REASON_YAML_FORM),
        ('deps:\n  deepgemm:\n    ref: "v\\u0031"\n', 3, comp.REASON_YAML_FORM),
        ("deps:\n  deepgemm:\n    ref: 'it''s'\n", 3, comp.REASON_YAML_FORM),
        ("deps:\n  deepgemm:\n    ref: v1\n      rc1\n", 3, comp.REASON_YAML_FORM),
        (
            "deps:\n  deepgemm:\n    ref: 1.5\n",
            3,
            comp.REASON_YAML_NOT_STRING.format(kind="float"),
        ),
        (
            "deps:\n  deepgemm:\n    ref: yes\n",
            3,
            comp.REASON_YAML_NOT_STRING.format(kind="bool"),
        ),
        ("deps:\n  deepgemm:\n    ref:\n", 3, comp.REASON_YAML_NOT_STRING.format(kind="null")),
        (
            "deps:\n  deepgemm:\n    ref:\n      sha: x\n",
            3,
            comp.REASON_YAML_NOT_SCALAR.format(kind="mapping"),
        ),
        (
            "deps:\n  deepgemm:\n    ref: [a, b]\n",
            3,
            comp.REASON_YAML_NOT_SCALAR.format(kind="sequence"),
        ),
    ],
)
def test_values_that_are_not_plain_scalars_are_refused(text: str, line: int, reason: str) -> None:
    assert refusal(text) == not_literal(line, reason)


@pytest.mark.parametrize(
    ("text", "where", "names"),
    [
        ("images: [cuda]\nother: 1\n", comp.TOP_LEVEL, "images, other"),
        ("deps:\n  flashmla: {ref: x}\n", "deps", "flashmla"),
        ("deps:\n  deepgemm:\n    Ref: x\n    ? [ref]\n    : y\n", "deps.deepgemm", "Ref"),
        ("deps:\n  deepgemm: {}\n", "deps.deepgemm", comp.NOTHING),
    ],
)
def test_a_missing_key_lists_the_keys_where_the_path_stops(
    text: str, where: str, names: str
) -> None:
    assert refusal(text) == comp.MSG_KEY_NOT_FOUND.format(
        name=PATH, filename=FILE, where=where, names=names
    )


def test_the_key_not_found_message_reads_well() -> None:
    assert refusal("deps:\n  flashmla: {ref: x}\n  other: 1\n") == (
        "deps.deepgemm.ref is not in .buildkite/deps.yaml (deps has keys: flashmla, other)"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("", comp.TOP_LEVEL),
        ("- deps\n", comp.TOP_LEVEL),
        ("just text\n", comp.TOP_LEVEL),
        ("deps: [deepgemm]\n", "deps"),
        ("deps:\n  deepgemm: v1\n", "deps.deepgemm"),
    ],
)
def test_a_path_through_something_else_than_a_mapping_is_refused(text: str, where: str) -> None:
    assert refusal(text) == comp.MSG_NOT_A_MAPPING.format(name=PATH, filename=FILE, where=where)


@pytest.mark.parametrize(
    ("text", "name", "lines"),
    [
        ("deps: {}\ndeps: {}\n", "deps", "1, 2"),
        ("deps:\n  deepgemm:\n    ref: a\n    ref: b\n", PATH, "3, 4"),
    ],
)
def test_a_key_found_twice_is_refused(text: str, name: str, lines: str) -> None:
    assert refusal(text) == comp.MSG_SET_TWICE.format(name=name, filename=FILE, lines=lines)


@pytest.mark.parametrize("text", ["deps: [\n", "a: 1\n---\nb: 2\n", "a: 'x\n", "a: \x07\n"])
def test_a_file_that_is_not_yaml_is_refused(text: str) -> None:
    assert refusal(text).startswith(f"cannot parse {FILE} as YAML: ")


def test_a_plain_value_that_would_read_as_a_number_is_not_written() -> None:
    text = "deps:\n  deepgemm:\n    ref: v1\n"

    with pytest.raises(CompanionError) as caught:
        set_companion(text, COMPANION, "1.5", filename=FILE)

    problem = not_literal(3, comp.REASON_YAML_NOT_STRING.format(kind="float"))
    assert str(caught.value) == comp.MSG_NOT_READ_BACK.format(
        value="1.5", filename=FILE, problem=problem
    )
    quoted = "deps:\n  deepgemm:\n    ref: 'v1'\n"
    assert set_companion(quoted, COMPANION, "1.5", filename=FILE) == quoted.replace("v1", "1.5")
