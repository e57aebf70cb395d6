"""``plan migrate``: the l4-eks sweep on a vLLM-shaped checkout."""

from __future__ import annotations

import io
from pathlib import Path

from bot.cli.plan_files import MSG_NOT_UTF8
from bot.cli.plan_migrate import (
    EXIT_FAILED,
    EXIT_OK,
    MSG_EXCLUDED,
    MSG_JOB_DIR_EMPTY,
    MSG_NOT_READ,
    MSG_NOTHING,
    MSG_PROVEN,
    MSG_UNKNOWN_MIGRATION,
    MSG_WROTE,
    MSG_YML_LEFT_OUT,
    plan_migrate,
)
from bot.config.parse import CONFIG_PATH
from sandbox.vllm_ci_tree import (
    AUDIT_FILE,
    AUDIT_KEY,
    CI_CONFIG_PATH,
    SWEEP_LABELS,
    vllm_ci_files,
)
from tests.routing.test_sweep import MIGRATIONS

ROUTING = "routing:\n  required_keys: [torch-stable-abi-audit]\n"


def checkout(root: Path, files: dict[str, str]) -> None:
    for path, text in {**files, CONFIG_PATH: ROUTING + MIGRATIONS}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def run(root: Path, name: str = "l4-eks", *, write: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = plan_migrate(root, name, config_path=CONFIG_PATH, write=write, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_dry_run_shows_the_diff_the_moves_and_the_proof(tmp_path: Path) -> None:
    checkout(tmp_path, vllm_ci_files())
    code, out, err = run(tmp_path)
    assert (code, err) == (EXIT_OK, "")
    assert out.count("+    device: l4\n") == 8
    assert out.count("+    num_devices: 1\n") == 7
    assert out.count("\n-    ") == 0  # nothing removed
    audit_line = vllm_ci_files()[AUDIT_FILE].splitlines().index("  - label: Torch Stable ABI Audit")
    reason = "audits the CUDA wheel on gpu_1_queue"
    stays = MSG_EXCLUDED.format(key=AUDIT_KEY, file=AUDIT_FILE, line=audit_line + 1, reason=reason)
    assert stays in out.splitlines()
    assert out.rstrip().endswith(MSG_PROVEN.format(count=8, s="s"))
    assert (tmp_path / AUDIT_FILE).read_text() == vllm_ci_files()[AUDIT_FILE]  # nothing written


def test_write_gives_the_swept_tree_and_a_second_run_has_nothing_to_do(tmp_path: Path) -> None:
    checkout(tmp_path, vllm_ci_files())
    code, _out, err = run(tmp_path, write=True)
    assert code == EXIT_OK
    assert sorted(err.splitlines()) == sorted(MSG_WROTE.format(file=f) for f in SWEEP_LABELS)
    code, out, _err = run(tmp_path)
    assert (code, out.strip().splitlines()[-1]) == (EXIT_OK, MSG_NOTHING)


def test_an_unknown_migration_names_the_ones_there_are(tmp_path: Path) -> None:
    checkout(tmp_path, vllm_ci_files())
    code, _out, err = run(tmp_path, "l4")
    assert code == EXIT_FAILED
    expected = MSG_UNKNOWN_MIGRATION.format(config=CONFIG_PATH, name="l4", names="l4-eks")
    assert err.strip() == expected


def test_every_file_it_could_not_read_is_named_and_nothing_is_planned(tmp_path: Path) -> None:
    checkout(tmp_path, vllm_ci_files())
    for name in ("latin1.yaml", "latin2.yaml"):
        (tmp_path / ".buildkite/test_areas" / name).write_bytes(b"label: \xe9\n")
    code, out, err = run(tmp_path)
    assert (code, out) == (EXIT_FAILED, "")
    assert err.splitlines() == [
        MSG_NOT_UTF8.format(file=".buildkite/test_areas/latin1.yaml"),
        MSG_NOT_UTF8.format(file=".buildkite/test_areas/latin2.yaml"),
        MSG_NOT_READ.format(count=2, s="s"),
    ]


def test_a_job_dir_with_no_job_file_is_refused_not_skipped(tmp_path: Path) -> None:
    files = vllm_ci_files()
    files[CI_CONFIG_PATH] = files[CI_CONFIG_PATH].replace(
        "job_dirs:\n", 'job_dirs:\n  - ".buildkite/nowhere"\n', 1
    )
    checkout(tmp_path, files)
    code, out, err = run(tmp_path)
    assert (code, out) == (EXIT_FAILED, "")
    empty = MSG_JOB_DIR_EMPTY.format(config=CI_CONFIG_PATH, directory=".buildkite/nowhere")
    assert err.splitlines() == [empty, MSG_NOT_READ.format(count=1, s="")]


def test_a_yml_file_in_a_job_dir_is_named_not_ignored_in_silence(tmp_path: Path) -> None:
    files = vllm_ci_files()
    misnamed = AUDIT_FILE.removesuffix(".yaml") + ".yml"
    files[misnamed] = files.pop(AUDIT_FILE)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/outside.yml").write_text("steps: []\n")  # in no job dir: not named
    checkout(tmp_path, files)
    code, out, err = run(tmp_path)
    assert code == EXIT_OK
    assert err.splitlines() == [MSG_YML_LEFT_OUT.format(file=misnamed)]
    assert out.rstrip().endswith(MSG_PROVEN.format(count=8, s="s"))
