"""``plan bump --pin``: the pin and its ``also:`` files, from the checkout's own config."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.cli.main import MSG_FILE_NEEDS_DEPENDENCY, main
from bot.cli.plan_bump import (
    EXIT_FAILED,
    EXIT_OK,
    MSG_OUT_OF_SYNC,
    MSG_UNKNOWN_PIN,
    MSG_WROTE_FILE,
    plan_pin_bump,
)
from bot.config.parse import CONFIG_PATH
from sandbox.vllm_tree import DEEPGEMM_SCRIPT, DEEPGEMM_SHA, EXTERNAL, TREE_CONFIG, write_vllm_tree

NEW = "feedfacefeedfacefeedfacefeedfacefeedface"
DEEPGEMM_FILE = f"{EXTERNAL}/deepgemm.cmake"


def checkout(root: Path, **values: str) -> dict[str, str]:
    files = write_vllm_tree(root, **values)
    (root / CONFIG_PATH).parent.mkdir(parents=True, exist_ok=True)
    (root / CONFIG_PATH).write_text(TREE_CONFIG)
    return files


def run(root: Path, pin: str, to: str, *, write: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = plan_pin_bump(root, pin, to, write=write, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_diff_covers_the_pin_and_its_companion(tmp_path: Path) -> None:
    files = checkout(tmp_path)
    code, out, err = run(tmp_path, "deepgemm", NEW)
    assert (code, err) == (EXIT_OK, "")
    assert f"--- a/{DEEPGEMM_FILE}\n" in out
    assert f"--- a/{DEEPGEMM_SCRIPT}\n" in out
    assert f'+DEEPGEMM_GIT_REF="{NEW}"' in out
    assert (tmp_path / DEEPGEMM_SCRIPT).read_text() == files[DEEPGEMM_SCRIPT]  # a dry run


def test_write_changes_every_file_and_only_the_values(tmp_path: Path) -> None:
    files = checkout(tmp_path)
    code, _out, err = run(tmp_path, "deepgemm", NEW, write=True)
    assert code == EXIT_OK
    assert err.splitlines() == [
        MSG_WROTE_FILE.format(file=DEEPGEMM_FILE),
        MSG_WROTE_FILE.format(file=DEEPGEMM_SCRIPT),
    ]
    for file in (DEEPGEMM_FILE, DEEPGEMM_SCRIPT):
        assert (tmp_path / file).read_text() == files[file].replace(DEEPGEMM_SHA, NEW)


def test_a_companion_out_of_sync_is_refused_and_nothing_written(tmp_path: Path) -> None:
    stale = "0" * 40
    files = checkout(tmp_path, deepgemm_script=stale)
    code, out, err = run(tmp_path, "deepgemm", NEW, write=True)
    assert (code, out) == (EXIT_FAILED, "")
    line = files[DEEPGEMM_SCRIPT].splitlines().index(f'DEEPGEMM_GIT_REF="{stale}"') + 1
    assert err.strip() == MSG_OUT_OF_SYNC.format(
        file=DEEPGEMM_SCRIPT, line=line, value=stale, pinned=DEEPGEMM_SHA
    )
    assert (tmp_path / DEEPGEMM_FILE).read_text() == files[DEEPGEMM_FILE]


def test_a_tag_pin_takes_a_tag(tmp_path: Path) -> None:
    checkout(tmp_path)
    code, out, _err = run(tmp_path, "cutlass", "v4.5.0")
    assert code == EXIT_OK
    assert '-set(CUTLASS_REVISION "v4.4.2")' in out
    assert '+set(CUTLASS_REVISION "v4.5.0")' in out


def test_an_unknown_pin_names_the_pins_there_are(tmp_path: Path) -> None:
    checkout(tmp_path)
    code, _out, err = run(tmp_path, "flashmla", NEW)
    assert code == EXIT_FAILED
    assert err.strip() == MSG_UNKNOWN_PIN.format(
        config=CONFIG_PATH, pin="flashmla", pins="vllm-flash-attn, deepgemm, cutlass"
    )


def test_file_without_dependency_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout(tmp_path)
    code = main(["plan", "bump", "--repo", str(tmp_path), "--file", "x.cmake", "--to", NEW])
    assert code == 2
    assert MSG_FILE_NEEDS_DEPENDENCY in capsys.readouterr().err
