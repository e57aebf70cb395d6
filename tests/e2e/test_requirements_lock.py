"""requirements.lock, which the image installs with ``--require-hashes``: one exact, hashed
pin of every runtime dependency pyproject.toml names, in the range it allows, and nothing
the runtime does not need. ``make lock`` regenerates it."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"


def project() -> dict[str, object]:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert isinstance(table, dict)
    return table


def requirements(lines: object) -> list[Requirement]:
    assert isinstance(lines, list)
    return [Requirement(line) for line in lines]


@dataclass(frozen=True)
class Pin:
    requirement: Requirement
    hashes: tuple[str, ...]


def locked() -> dict[NormalizedName, Pin]:
    """The lock's requirements by normalised name (continuation lines joined, comments out)."""
    pins: dict[NormalizedName, Pin] = {}
    for line in re.sub(r"\\\n", " ", LOCK.read_text()).splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        assert not line.startswith("-"), f"a pip option in the lock: {line}"
        spec, *hashes = re.split(r"\s+--hash=", line)
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{name} is pinned twice"
        pins[name] = Pin(requirement, tuple(hashes))
    return pins


def test_the_lock_pins_every_runtime_dependency_within_its_range() -> None:
    pins = locked()
    for wanted in requirements(project()["dependencies"]):
        pin = pins.get(canonicalize_name(wanted.name))
        assert pin is not None, f"{wanted.name} is not in requirements.lock: run make lock"
        [exact] = pin.requirement.specifier
        assert wanted.specifier.contains(exact.version, prereleases=True), (
            f"requirements.lock pins {wanted.name} {exact.version}, outside {wanted.specifier}:"
            " run make lock"
        )


def test_every_locked_requirement_is_exact_and_hashed() -> None:
    pins = locked()
    assert pins
    for name, pin in pins.items():
        [exact] = pin.requirement.specifier
        assert exact.operator == "==", f"{name} is not pinned to one version"
        assert pin.hashes, f"{name} has no hash"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in pin.hashes), name


# Development tools no runtime dependency pulls in: none may be in the image.
DEVELOPMENT_TOOLS = ("pytest", "hypothesis", "mypy", "ruff", "pre-commit")


def test_the_lock_leaves_out_the_development_tools() -> None:
    extras = project()["optional-dependencies"]
    assert isinstance(extras, dict)
    development = {canonicalize_name(r.name) for r in requirements(extras["dev"])}
    tools = {canonicalize_name(tool) for tool in DEVELOPMENT_TOOLS}
    assert tools <= development
    assert not tools & locked().keys()
