"""The files under deploy/, read for the tests beside this module (no Docker, no kubectl)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bot.core.settings import ENV_VARS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"
COMPOSE = DEPLOY / "compose.yaml"
KUBERNETES = DEPLOY / "kubernetes"
README = ROOT / "README.md"
PYPROJECT = ROOT / "pyproject.toml"

# Every variable the service reads; anything else spelled FOLLOWUP_BOT_* is a typo or a
# setting that no longer exists, and the service would silently ignore it.
SETTING_NAMES = frozenset(var.name for var in ENV_VARS)

NOT_A_MAPPING = "{path}: expected a YAML mapping"


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction, its continuation lines joined."""

    keyword: str
    arguments: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile: comments dropped, `\\` continuations joined.

    Enough for the files in deploy/: no parser directives, no heredocs, no escape change.
    """
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        # Docker drops comment lines even in the middle of a continued instruction.
        if not stripped or stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        keyword, _, arguments = " ".join(pending).partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
        pending = []
    return instructions


def dockerfile() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text())


def env_assignments(instruction: Instruction) -> dict[str, str]:
    """The KEY=value pairs of an ENV instruction."""
    pairs = (word.partition("=") for word in shlex.split(instruction.arguments))
    return {key: value for key, _, value in pairs}


def load_mapping(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text())
    if not isinstance(loaded, dict):
        raise TypeError(NOT_A_MAPPING.format(path=path))
    return loaded


def kubernetes_documents() -> dict[str, dict[str, Any]]:
    """Every manifest under deploy/kubernetes/, by file name (one resource per file)."""
    return {path.name: load_mapping(path) for path in sorted(KUBERNETES.glob("*.yaml"))}
