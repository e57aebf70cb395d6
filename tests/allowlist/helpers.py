"""Shared helpers of the allowlist tests: the fixture script and the ruff judge."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.edit.allowlist import DEFAULT_VARIABLE, edit_allowlist, read_allowlist

DATA_DIR = Path(__file__).parent / "data"
SCRIPT = "check-torch-abi.py.txt"
# The tuple as the fixture script has it (vLLM's list when it was created).
FA2 = "vllm_flash_attn/_vllm_fa2_C.abi3.so"
FA3 = "vllm_flash_attn/_vllm_fa3_C.abi3.so"
DEEP_GEMM = "third_party/deep_gemm/_C*.so"
ORIGINAL_BLOCK = f"""ALLOWED_UNSTABLE_LIBRARIES: tuple[str, ...] = (
    "{FA2}",
    "{FA3}",
    "{DEEP_GEMM}",
)"""


def read_fixture(name: str = SCRIPT) -> str:
    # newline="" keeps the bytes as written, like the bot reading a blob.
    with (DATA_DIR / name).open(encoding="utf-8", newline="") as handle:
        return handle.read()


def script_with(block: str) -> str:
    """The fixture script with its allowlist assignment replaced by ``block``."""
    script = read_fixture()
    assert script.count(ORIGINAL_BLOCK) == 1
    return script.replace(ORIGINAL_BLOCK, block)


def ruff_binary() -> str:
    """The ruff of the environment running the tests (never one found elsewhere)."""
    found = shutil.which("ruff", path=str(Path(sys.executable).parent))
    assert found is not None, "ruff is not installed next to the test interpreter"
    return found


def assert_ruff_formatted(texts: Sequence[str], directory: Path, *, line_length: int = 88) -> None:
    """Fail unless ``ruff format`` would leave every text exactly as it is.

    All texts go to one ruff run (files in ``directory``), which keeps
    property tests with many examples fast. ``--isolated`` keeps this
    project's own ruff settings out of the judgement.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for index, text in enumerate(texts):
        # Bytes, so CRLF files reach ruff as CRLF.
        (directory / f"case_{index:04d}.py").write_bytes(text.encode("utf-8"))
    result = subprocess.run(
        [ruff_binary(), "format", "--isolated", f"--line-length={line_length}", "--diff", "."],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"ruff would reformat:\n{result.stdout}{result.stderr}"


def edit_checked(
    text: str,
    directory: Path,
    *,
    variable: str = DEFAULT_VARIABLE,
    remove: Sequence[str] = (),
    replace: Mapping[str, Sequence[str]] | None = None,
    line_length: int = 88,
) -> str:
    """``edit_allowlist`` plus the laws every edit keeps.

    The text outside the tuple is untouched and the result is ruff-formatted.
    """
    new = edit_allowlist(
        text, variable=variable, remove=remove, replace=replace or {}, line_length=line_length
    )
    old_span = read_allowlist(text, variable=variable)
    new_span = read_allowlist(new, variable=variable)
    assert new[: new_span.start] == text[: old_span.start]
    assert new[new_span.end :] == text[old_span.end :]
    assert_ruff_formatted([new], directory, line_length=line_length)
    return new
