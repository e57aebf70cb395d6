"""deploy/Dockerfile: a non-root, locked, runtime-only image with a health check."""

from __future__ import annotations

import tomllib

from tests.deploy.deploy_files import (
    DOCKERIGNORE,
    PYPROJECT,
    README,
    Instruction,
    dockerfile,
    env_assignments,
    parse_dockerfile,
)

ROOT_USERS = {"root", "0"}
# What the image may hold: the lock, the packaging metadata (pyproject names README.md as
# its readme, so the build needs it) and the two packages; never the sandbox or tests.
ALLOWED_SOURCES = {"requirements.lock", "pyproject.toml", "README.md", "bot", "handlers"}
LOCK_INSTALL = "-r requirements.lock"
MSG_NO_INSTRUCTION = "deploy/Dockerfile has no {keyword}"


def _only(instructions: list[Instruction], keyword: str) -> list[Instruction]:
    found = [each for each in instructions if each.keyword == keyword]
    assert found, MSG_NO_INSTRUCTION.format(keyword=keyword)
    return found


def _copy_sources(instructions: list[Instruction]) -> list[str]:
    sources: list[str] = []
    for each in instructions:
        if each.keyword in {"COPY", "ADD"}:
            words = [word for word in each.arguments.split() if not word.startswith("--")]
            sources.extend(words[:-1])
    return sources


def test_the_parser_joins_continuations_and_drops_comments() -> None:
    text = "FROM base\n# note\nRUN a \\\n  # inside\n  && b\nuser   app\n"
    assert parse_dockerfile(text) == [
        Instruction("FROM", "base", 1),
        Instruction("RUN", "a && b", 3),
        Instruction("USER", "app", 6),
    ]


def test_runs_as_a_numeric_non_root_user_set_before_cmd() -> None:
    instructions = dockerfile()
    cmd = _only(instructions, "CMD")[-1]
    user = _only(instructions, "USER")[-1]
    assert user.line < cmd.line
    uid = user.arguments.partition(":")[0]
    assert uid not in ROOT_USERS
    # Kubernetes' runAsNonRoot can only verify a numeric user.
    assert uid.isdigit()


def test_health_check_probes_healthz_on_the_configured_port() -> None:
    (check,) = _only(dockerfile(), "HEALTHCHECK")
    assert "/healthz" in check.arguments
    assert "FOLLOWUP_BOT_PORT" in check.arguments


def test_dependencies_come_from_the_lock_with_hashes_and_the_project_adds_none() -> None:
    installs = [each for each in _only(dockerfile(), "RUN") if "pip install" in each.arguments]
    locked = [each for each in installs if LOCK_INSTALL in each.arguments]
    assert locked
    assert all("--require-hashes" in each.arguments for each in locked)
    # Anything else pip installs (the project itself) must not resolve dependencies anew.
    assert all("--no-deps" in each.arguments for each in installs if each not in locked)
    assert any(each.arguments.endswith(" .") for each in installs)


def test_only_runtime_files_are_copied() -> None:
    instructions = dockerfile()
    assert not [each for each in instructions if "[dev]" in each.arguments]
    sources = _copy_sources(instructions)
    assert set(sources) <= ALLOWED_SOURCES
    assert not [source for source in sources if "sandbox" in source]


def test_copied_packages_are_the_packages_pyproject_builds() -> None:
    pyproject = tomllib.loads(PYPROJECT.read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*") for pattern in include}
    copied = set(_copy_sources(dockerfile()))
    assert packages <= copied
    assert pyproject["project"]["readme"] in copied


def test_the_dockerignore_lets_in_exactly_what_is_copied() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert patterns[0] == "*"
    let_in = {pattern[1:] for pattern in patterns if pattern.startswith("!")}
    assert let_in == set(_copy_sources(dockerfile()))


def test_cache_and_database_are_on_the_volume_owned_by_the_user() -> None:
    instructions = dockerfile()
    (volume,) = _only(instructions, "VOLUME")
    env: dict[str, str] = {}
    for each in _only(instructions, "ENV"):
        env.update(env_assignments(each))
    assert env["FOLLOWUP_BOT_CACHE_DIR"].startswith(volume.arguments + "/")
    assert env["FOLLOWUP_BOT_DATABASE"].startswith(volume.arguments + "/")
    # The service listens beyond the container's loopback, or no probe reaches it.
    assert env["FOLLOWUP_BOT_HOST"] == "0.0.0.0"
    uid = _only(instructions, "USER")[-1].arguments.partition(":")[0]
    chown = [each for each in instructions if each.keyword == "RUN" and "chown" in each.arguments]
    assert any(uid in each.arguments and volume.arguments in each.arguments for each in chown)


def test_nm_is_installed_for_the_wheel_audits() -> None:
    # torch-abi-audit shells out to nm; the slim base image has no binutils.
    assert any("binutils" in each.arguments for each in _only(dockerfile(), "RUN"))


# The Python the image check (tools/image_check.sh, `make image`) builds and runs: Debian
# bookworm's, which requirements.lock is compiled for; the default base is the same one.
CHECKED_BASE = "BASE=python:3.11-slim-bookworm"
IMAGE_CHECK_BEGIN = "<!-- image-check:begin -->"
IMAGE_CHECK_END = "<!-- image-check:end -->"


def test_the_base_is_a_build_argument_defaulting_to_the_checked_python() -> None:
    instructions = dockerfile()
    (base,) = [each for each in instructions if each.keyword == "ARG"]
    (start,) = _only(instructions, "FROM")
    assert base.arguments == CHECKED_BASE
    assert start.arguments == "${BASE}"
    assert base.line < start.line


def test_the_readme_shows_the_image_checks_build_and_run_commands() -> None:
    text = README.read_text(encoding="utf-8")
    block = text.split(IMAGE_CHECK_BEGIN, 1)[1].split(IMAGE_CHECK_END, 1)[0]
    commands = [
        each.arguments for each in parse_dockerfile(block.replace("```sh", "").replace("```", ""))
    ]
    # parse_dockerfile joins the `\` continuations; the first word is the command.
    build, run = (" ".join(each.split()) for each in commands)
    assert "bud" in build
    assert "-f deploy/Dockerfile" in build
    # The OCI format drops HEALTHCHECK; the docker one keeps it.
    assert "--format docker" in build
    assert '--build-arg BASE="$BASE"' in build
    assert " run " in f" {run} "
    assert run.endswith('"$IMAGE"')
