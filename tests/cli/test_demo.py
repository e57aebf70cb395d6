"""``followup-bot demo`` is the first Quick start command: it must keep working."""

from __future__ import annotations

import io
from pathlib import Path

from sandbox import demo
from sandbox.demo import run_demo
from sandbox.vllm_shapes import FA3_ENTRY


def test_demo_shows_the_bump_pr_and_its_pruning_commit(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run_demo(keep=tmp_path, out=out, err=err)
    text = out.getvalue()
    assert code == 0, err.getvalue()
    assert "=== Bump flash-attention from " in text
    assert "(2 commits)" in text
    assert "-          GIT_TAG " in text
    assert f'-    "{FA3_ENTRY}",' in text
    assert "reports allowlist entries that `vllm-project/flash-attention` provides as stale" in text
    assert "| infra | agent lost (exit status -1) | retried → [new job]" in text
    assert "passed on retry (flakiness confirmed)" in text
    assert "| new-failure |" in text
    assert "=== landed: the bump is merged and main pins the new commit" in text


def test_demo_keep_refuses_a_file_or_a_directory_in_use(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    used = tmp_path / "used"
    used.mkdir()
    (used / "old.sqlite3").write_bytes(b"")

    for keep, what in ((a_file, demo.KEEP_IS_A_FILE), (used, demo.KEEP_NOT_EMPTY)):
        out, err = io.StringIO(), io.StringIO()
        assert demo.run_demo(keep=keep, out=out, err=err) == demo.EXIT_USAGE
        assert err.getvalue() == demo.KEEP_NOT_NEW.format(path=keep, what=what) + "\n"
        assert out.getvalue() == ""
    assert a_file.read_text() == "mine\n"  # nothing touched
