"""``followup-bot routes --repo DIR [--pull-request N] [--env KEY=VALUE]... [--json]``.

Routes a checkout's ``.buildkite`` tree with the generator's default tables. Nothing is read
from this process's environment: ``--env`` sets the generator's inputs (``BUILDKITE_BRANCH``,
``TORCH_NIGHTLY``, ``BUILDKITE_COMMIT``...) and ``--pull-request`` sets
``BUILDKITE_PULL_REQUEST``. Text output is a table of the steps grouped by queue, then the
problems; ``--json`` prints one document whose steps start with the fields the generator's
routing is recorded with (``JSON_KEYS``). Exit 0; 1 when problems were found; 2 when the
input is what the generator refuses (printed on stderr as ``file:line:col: message``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from bot.routing.model import RoutedStep, Routes, route
from bot.routing.rules import PLUGIN_KUBERNETES
from bot.routing.tables import default_tables

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_UNREADABLE = 2

# Errors about the command's own arguments name the argument, as argparse's own do; only
# a problem inside a file has a ``file:line:col`` position.
MSG_NOT_A_DIRECTORY = "error: argument --repo: {repo} is not a directory"
MSG_BAD_ENV = "error: argument --env: expected KEY=VALUE, got {item!r}"
MSG_UNDECODABLE = "error: {file}: cannot read: not UTF-8 text"
MSG_UNREADABLE = "error: {file}: cannot read: {reason}"
MSG_QUEUE = "{queue} ({count} step{s})"
MSG_ROW = "  {key}  {plugin}  image={image}  gpus={gpus}  {file}:{line}"
MSG_NO_IMAGE = "-"
MSG_NO_PLUGIN = "no-plugin"
MSG_SUMMARY = "{steps} on {queues}, {problems}"
BUILDKITE_DIR = ".buildkite"
# The first keys of each step are those the generator's routing is recorded with (the
# real-data pack's format), so the two compare field by field: ``gpus`` is a pod's GPU
# limit (null for other steps: what a docker or host step asks is ``gpus_asked``), and the
# step the generator adds to PR builds has no file.
JSON_KEYS = (
    "key",
    "label",
    "group",
    "queue",
    "plugin",
    "image_suffix",
    "gpus",
    "depends_on",
    "file",
    "line",
)


def routes_command(
    repo: Path,
    *,
    pull_request: int | None,
    env_items: Sequence[str],
    as_json: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    env, errors = _env(env_items, pull_request)
    files = read_buildkite(repo, errors)
    if files is None or errors:
        for line in errors:
            print(line, file=err)
        return EXIT_UNREADABLE
    routes = route(files, env=env, tables=default_tables())
    for problem in routes.problems:
        if problem.fatal:
            print(str(problem), file=err)
    if as_json:
        json.dump(to_json(routes), out, indent=2)
        out.write("\n")
    else:
        out.write(render(routes))
    if routes.fatal:
        return EXIT_UNREADABLE
    return EXIT_PROBLEMS if routes.problems else EXIT_OK


def _env(items: Sequence[str], pull_request: int | None) -> tuple[dict[str, str], list[str]]:
    env: dict[str, str] = {}
    errors: list[str] = []
    for item in items:
        name, equals, value = item.partition("=")
        if not equals or not name:
            errors.append(MSG_BAD_ENV.format(item=item))
            continue
        env[name] = value
    if pull_request is not None:
        env["BUILDKITE_PULL_REQUEST"] = str(pull_request)
    return env, errors


def read_buildkite(repo: Path, errors: list[str]) -> dict[str, str] | None:
    """Every ``.yaml`` file under ``repo/.buildkite``, by path relative to ``repo``."""
    if not repo.is_dir():
        errors.append(MSG_NOT_A_DIRECTORY.format(repo=repo))
        return None
    files: dict[str, str] = {}
    for path in sorted((repo / BUILDKITE_DIR).rglob("*.yaml")):
        relative = path.relative_to(repo).as_posix()
        try:
            files[relative] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            errors.append(MSG_UNDECODABLE.format(file=relative))
        except OSError as exc:
            errors.append(MSG_UNREADABLE.format(file=relative, reason=exc.strerror or exc))
    return files


def counted(count: int, noun: str) -> str:
    """``1 step``, ``2 steps``, ``0 steps``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def to_json(routes: Routes) -> dict[str, object]:
    return {
        "steps": [_step_json(step) for step in routes.steps],
        "problems": [asdict(problem) for problem in routes.problems],
    }


def _step_json(step: RoutedStep) -> dict[str, object]:
    fields = asdict(step)
    fields["gpus_asked"] = fields.pop("gpus")
    fields["gpus"] = step.gpus if step.plugin == PLUGIN_KUBERNETES else None
    if step.pr_only:
        fields["file"] = fields["line"] = None
    first = {key: fields.pop(key) for key in JSON_KEYS}
    return {**first, **fields}


def render(routes: Routes) -> str:
    by_queue: dict[str, list[RoutedStep]] = {}
    for step in routes.steps:
        by_queue.setdefault(step.queue, []).append(step)
    lines: list[str] = []
    for queue in sorted(by_queue):
        steps = by_queue[queue]
        s = "" if len(steps) == 1 else "s"
        lines.append(MSG_QUEUE.format(queue=queue, count=len(steps), s=s))
        lines.extend(_row(step) for step in steps)
    lines.append("")
    lines.extend(str(problem) for problem in routes.problems if not problem.fatal)
    summary = MSG_SUMMARY.format(
        steps=counted(len(routes.steps), "step"),
        queues=counted(len(by_queue), "queue"),
        problems=counted(len(routes.problems), "problem"),
    )
    return "\n".join([*lines, summary]) + "\n"


def _row(step: RoutedStep) -> str:
    image = MSG_NO_IMAGE if step.image_suffix is None else f"<commit>{step.image_suffix}"
    return MSG_ROW.format(
        key=step.key,
        plugin=step.plugin or MSG_NO_PLUGIN,
        image=image,
        gpus=step.gpus,
        file=step.file,
        line=step.line,
    )
