"""Laws of the pin editor, checked on generated vLLM-like CMake files.

The central one: an edit changes exactly the pin's literals. A generated file is a
template in which every literal of a pin is a placeholder, so the expected text after
any edit is the template rendered with that pin's new value; the value written
inside longer arguments and comments (decoys) is plain text and must survive.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from hypothesis import HealthCheck, assume, given, settings
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
    template: str  # the file, each literal of a pin written as placeholder(dependency)
    values: dict[str, str]  # dependency -> pinned value written in the text
    crlf: bool = False

    @property
    def text(self) -> str:
        return self.render({})

    def render(self, changed: dict[str, str]) -> str:
        """The file with the pins' values, ``changed`` taking precedence."""
        text = self.template
        for dependency, value in {**self.values, **changed}.items():
            text = text.replace(placeholder(dependency), value)
        return text.replace("\n", "\r\n") if self.crlf else text


def placeholder(dependency: str) -> str:
    return f"\x00{dependency}\x00"


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
# The value again, as a whole argument: literals of the pin ({literal} is the placeholder).
MIRRORS = [
    'set({variable}_REVISION "{literal}" CACHE STRING "keep in sync with GIT_TAG")',
    "set({variable}_DOCS {literal})",
    'message(STATUS "{literal}")',
    "if(WANTED STREQUAL [=[{literal}]=])\nendif()",
]
# The value inside longer text, or in a comment: never a literal ({value} is written).
DECOYS = [
    'set({variable}_NEXT "{value}-rc1")',
    'message(STATUS "building {value}")',
    "# pinned to {value}: keep the set() above in sync",
    "#[[ GIT_TAG {value} ]]",
]
EXTRAS = st.lists(st.sampled_from(MIRRORS + DECOYS), max_size=3)


@st.composite
def pin_block(draw: st.DrawFn, name: str, value: str, *, mirrors: bool = True) -> str:
    """One dependency: optional SOURCE_DIR branch, the pinned declaration, maybe a set(),
    mirrors and decoys of the value (no mirrors when another pin has the same value)."""
    literal = placeholder(name)
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
        written = f'"{literal}"' if quoted_value else literal
        tail = draw(SET_TAILS)
        setter = f"set({variable} {written}{tail})\n"
        tag = "${" + variable + "}" if form == "variable" else '"${' + variable + '}"'
    else:
        tag = {"bare": literal, "quoted": f'"{literal}"', "bracket": f"[=[{literal}]=]"}[form]

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
    block = setter + pinned if draw(st.booleans()) else pinned + setter
    extras = [
        extra.format(variable=variable, literal=literal, value=value) + "\n"
        for extra in draw(EXTRAS)
        if mirrors or extra in DECOYS
    ]
    cut = draw(st.integers(0, len(extras)))
    return "".join(extras[:cut]) + block + "".join(extras[cut:])


@st.composite
def cmake_files(draw: st.DrawFn, *, shared: bool = False) -> Generated:
    """A file of pins; ``shared``: every pin has the same value (and so no mirrors)."""
    names = draw(NAMES)
    one = draw(pin_values)
    values = {name: one if shared else draw(pin_values) for name in names}
    parts = ["cmake_minimum_required(VERSION 3.26)\ninclude(FetchContent)\n"]
    for name in names:
        alone = list(values.values()).count(values[name]) == 1
        parts.extend(draw(FILLERS))
        parts.append(draw(pin_block(name, values[name], mirrors=alone)))
    return Generated("\n".join(parts), values, draw(st.booleans()))


@st.composite
def file_and_dependency(draw: st.DrawFn, *, shared: bool = False) -> tuple[Generated, str]:
    generated = draw(cmake_files(shared=shared))
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
def test_an_edit_changes_exactly_the_pins_literals(
    case: tuple[Generated, str], new_value: str
) -> None:
    generated, dependency = case

    new = set_pin(generated.text, dependency, new_value)

    assert new == generated.render({dependency: new_value})


@LAWS
@given(file_and_dependency(shared=True), pin_values)
def test_pins_sharing_a_value_move_alone(case: tuple[Generated, str], new_value: str) -> None:
    generated, dependency = case

    new = set_pin(generated.text, dependency, new_value)

    assert new == generated.render({dependency: new_value})


@LAWS
@given(file_and_dependency())
def test_an_unchanged_value_makes_no_change(case: tuple[Generated, str]) -> None:
    generated, dependency = case

    assert set_pin(generated.text, dependency, generated.values[dependency]) == generated.text


@LAWS
@given(file_and_dependency())
def test_the_literals_are_where_the_value_was_written(case: tuple[Generated, str]) -> None:
    generated, dependency = case
    text = generated.text

    pin = read_pin(text, dependency)

    assert {text[span.start : span.end] for span in pin.literals} == {pin.value}
    marked = generated.template.replace("\n", "\r\n") if generated.crlf else generated.template
    assert len(pin.literals) == marked.count(placeholder(dependency))
    assert all(span.line == text.count("\n", 0, span.start) + 1 for span in pin.literals)


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
    # A value the file already holds elsewhere would be one of this pin's literals too.
    assume(new_value not in generated.values.values())

    bumped = set_pin(generated.text, dependency, new_value)

    assert set_pin(bumped, dependency, old_value) == generated.text


@LAWS
@given(file_and_dependency(), pin_values)
def test_diff_shows_the_literals_lines_replaced(
    case: tuple[Generated, str], new_value: str
) -> None:
    generated, dependency = case
    new = set_pin(generated.text, dependency, new_value)

    body = pin_diff(generated.text, new, "f.cmake").splitlines()[2:]

    removed = [line for line in body if line.startswith("-")]
    added = [line for line in body if line.startswith("+")]
    lines = {span.line for span in read_pin(generated.text, dependency).literals}
    expected = len(lines) if new_value != generated.values[dependency] else 0
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
