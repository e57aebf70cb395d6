"""The stand-in's vLLM files keep the shapes of vLLM's own: what an editor of the real
files must cope with is in them (the real files are not copied, only their shapes)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from sandbox.vllm_shapes import DEEPGEMM_CMAKE_TEMPLATE, DEEPGEMM_SCRIPT_TEMPLATE, PIN_TEMPLATE

SHA = "5a8c0f2e9b7d1c3a4e6f8091b2d3c4e5f6a7b8c9"
OTHER = "0123456789abcdef0123456789abcdef01234567"


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "install_deepgemm.sh"
    path.write_text(DEEPGEMM_SCRIPT_TEMPLATE.format(sha=SHA), encoding="utf-8")
    return path


def _bash(*args: str) -> str:
    done = subprocess.run(["bash", *args], capture_output=True, text=True, check=True)
    return done.stdout


def test_the_install_script_sets_its_ref_twice(tmp_path: Path) -> None:
    lines = DEEPGEMM_SCRIPT_TEMPLATE.format(sha=SHA).splitlines()
    assigned = [line for line in lines if "DEEPGEMM_GIT_REF=" in line]
    assert assigned == [f'DEEPGEMM_GIT_REF="{SHA}"', '            DEEPGEMM_GIT_REF="$2"']
    default = lines.index(assigned[0])
    assert "in sync with cmake/external_projects/deepgemm.cmake" in lines[default - 2]
    assert lines.index("        --ref)") < lines.index(assigned[1])
    assert 'git checkout "$DEEPGEMM_GIT_REF"' in lines


def test_the_install_script_is_bash_whose_option_overrides_the_default(tmp_path: Path) -> None:
    script = str(_script(tmp_path))
    _bash("-n", script)
    # The option loop runs before anything else: --help stops there, printing the ref.
    assert f"(default: {SHA})" in _bash(script, "--help")
    assert f"(default: {OTHER})" in _bash(script, "--ref", OTHER, "--help")


def _declarations(text: str) -> list[str]:
    return re.findall(r"^ *FetchContent_Declare\(\n(?:.*\n)*? *\)$", text, re.M)


def test_flash_attention_declares_a_local_source_then_the_pin() -> None:
    text = PIN_TEMPLATE.format(sha=SHA)
    local, pinned = _declarations(text)
    assert text.index("if(VLLM_FLASH_ATTN_SRC_DIR)") < text.index(local) < text.index("else()")
    assert text.index("else()") < text.index(pinned) < text.index("endif()\n\n# Its install")
    assert "          vllm-flash-attn SOURCE_DIR\n          ${VLLM_FLASH_ATTN_SRC_DIR}\n" in local
    assert f"\n          GIT_TAG {SHA}\n" in pinned
    assert "include(FetchContent)" not in text  # CMakeLists.txt includes it, not this file


def test_deepgemm_cmake_names_the_script_above_its_pin() -> None:
    text = DEEPGEMM_CMAKE_TEMPLATE.format(sha=SHA)
    local, pinned = _declarations(text)
    assert "SOURCE_DIR ${DEEPGEMM_SRC_DIR}" in local
    comment = "  # This ref should be kept in sync with tools/install_deepgemm.sh\n"
    assert comment + pinned == text[text.index(comment) : text.index(pinned) + len(pinned)]
    assert f"\n    GIT_TAG {SHA}\n" in pinned
