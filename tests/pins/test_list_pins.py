"""list_pins: every FetchContent_Declare of a file, and why set_pin would refuse it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.edit import cmake_pin as pins
from bot.edit.cmake_pin import DeclaredPin, PinError, list_pins, read_pin, set_pin

FILE = "cmake/x.cmake"
SHA = "a0c4f6e2b8d1357924680ace13579bdf02468ace"
OTHER_SHA = "feedfacefeedfacefeedfacefeedfacefeedface"


def declare(*arguments: str, name: str = "foo") -> str:
    body = "".join(f"  {argument}\n" for argument in arguments)
    return f"FetchContent_Declare(\n  {name}\n{body})\n"


def listed(
    dependency: str = "foo",
    line: int = 1,
    *,
    repository: str | None = None,
    raw: str | None = None,
    value: str | None = None,
    variable: str | None = None,
    variable_line: int | None = None,
    shallow: bool = False,
    reason: str | None = None,
) -> DeclaredPin:
    return DeclaredPin(
        dependency=dependency,
        line=line,
        repository=repository,
        raw=raw,
        value=value,
        variable=variable,
        variable_line=variable_line,
        shallow=shallow,
        editable=reason is None,
        reason=reason,
    )


def no_git_tag(dependency: str, line: int, filename: str = FILE) -> str:
    detail = pins.MSG_NO_GIT_TAG.format(dependency=dependency, s="", lines=line)
    return f"{filename}: {detail}"


# --- the fixtures ---------------------------------------------------------------


def test_lists_the_cutlass_declarations_of_cmakelists(cmake_fixture: Callable[[str], str]) -> None:
    found = list_pins(cmake_fixture("CMakeLists.txt"), filename="CMakeLists.txt")

    flash_sha = "96266b1111111111111111111111111111111111"
    assert found == [
        listed("json", 77, reason=no_git_tag("json", 77, "CMakeLists.txt")),
        listed("cutlass", 98, reason=no_git_tag("cutlass", 98, "CMakeLists.txt")),
        listed(
            "cutlass",
            100,
            repository="https://github.com/nvidia/cutlass.git",
            raw="${CUTLASS_REVISION}",
            value="v4.4.2",
            variable="CUTLASS_REVISION",
            variable_line=87,
            shallow=True,
        ),
        listed("vllm-flash-attn", 208, reason=no_git_tag("vllm-flash-attn", 208, "CMakeLists.txt")),
        listed(
            "vllm-flash-attn",
            210,
            repository="https://github.com/vllm-project/flash-attention.git",
            raw=flash_sha,
            value=flash_sha,
        ),
    ]


def test_lists_triton_kernels_through_its_variable(cmake_fixture: Callable[[str], str]) -> None:
    found = list_pins(cmake_fixture("triton_kernels.cmake"), filename="triton_kernels.cmake")

    assert found == [
        listed(
            "triton_kernels",
            10,
            repository="https://github.com/triton-lang/triton.git",
            raw="${DEFAULT_TRITON_KERNELS_TAG}",
            value="v3.6.0",
            variable="DEFAULT_TRITON_KERNELS_TAG",
            variable_line=3,
            shallow=True,
        )
    ]


@pytest.mark.parametrize(
    ("filename", "dependency"),
    [
        ("deepgemm.cmake", "deepgemm"),
        ("flashmla.cmake", "flashmla"),
        ("qutlass.cmake", "qutlass"),
        ("vllm_flash_attn.cmake", "vllm-flash-attn"),
    ],
)
def test_the_editable_declaration_is_the_one_read_pin_reads(
    cmake_fixture: Callable[[str], str], filename: str, dependency: str
) -> None:
    text = cmake_fixture(filename)

    source_dir, pinned = list_pins(text, filename=filename)

    pin = read_pin(text, dependency, filename=filename)
    assert (source_dir.editable, source_dir.raw, source_dir.value) == (False, None, None)
    assert source_dir.reason == no_git_tag(dependency, source_dir.line, filename)
    assert (pinned.editable, pinned.reason) == (True, None)
    assert (pinned.value, pinned.raw, pinned.repository) == (pin.value, pin.value, pin.repository)
    assert source_dir.line < pinned.line


# --- forms and refusals -----------------------------------------------------------


def test_an_empty_file_declares_nothing() -> None:
    assert list_pins("", filename=FILE) == []
    assert list_pins("# FetchContent_Declare(foo GIT_TAG v1)\n", filename=FILE) == []


def test_declarations_in_comments_and_without_a_name_are_not_listed() -> None:
    text = (
        "#[[ FetchContent_Declare(bar GIT_TAG v0) ]]\n"
        "FetchContent_Declare()\n"
        "FetchContent_Declare((x) GIT_TAG v1)\n" + declare("GIT_TAG v1.0.0")
    )

    assert [pin.dependency for pin in list_pins(text, filename=FILE)] == ["foo"]


def test_a_quoted_variable_reference_is_listed_with_its_variable() -> None:
    text = 'set(FOO_TAG "v1.2.3")\n' + declare('GIT_TAG "${FOO_TAG}"')

    assert list_pins(text, filename=FILE) == [
        listed(line=2, raw="${FOO_TAG}", value="v1.2.3", variable="FOO_TAG", variable_line=1)
    ]


def test_a_declaration_without_git_tag_says_so() -> None:
    text = declare("URL https://example.invalid/foo.tar.gz")

    assert list_pins(text, filename=FILE) == [listed(reason=no_git_tag("foo", 1))]


def test_declarations_all_without_git_tag_give_set_pins_reason() -> None:
    text = declare("SOURCE_DIR /src/foo") + declare("URL https://example.invalid/foo.tar.gz")

    detail = pins.MSG_NO_GIT_TAG.format(dependency="foo", s="s", lines="1, 5")
    assert list_pins(text, filename=FILE) == [
        listed(line=1, reason=f"{FILE}: {detail}"),
        listed(line=5, reason=f"{FILE}: {detail}"),
    ]


def test_git_tag_twice_in_a_declaration_is_its_reason() -> None:
    text = declare("GIT_TAG aaa", "GIT_TAG bbb")

    detail = pins.MSG_REPEATED_GIT_TAG.format(dependency="foo")
    assert list_pins(text, filename=FILE) == [listed(reason=f"{FILE}:1: {detail}")]


def test_a_repeated_git_tag_elsewhere_blocks_the_other_declaration() -> None:
    text = declare("GIT_TAG aaa", "GIT_TAG bbb") + declare("GIT_TAG ccc")

    broken, other = list_pins(text, filename=FILE)

    detail = pins.MSG_REPEATED_GIT_TAG.format(dependency="foo")
    assert broken.reason == other.reason == f"{FILE}:1: {detail}"
    assert (other.raw, other.value, other.editable) == ("ccc", "ccc", False)
    with pytest.raises(PinError, match="GIT_TAG appears more than once"):
        set_pin(text, "foo", "ddd", filename=FILE)


def test_two_pinned_declarations_are_both_listed_as_ambiguous() -> None:
    text = "if(A)\n" + declare("GIT_TAG aaa") + "else()\n" + declare("GIT_TAG bbb") + "endif()\n"

    first, second = list_pins(text, filename=FILE)

    detail = pins.MSG_AMBIGUOUS.format(dependency="foo", lines="2, 7")
    assert first == listed(line=2, raw="aaa", value="aaa", reason=f"{FILE}: {detail}")
    assert second == listed(line=7, raw="bbb", value="bbb", reason=f"{FILE}: {detail}")


def test_ambiguity_comes_before_the_declarations_own_problem() -> None:
    text = declare("GIT_TAG") + declare("GIT_TAG bbb")

    first, _ = list_pins(text, filename=FILE)

    detail = pins.MSG_AMBIGUOUS.format(dependency="foo", lines="1, 5")
    assert first == listed(reason=f"{FILE}: {detail}")


def test_a_missing_value_is_the_reason() -> None:
    text = declare("GIT_TAG", "GIT_SHALLOW ON")

    detail = pins.MSG_MISSING_VALUE.format(dependency="foo")
    assert list_pins(text, filename=FILE) == [listed(shallow=True, reason=f"{FILE}:3: {detail}")]


def test_a_variable_set_twice_is_listed_without_a_value() -> None:
    text = "set(FOO_TAG v1)\nset(FOO_TAG v2)\n" + declare("GIT_TAG ${FOO_TAG}")

    detail = pins.MSG_VARIABLE_SET_TWICE.format(variable="FOO_TAG", lines="1, 2")
    assert list_pins(text, filename=FILE) == [
        listed(line=3, raw="${FOO_TAG}", variable="FOO_TAG", reason=f"{FILE}: {detail}")
    ]


def test_an_unset_variable_is_the_reason() -> None:
    text = declare("GIT_TAG ${FOO_TAG}")

    detail = pins.MSG_VARIABLE_UNSET.format(variable="FOO_TAG")
    assert list_pins(text, filename=FILE) == [
        listed(raw="${FOO_TAG}", variable="FOO_TAG", reason=f"{FILE}:3: {detail}")
    ]


def test_a_mixed_value_is_listed_raw() -> None:
    text = declare("GIT_TAG v${FOO_VERSION}")

    detail = pins.MSG_UNEDITABLE.format(
        keyword="GIT_TAG", value="v${FOO_VERSION}", reason=pins.REASON_MIXED
    )
    assert list_pins(text, filename=FILE) == [
        listed(raw="v${FOO_VERSION}", reason=f"{FILE}:3: {detail}")
    ]


def test_a_shallow_sha_is_not_editable_and_says_why() -> None:
    text = declare(f"GIT_TAG {SHA}", "GIT_SHALLOW TRUE")

    (found,) = list_pins(text, filename=FILE)

    detail = pins.MSG_SHALLOW_SHA.format(dependency="foo", value=SHA, line=4)
    assert found == listed(raw=SHA, value=SHA, shallow=True, reason=f"{FILE}: {detail}")
    # set_pin refuses any sha there, in the same words.
    with pytest.raises(PinError) as caught:
        set_pin(text, "foo", OTHER_SHA, filename=FILE)
    assert str(caught.value) == found.reason.replace(SHA, OTHER_SHA)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("flag", "shallow"),
    [("TRUE", True), ("on", True), ("1", True), ("Yes", True), ("FALSE", False), ("0", False)],
)
def test_git_shallow_is_read_as_cmake_truth(flag: str, shallow: bool) -> None:
    text = declare("GIT_TAG v1.0.0", f"GIT_SHALLOW {flag}")

    (found,) = list_pins(text, filename=FILE)

    assert (found.shallow, found.editable) == (shallow, True)


def test_a_file_that_is_not_cmake_is_refused() -> None:
    with pytest.raises(PinError, match=r"^cmake/x\.cmake:2: cannot parse CMake"):
        list_pins("project(x)\nFetchContent_Declare(foo GIT_TAG v1\n", filename=FILE)


# --- the law: listed as editable exactly when set_pin edits that declaration -------

FORMS = [
    "GIT_TAG v1.0.0",
    f"GIT_TAG {SHA}",
    f'GIT_TAG "{SHA}"',
    "GIT_TAG ${FOO_TAG}",
    "GIT_TAG",
    "GIT_TAG aaa\n  GIT_TAG bbb",
    "URL https://example.invalid/foo.tar.gz",
    "GIT_TAG v${FOO_TAG}",
]


@given(
    st.lists(st.sampled_from(FORMS), min_size=1, max_size=3),
    st.booleans(),
    st.integers(0, 2),
)
def test_editable_means_set_pin_edits_that_declaration(
    forms: list[str], shallow: bool, setters: int
) -> None:
    extra = ["GIT_SHALLOW TRUE"] if shallow else []
    text = "".join(f"set(FOO_TAG v{n}.0.0)\n" for n in range(setters))
    text += "".join(declare(form, *extra) for form in forms)

    found = list_pins(text, filename=FILE)

    assert [pin.dependency for pin in found] == ["foo"] * len(forms)
    editable = [pin for pin in found if pin.editable]
    assert len(editable) <= 1
    refusal: str | None
    try:
        pin = read_pin(text, "foo", filename=FILE)
        set_pin(text, "foo", "v9.9.9", filename=FILE)
    except PinError as exc:
        refusal = str(exc)
    else:
        refusal = None
    if refusal is not None:
        assert editable == []
        assert refusal in {pin.reason for pin in found}
    elif editable:
        assert (editable[0].value, editable[0].variable) == (pin.value, pin.variable)
    else:  # a shallow sha: editable to a tag, but not as it stands
        line = pin.shallow_line
        detail = pins.MSG_SHALLOW_SHA.format(dependency="foo", value=pin.value, line=line)
        assert {pin.reason for pin in found if pin.raw is not None} == {f"{FILE}: {detail}"}
