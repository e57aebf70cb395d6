"""Laws of the pin editor, checked on generated vLLM-like CMake files."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.edit.cmake_pin import PinError, pin_diff, read_pin, set_pin

DEPENDENCIES = ["vllm-flash-attn", "deepgemm", "flashmla", "qutlass", "triton_kernels", "cutlass"]

DECOY_COMMENTS = [
    "# bump GIT_TAG with the bot, not by hand",
    "# FetchContent_Declare({name} GIT_TAG 0000000000000000000000000000000000000000)",
    "#[[ FetchContent_Declare({name}\n  GIT_TAG 1111111111111111111111111111111111111111) ]]",
    "#[=[ set({variable} v0.0.0) ]] ]=]",
    "# set({variable} v0.0.1)",
]

FILLER = [
    'message(STATUS "Configuring ${PROJECT_NAME} (GIT_TAG handled below)")',
    'set(SOME_ARCHS "8.0;9.0a")',
    "if(NOT (A AND B))\n  return()\nendif()",
    'install(CODE "set(X \\"${Y}\\")" COMPONENT c)',
    "target_compile_options(_C PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--fast>)",
]

shas = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
tags = st.builds(
    "v{}.{}.{}".format,
    st.integers(0, 20),
    st.integers(0, 20),
    st.integers(0, 20),
)
pin_values = st.one_of(shas, tags)


@dataclass(frozen=True)
class Generated:
    text: str
    values: dict[str, str]  # dependency -> pinned value written in the text


def _variable(dependency: str) -> str:
    return dependency.upper().replace("-", "_") + "_TAG"


# The strategies every file and block draw from, built once: made inside the composites
# they were built (and validated) again for every example, a fifth of these laws' time.
INDENTS = st.sampled_from([2, 4, 8, 10])
COMMANDS = st.sampled_from(["FetchContent_Declare", "fetchcontent_declare"])
FORMS = st.sampled_from(["bare", "quoted", "bracket", "variable", "quoted-variable"])
TRAILINGS = st.sampled_from(["", "  ", "\t", " # the pin"])
REPOSITORIES = st.sampled_from(
    [
        "https://github.com/upstream/{name}.git",
        "https://github.com/upstream/{name}",
        "https://github.com/some-fork/{name}.git",
    ]
)
COMMENTS = st.lists(st.sampled_from(DECOY_COMMENTS), max_size=2)
SET_TAILS = st.sampled_from(["", " PARENT_SCOPE", ' CACHE STRING "pinned revision"'])
# A keyword after GIT_TAG is a trap for the parser; GIT_SHALLOW is OFF here because a
# shallow fetch cannot take the commit shas these laws write.
AFTER_TAG = st.sampled_from(["GIT_PROGRESS TRUE", "GIT_SHALLOW OFF"])
NAMES = st.lists(st.sampled_from(DEPENDENCIES), min_size=1, max_size=4, unique=True)
FILLERS = st.lists(st.sampled_from(FILLER), max_size=2)


@st.composite
def pin_block(draw: st.DrawFn, name: str, value: str) -> str:
    """One dependency: optional SOURCE_DIR branch, the pinned declaration, maybe a set()."""
    variable = _variable(name)
    indent = " " * draw(INDENTS)
    command = draw(COMMANDS)
    form = draw(FORMS)
    trailing = draw(TRAILINGS)
    repository = draw(REPOSITORIES).format(name=name)
    comments = draw(COMMENTS)

    setter = ""
    if form in ("variable", "quoted-variable"):
        quoted_value = draw(st.booleans())
        written = f'"{value}"' if quoted_value else value
        tail = draw(SET_TAILS)
        setter = f"set({variable} {written}{tail})\n"
        tag = "${" + variable + "}" if form == "variable" else '"${' + variable + '}"'
    else:
        tag = {"bare": value, "quoted": f'"{value}"', "bracket": f"[=[{value}]=]"}[form]

    arguments = [
        name,
        f"GIT_REPOSITORY {repository}",
        *(c.format(name=name, variable=variable) for c in comments),
        f"GIT_TAG {tag}{trailing}",
    ]
    if draw(st.booleans()):
        arguments.append('GIT_SUBMODULES "third-party/a" "third-party/b"')
    arguments.append(draw(AFTER_TAG))
    pinned = f"{command}(\n" + "".join(f"{indent}{a}\n" for a in arguments) + ")\n"

    if draw(st.booleans()):
        source_dir = f"{command}({name} SOURCE_DIR ${{{variable}_SRC_DIR}})\n"
        pinned = f"if({variable}_SRC_DIR)\n{source_dir}else()\n{pinned}endif()\n"
    return setter + pinned if draw(st.booleans()) else pinned + setter


@st.composite
def cmake_files(draw: st.DrawFn) -> Generated:
    names = draw(NAMES)
    values = {name: draw(pin_values) for name in names}
    parts = ["cmake_minimum_required(VERSION 3.26)\ninclude(FetchContent)\n"]
    for name in names:
        parts.extend(draw(FILLERS))
        parts.append(draw(pin_block(name, values[name])))
    text = "\n".join(parts)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return Generated(text, values)


@st.composite
def file_and_dependency(draw: st.DrawFn) -> tuple[Generated, str]:
    generated = draw(cmake_files())
    return generated, draw(st.sampled_from(sorted(generated.values)))


LAWS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@LAWS
@given(file_and_dependency())
def test_reads_the_value_that_was_written(case: tuple[Generated, str]) -> None:
    generated, dependency = case

    pin = read_pin(generated.text, dependency)

    assert pin.value == generated.values[dependency]
    assert generated.text[pin.start : pin.end] == pin.value


@LAWS
@given(file_and_dependency(), pin_values)
def test_set_pin_changes_exactly_the_value_token(
    case: tuple[Generated, str], new_value: str
) -> None:
    generated, dependency = case
    old = generated.text
    pin = read_pin(old, dependency)

    new = set_pin(old, dependency, new_value)

    assert new[: pin.start] == old[: pin.start]
    assert new[pin.start : pin.start + len(new_value)] == new_value
    assert new[pin.start + len(new_value) :] == old[pin.end :]


@LAWS
@given(file_and_dependency(), pin_values)
def test_read_after_set_gives_the_new_value(case: tuple[Generated, str], new_value: str) -> None:
    generated, dependency = case

    new = set_pin(generated.text, dependency, new_value)

    assert read_pin(new, dependency).value == new_value


@LAWS
@given(file_and_dependency(), pin_values)
def test_other_pins_are_unaffected(case: tuple[Generated, str], new_value: str) -> None:
    generated, dependency = case

    new = set_pin(generated.text, dependency, new_value)

    for other, value in generated.values.items():
        if other != dependency:
            assert read_pin(new, other).value == value


@LAWS
@given(file_and_dependency(), pin_values)
def test_set_pin_is_idempotent(case: tuple[Generated, str], new_value: str) -> None:
    generated, dependency = case

    once = set_pin(generated.text, dependency, new_value)

    assert set_pin(once, dependency, new_value) == once


@LAWS
@given(file_and_dependency(), pin_values)
def test_setting_back_the_old_value_restores_the_text(
    case: tuple[Generated, str], new_value: str
) -> None:
    generated, dependency = case
    old_value = generated.values[dependency]

    bumped = set_pin(generated.text, dependency, new_value)

    assert set_pin(bumped, dependency, old_value) == generated.text


@LAWS
@given(file_and_dependency(), pin_values)
def test_diff_shows_one_line_replaced(case: tuple[Generated, str], new_value: str) -> None:
    generated, dependency = case
    new = set_pin(generated.text, dependency, new_value)

    body = pin_diff(generated.text, new, "f.cmake").splitlines()[2:]

    removed = [line for line in body if line.startswith("-")]
    added = [line for line in body if line.startswith("+")]
    expected = int(new_value != generated.values[dependency])
    assert (len(removed), len(added)) == (expected, expected)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('()#[]="\\ \n\t$ {}abGIT_TAG;')), max_size=80))
def test_arbitrary_text_fails_only_with_pin_error(text: str) -> None:
    with contextlib.suppress(PinError):
        read_pin(text, "a")


@LAWS
@given(cmake_files(), st.data())
def test_truncated_files_fail_only_with_pin_error(
    generated: Generated, data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(generated.text)))
    with contextlib.suppress(PinError):
        read_pin(generated.text[:cut], next(iter(generated.values)))
