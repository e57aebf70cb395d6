"""`followup-bot check-config PATH`: exit codes and what it prints where."""

from __future__ import annotations

import io
import re
from pathlib import Path

from bot.config import messages as msg
from bot.config.check import SUMMARY_MAIN_RED, SUMMARY_ROUTING, check_config, summarize
from bot.config.models import RepoConfig
from bot.config.parse import MAX_CONFIG_BYTES, parse_repo_config
from tests.config.test_repo_config_routing import SWEEP

from .samples import PIN_LINES
from .test_repo_config_parse import DESIGN_SKETCH


def run(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = check_config(path, out, err)
    return code, out.getvalue(), err.getvalue()


def test_valid_config_prints_a_one_line_summary(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    path.write_text(DESIGN_SKETCH)
    assert run(path) == (
        0,
        msg.MSG_CHECK_OK.format(
            summary="handle @bot; 1 pin (flash-attention); "
            "allowlist in .buildkite/check-torch-abi.py; buildkite vllm/ci; landing by squash"
        )
        + "\n",
        "",
    )


def test_summary_says_which_features_are_off(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    path.write_text("handle: helper\n")
    code, out, _ = run(path)
    assert code == 0
    assert out == "ok: handle @helper; 0 pins; allowlist off; buildkite off; landing off\n"


def test_documented_example_is_valid_and_summarized_as_documented() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    example = re.search(r"```yaml\n(.*?)```", doc, re.DOTALL)
    assert example is not None
    summary = msg.MSG_CHECK_OK.format(summary=summarize(parse_repo_config(example[1])))
    assert f"\n    {summary}\n" in doc


def test_summary_lists_every_pin_and_pipeline() -> None:
    pins = (
        "pins:\n"
        + "\n".join(PIN_LINES)
        + "\n"
        + "\n".join(PIN_LINES)
        .replace("name: fa", "name: fb")
        .replace("dependency: vllm-flash-attn", "dependency: other")
    )
    config = parse_repo_config(pins + "\nbuildkite: {organization: vllm, pipelines: [ci, ci-full]}")
    assert summarize(config).startswith("handle @bot; 2 pins (fa, fb); allowlist off; ")
    assert "; buildkite vllm/ci,ci-full; " in summarize(config)


def test_invalid_config_prints_every_problem_and_a_count(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    path.write_text("pinz: []\nhandle: 7\n")
    code, out, err = run(path)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"{path}:1:1: pinz: unknown key 'pinz' (did you mean 'pins'?)",
        f"{path}:2:9: handle: "
        + msg.MSG_WRONG_TYPE.format(expected="a string", kind="integer 7")
        + msg.MSG_QUOTE_HINT,
        msg.MSG_CHECK_FAILED.format(problems="2 problems", file=path),
    ]


def test_single_problem_count_is_singular(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    path.write_text("")
    code, _, err = run(path)
    assert code == 1
    assert err.splitlines() == [
        f"{path}:1:1: {msg.MSG_EMPTY_CONFIG}",
        msg.MSG_CHECK_FAILED.format(problems="1 problem", file=path),
    ]


def test_huge_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    path.write_bytes(b"#" * (4 * MAX_CONFIG_BYTES))
    code, out, err = run(path)
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == f"{path}: " + msg.MSG_TOO_LARGE.format(limit=MAX_CONFIG_BYTES)


def test_file_at_the_size_limit_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    body = b"handle: bot\n"
    path.write_bytes(body + b"#" * (MAX_CONFIG_BYTES - len(body)))
    assert run(path)[0] == 0


def test_non_utf8_file_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    path.write_bytes(b"handle: \xe9\n")
    code, _, err = run(path)
    assert code == 1
    assert err.splitlines()[0] == f"{path}:1:9: " + msg.MSG_NOT_UTF8.format(
        reason="invalid continuation byte"
    )


def test_missing_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "absent.yml"
    assert run(path) == (
        2,
        "",
        msg.MSG_CANNOT_READ.format(file=path, reason="No such file or directory") + "\n",
    )


def test_directory_exits_2(tmp_path: Path) -> None:
    code, out, err = run(tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: cannot read {tmp_path}: ")


def test_routing_and_migrations_are_summarized_with_the_permission_they_need() -> None:
    summary = summarize(parse_repo_config(SWEEP))
    assert summary.endswith(f"; {SUMMARY_ROUTING}; 1 migration (l4-eks)")


def test_main_red_is_summarized_with_the_permission_it_needs() -> None:
    config = "buildkite:\n  organization: vllm\n  pipelines: [ci]\nmain_red:\n  revert: false\n"
    summary = summarize(parse_repo_config(config))
    assert summary.endswith(f"; {SUMMARY_MAIN_RED}")
    assert "Issues: write" in SUMMARY_MAIN_RED


def test_a_checkout_with_problems_prints_each_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    path.write_text(DESIGN_SKETCH)
    out, err = io.StringIO(), io.StringIO()
    code = check_config(path, out, err, checkout=lambda config: ["pin a moved", "pin b gone"])
    assert code == 1
    assert err.getvalue().splitlines() == [
        "pin a moved",
        "pin b gone",
        msg.MSG_CHECKOUT_FAILED.format(problems="2 problems"),
    ]
    # No "ok" anywhere: it would read as a pass above the checkout's problems.
    assert out.getvalue() == ""


def test_a_checkout_as_configured_says_how_many_pins_it_found(tmp_path: Path) -> None:
    path = tmp_path / "followup-bot.yml"
    path.write_text(DESIGN_SKETCH)
    out, err = io.StringIO(), io.StringIO()
    checked: list[str] = []

    def as_configured(config: RepoConfig) -> list[str]:
        checked.extend(pin.name for pin in config.pins)
        return []

    code = check_config(path, out, err, checkout=as_configured)
    assert (code, err.getvalue(), checked) == (0, "", ["flash-attention"])
    assert out.getvalue().splitlines()[-1] == msg.MSG_CHECKOUT_OK.format(pins="1 pin")
