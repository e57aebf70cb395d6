"""The floor plan held by a test: every import of bot/ and handlers/ runs down the layers
docs/architecture.md draws, no two packages import each other (directly or round a
loop), features reach into one another only for the pure modules named below, every
module has its line on that page, and the Makefile's branch gate names files that exist.

Read with ``ast`` from the source (imports inside functions count too): nothing is
imported, so a violation is reported however deep it hides.
"""

from __future__ import annotations

import ast
import glob
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
SOURCES = ("bot", "handlers")
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAKEFILE = ROOT / "Makefile"

# Bottom to top. A package imports from the layers below it; within one layer only where
# SIDEWAYS says so (None: any package of the layer, as long as no loop forms).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("bot.core",)),
    (
        "shared core",
        (
            "bot.store",
            "bot.github",
            "bot.buildkite",
            "bot.config",
            "bot.edit",
            "bot.abi",
            "bot.registry",
            "bot.routing",
            "bot.comments",
        ),
    ),
    ("delivery context", ("bot.context",)),
    ("shared with a repository's scope", ("bot.images", "bot.failures")),
    (
        "features",
        (
            "bot.pins",
            "bot.routing_check",
            "bot.retry",
            "bot.allowlist",
            "bot.main_red",
            "bot.landing",
        ),
    ),
    ("views and the command dispatcher", ("bot.dashboard", "bot.commands")),
    ("the status page", ("bot.status",)),
    ("handlers", ("handlers",)),
    ("the running service", ("bot.service",)),
    ("operators' tools", ("bot.doctor",)),
    ("the command line", ("bot.cli",)),
)
# Where one package of a layer may import another of the same layer. Features: only the
# other feature's pure modules (wording, rules, state documents), never its I/O.
SIDEWAYS: dict[str, frozenset[str] | None] = {
    "shared core": None,
    "shared with a repository's scope": None,
    "features": frozenset(
        {
            "bot.pins.text",  # the bump PR's wording, which the prune commit extends
            "bot.pins.state",  # the bump's state document, read on its PR
            "bot.routing_check.report",  # the routing diff's words in a red-on-main issue
            "bot.retry.rows",  # a failed job's row, shown by the landing's comment too
        }
    ),
    "views and the command dispatcher": frozenset(),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "bot" and len(parts) > 1 else parts[0]


def modules() -> dict[str, Path]:
    found = {}
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            found[module_name(path)] = path
    return found


MODULES = modules()


def imported(path: Path) -> Iterator[str]:
    """The project modules ``path`` imports (``from a import b`` is ``a.b`` where that is a
    module, else ``a``)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in MODULES
                else node.module
                for alias in node.names
            ]
        else:
            continue
        yield from (name for name in names if name.split(".")[0] in SOURCES)


def edges() -> Iterator[tuple[str, str]]:
    for module, path in MODULES.items():
        for target in imported(path):
            yield module, target


LAYER_OF = {package: index for index, (_, packages) in enumerate(LAYERS) for package in packages}


def test_every_package_has_a_layer() -> None:
    packages = {package_of(module) for module in MODULES} - {"bot"}
    assert packages == set(LAYER_OF), "add the package to LAYERS and docs/architecture.md"


def violations(pairs: Iterable[tuple[str, str]]) -> list[str]:
    found = []
    for module, target in pairs:
        source, dest = package_of(module), package_of(target)
        if source == dest or dest == "bot":
            continue
        if module.startswith("handlers.") and target.startswith("handlers."):
            found.append(f"{module} -> {target}: handlers never import one another")
            continue
        here, there = LAYER_OF[source], LAYER_OF[dest]
        if there < here:
            continue
        if there > here:
            found.append(f"{module} -> {target}: up from {LAYERS[here][0]} to {LAYERS[there][0]}")
            continue
        allowed = SIDEWAYS.get(LAYERS[here][0], frozenset())
        if allowed is not None and target not in allowed:
            found.append(f"{module} -> {target}: sideways within {LAYERS[here][0]}")
    return sorted(set(found))


def test_every_import_runs_down_the_layers() -> None:
    assert violations(edges()) == []


def package_cycles(pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    graph: dict[str, set[str]] = {}
    for module, target in pairs:
        source, dest = package_of(module), package_of(target)
        if source != dest and dest != "bot":
            graph.setdefault(source, set()).add(dest)
    cycles, done = [], set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            cycles.append([*path[path.index(node) :], node])
            return
        if node in done:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, [*path, node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])
    return cycles


def test_no_two_packages_import_each_other_round_any_loop() -> None:
    assert package_cycles(edges()) == []


def test_a_loop_between_packages_is_found() -> None:
    """The checks themselves, on an import they must report (the tree never shows one)."""
    looped = [*edges(), ("bot.core.errors", "bot.store.protocol")]
    assert any("bot.core" in cycle and "bot.store" in cycle for cycle in package_cycles(looped))
    assert any("up from foundation" in found for found in violations(looped))
    sideways = [("bot.landing.flow", "bot.retry.plan")]
    assert violations(sideways) == ["bot.landing.flow -> bot.retry.plan: sideways within features"]


def architecture_rows() -> dict[str, str]:
    """Each package's row of the page's table, by the package's path (``bot/pins/``)."""
    rows = {}
    for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines():
        found = re.match(r"\| `([a-z_/]+/)` \|", line)
        if found:
            rows[found.group(1)] = line
    return rows


def test_the_architecture_page_names_every_module_in_its_package_row() -> None:
    rows = architecture_rows()
    missing = []
    for module, path in MODULES.items():
        if path.name == "__init__.py":
            continue
        folder = path.parent.relative_to(ROOT).as_posix() + "/"
        row = rows.get(folder)
        if row is None or f"`{path.stem}`" not in row:
            missing.append(module)
    assert missing == [], "docs/architecture.md's package table lacks these modules"


@pytest.mark.parametrize("package", sorted(LAYER_OF))
def test_every_feature_package_says_what_it_holds(package: str) -> None:
    init = ROOT / package.replace(".", "/") / "__init__.py"
    assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), init


def test_the_branch_gate_names_files_that_exist() -> None:
    text = MAKEFILE.read_text(encoding="utf-8")
    found = re.search(r"^PURE := (.+)$", text, re.M)
    assert found
    empty = [entry for entry in found.group(1).split(",") if not glob.glob(str(ROOT / entry))]
    assert empty == []
