"""``followup-bot routes``: text, JSON, inputs and exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import routes as cli
from bot.cli.main import main
from bot.routing import checks, yaml_nodes
from sandbox.vllm_ci_tree import vllm_ci_files


def write(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["routes", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_groups_steps_by_queue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = write(tmp_path, vllm_ci_files(swept=True))
    code, out, err = run(capsys, "--repo", str(repo))
    assert (code, err) == (0, "")
    assert cli.MSG_QUEUE.format(queue="l4-k8s", count=39, s="s") in out
    assert cli.MSG_QUEUE.format(queue="dgx-spark", count=1, s="") in out
    row = cli.MSG_ROW.format(
        key="image-build",
        plugin=cli.MSG_NO_PLUGIN,
        image=cli.MSG_NO_IMAGE,
        gpus=0,
        file=".buildkite/image_build/image_build.yaml",
        line=3,
    )
    assert row in out
    assert out.endswith("104 steps on 14 queues, 0 problems\n")


def test_json_has_the_documented_keys_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path, vllm_ci_files())
    code, out, _ = run(capsys, "--repo", str(repo), "--json", "--pull-request", "7")
    document = json.loads(out)
    assert code == 0
    assert document["problems"] == []
    first = document["steps"][0]
    assert tuple(first)[: len(cli.JSON_KEYS)] == cli.JSON_KEYS
    assert document["steps"][-1]["key"] == "pre-commit"


def test_env_sets_the_inputs_and_problems_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_NIGHTLY", "1")  # never read: only --env counts
    repo = write(tmp_path, vllm_ci_files())
    assert run(capsys, "--repo", str(repo))[0] == 0
    code, out, err = run(capsys, "--repo", str(repo), "--env", "TORCH_NIGHTLY=1")
    assert (code, err) == (1, "")
    assert checks.MSG_NO_PRODUCER.format(suffix="-torch-nightly-cpu") in out


def test_unreadable_input_exits_2_with_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = vllm_ci_files()
    files[".buildkite/test_areas/bad.yaml"] = "steps:\n\t- label: t\n"
    repo = write(tmp_path, files)
    code, out, err = run(capsys, "--repo", str(repo), "--json")
    assert code == 2
    # A tab that indents is what YAML itself refuses (and so the generator).
    syntax = yaml_nodes.MSG_SYNTAX.format(problem="found character that cannot start any token")
    assert err == f".buildkite/test_areas/bad.yaml:2:1: {syntax}\n"
    assert json.loads(out)["problems"][0]["fatal"] is True


@pytest.mark.parametrize("args", [["--env", "NOEQUALS"], ["--env", "=x"]])
def test_a_bad_env_item_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, out, err = run(capsys, "--repo", str(write(tmp_path, vllm_ci_files())), *args)
    assert (code, out) == (2, "")
    assert err == cli.MSG_BAD_ENV.format(item=args[1]) + "\n"


def test_a_missing_repo_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope"
    assert run(capsys, "--repo", str(missing)) == (
        2,
        "",
        cli.MSG_NOT_A_DIRECTORY.format(repo=missing) + "\n",
    )


def test_a_file_that_is_not_utf8_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path, vllm_ci_files())
    (repo / ".buildkite/test_areas/latin.yaml").write_bytes(b"label: \xe9\n")
    code, _, err = run(capsys, "--repo", str(repo))
    assert (code, err) == (
        2,
        cli.MSG_UNDECODABLE.format(file=".buildkite/test_areas/latin.yaml") + "\n",
    )


def test_the_summary_counts_in_the_singular_for_one() -> None:
    assert [cli.counted(n, "step") for n in (0, 1, 2)] == ["0 steps", "1 step", "2 steps"]


def test_argument_errors_name_the_argument_not_a_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--repo", str(tmp_path / "nope"), "--env", "NOEQUALS")
    assert code == 2
    assert "argument --repo" in err
    assert ":0:0" not in err


def test_every_unreadable_file_is_named_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path, vllm_ci_files())
    (repo / ".buildkite/test_areas/latin.yaml").write_bytes(b"label: \xe9\n")
    (repo / ".buildkite/test_areas/loop.yaml").symlink_to("loop.yaml")
    code, out, err = run(capsys, "--repo", str(repo))
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        cli.MSG_UNDECODABLE.format(file=".buildkite/test_areas/latin.yaml"),
        cli.MSG_UNREADABLE.format(
            file=".buildkite/test_areas/loop.yaml", reason="Too many levels of symbolic links"
        ),
    ]
