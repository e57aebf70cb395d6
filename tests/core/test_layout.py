"""The layout's rules, checked: the runtime needs no stand-in, handlers stay short and
apart, and a long module says why it is long."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAND_IN_LIBRARIES = ("sandbox", "jsonschema", "openapi_schema_validator", "referencing", "graphql")
MAX_HANDLER_LINES = 25
MAX_MODULE_LINES = 400
LONG_MODULE_REASON = "Longer than 400 lines because"


def runtime_modules() -> list[str]:
    names = []
    for folder in ("bot", "handlers"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_runtime_imports_without_the_stand_ins_or_their_libraries() -> None:
    # A None in sys.modules makes any import of that name fail, as in the runtime image.
    code = "\n".join(
        [
            "import importlib, sys",
            *(f"sys.modules[{name!r}] = None" for name in STAND_IN_LIBRARIES),
            f"for name in {runtime_modules()!r}:",
            "    importlib.import_module(name)",
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def handler_modules() -> list[Path]:
    return [p for p in sorted((ROOT / "handlers").glob("*.py")) if p.name != "__init__.py"]


def test_no_handler_imports_another() -> None:
    found = []
    for path in handler_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("handlers"):
                found.append(f"{path.name}: from {node.module}")
            if isinstance(node, ast.Import):
                found += [
                    f"{path.name}: import {a.name}" for a in node.names if "handlers" in a.name
                ]
    assert found == []


def test_handlers_are_short() -> None:
    long = []
    for path in handler_modules():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > MAX_HANDLER_LINES:
                    long.append(f"{path.name}:{node.name} ({size} lines)")
    assert long == []


def test_a_long_module_says_why() -> None:
    unexplained = []
    for folder in ("bot", "handlers", "sandbox"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text()
            lines = text.count("\n")
            doc = ast.get_docstring(ast.parse(text)) or ""
            if lines > MAX_MODULE_LINES and LONG_MODULE_REASON not in " ".join(doc.split()):
                unexplained.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert unexplained == []
