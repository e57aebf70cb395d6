"""The ``followup-bot`` command line, through ``bot.cli.main.main`` and as a real process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import check_checkout
from bot.cli.main import DEMO_NEEDS_SANDBOX, main
from sandbox.vllm_shapes import CONFIG, PIN_FILE, PIN_TEMPLATE

OLD = "1" * 40
NEW = "2" * 40


def test_serve_refuses_to_start_without_its_secrets() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bot.cli.main", "serve"],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "refusing to start" in result.stderr
    assert "FOLLOWUP_BOT_WEBHOOK_SECRET: required but not set" in result.stderr
    assert "FOLLOWUP_BOT_APP_ID: required but not set" in result.stderr


def test_plan_bump_prints_the_one_line_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / PIN_FILE
    target.parent.mkdir(parents=True)
    target.write_text(PIN_TEMPLATE.format(sha=OLD))
    args = ["plan", "bump", "--repo", str(tmp_path), "--file", PIN_FILE]
    code = main([*args, "--dependency", "vllm-flash-attn", "--to", NEW])
    out = capsys.readouterr().out
    assert code == 0
    assert f"-          GIT_TAG {OLD}" in out
    assert f"+          GIT_TAG {NEW}" in out
    assert target.read_text() == PIN_TEMPLATE.format(sha=OLD)  # a dry run

    assert main([*args, "--dependency", "vllm-flash-attn", "--to", NEW, "--write"]) == 0
    assert target.read_text() == PIN_TEMPLATE.format(sha=NEW)


def test_plan_bump_unknown_dependency_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / PIN_FILE
    target.parent.mkdir(parents=True)
    target.write_text(PIN_TEMPLATE.format(sha=OLD))
    args = ["plan", "bump", "--repo", str(tmp_path), "--file", PIN_FILE]
    code = main([*args, "--dependency", "cutlass", "--to", NEW])
    assert code == 2
    assert "dependency 'cutlass' not found" in capsys.readouterr().err


def test_check_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yml"
    good.write_text(CONFIG)
    bad = tmp_path / "bad.yml"
    bad.write_text(CONFIG.replace("branch: main", "branch: [main]"))
    assert main(["check-config", str(good)]) == 0
    assert capsys.readouterr().out.startswith("ok: ")
    assert main(["check-config", str(bad)]) == 1
    assert f"{bad}:5:13: pins[0].branch:" in capsys.readouterr().err


def test_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["plan", "bump", "--repo", "."])
    assert exc.value.code == 2


def test_version_is_the_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.metadata

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    expected = importlib.metadata.version("followup-bot")
    assert capsys.readouterr().out == f"followup-bot {expected}\n"


def test_demo_without_the_stand_ins_says_how_to_get_them() -> None:
    # sys.modules["sandbox"] = None makes the import fail, as in the runtime image.
    code = (
        "import sys; sys.modules['sandbox'] = None; "
        "from bot.cli.main import main; sys.exit(main(['demo']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert result.stderr.strip() == DEMO_NEEDS_SANDBOX


def test_check_config_summary_names_every_section_off_or_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "followup-bot.yml"
    config.write_text("pins: []\n")
    assert main(["check-config", str(config)]) == 0
    out = capsys.readouterr().out
    for part in (
        "allowlist off",
        "buildkite off",
        "landing off",
        check_checkout.SUMMARY_ROUTING_OFF,
        check_checkout.SUMMARY_MAIN_RED_OFF,
        check_checkout.SUMMARY_NO_MIGRATIONS,
        "images checked at",
        "retry-flaky up to 8 failed jobs",
    ):
        assert part in out
