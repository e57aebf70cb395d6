"""``followup-bot plan migrate``: a migration sweep of ``.github/followup-bot.yml``, tried
on a local checkout: the job-file diff, which steps move where, the exclusions with
their reasons, and the proof that nothing else changes; ``--write`` applies it (only
when the proof holds)."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from bot.cli.plan_files import PlanFileError, read_repo_file, write_repo_file
from bot.config.errors import ConfigError
from bot.config.parse import CONFIG_PATH, parse_repo_config
from bot.config.routing import RoutingConfig
from bot.edit.yaml_steps import StepEditError, steps_diff
from bot.routing.model import RoutedStep
from bot.routing.read import job_dirs_of, job_paths
from bot.routing.tables import default_tables
from bot.routing_check.sweep import SweepPlan, plan_sweep

EXIT_OK = 0
EXIT_NOT_PROVEN = 1
EXIT_FAILED = 2
MAIN_BUILD = {"BUILDKITE_BRANCH": "main"}  # a sweep lands on main: route as main's build

MSG_CONFIG = "error: {problems}"
MSG_UNKNOWN_MIGRATION = "error: {config} has no migration named {name!r} (migrations: {names})"
MSG_EDIT = "error: {reason}"
MSG_MOVE = "moves: {key} ({file}:{line}): {old} -> {new}"
MSG_EXCLUDED = "stays: {key} ({file}:{line}): {reason}"
MSG_PROVEN = "{count} step{s} move; routing the result changes nothing else"
MSG_NOT_PROVEN = "error: the edit would also change the routing of: {keys}; nothing written"
MSG_NOTHING = "nothing to move: every selected step already has the values"
MSG_WROTE = "{file}: written"
MSG_JOB_DIR_EMPTY = "error: {config}: job_dirs names {directory}, which holds no .yaml job file"
MSG_NOT_READ = "error: nothing planned: {count} problem{s} above"
MSG_YML_LEFT_OUT = (
    "note: {file} is left out: vLLM's pipeline generator reads only .yaml files in a job dir"
)


def plan_migrate(
    repo: Path, name: str, *, config_path: str, write: bool, out: TextIO, err: TextIO
) -> int:
    try:
        config = parse_repo_config(read_repo_file(repo, config_path), filename=config_path)
    except PlanFileError as exc:
        return _fail(err, str(exc))
    except ConfigError as exc:
        return _fail(err, MSG_CONFIG.format(problems="\n".join(map(str, exc.problems))))
    migration = next((m for m in config.migrations if m.name == name), None)
    if migration is None:
        names = ", ".join(m.name for m in config.migrations) or "none"
        return _fail(err, MSG_UNKNOWN_MIGRATION.format(config=config_path, name=name, names=names))
    files, unread, left_out = _routing_files(repo, config.routing or RoutingConfig())
    for path in left_out:
        print(MSG_YML_LEFT_OUT.format(file=path), file=err)
    if unread:
        count = len(unread)
        return _fail(err, "\n".join([*unread, MSG_NOT_READ.format(count=count, s=_s(count))]))
    try:
        plan = plan_sweep(files, migration, env=MAIN_BUILD, tables=default_tables())
    except StepEditError as exc:
        return _fail(err, MSG_EDIT.format(reason=exc))
    _show(plan, out)
    if not plan.proven:
        keys = ", ".join(plan.others_changed)
        return _fail(err, MSG_NOT_PROVEN.format(keys=keys), EXIT_NOT_PROVEN)
    if write:
        for path, (_old, new) in plan.edits.items():
            write_repo_file(repo, path, new)
            print(MSG_WROTE.format(file=path), file=err)
    return EXIT_OK


def _routing_files(
    repo: Path, routing: RoutingConfig
) -> tuple[dict[str, str], list[str], list[str]]:
    """What the generator reads in the checkout: the config and its job dirs' files; one
    line for each file that could not be read and each job dir with no job file (the
    sweep would be planned without them: never in silence); and the ``.yml`` files in the
    job dirs, which the generator skips (a job file misnamed would otherwise vanish unsaid)."""
    try:
        config = read_repo_file(repo, routing.ci_config)
    except PlanFileError as exc:
        return {}, [str(exc)], []
    every = sorted(
        path.relative_to(repo).as_posix() for path in repo.rglob("*.yaml") if path.is_file()
    )
    job_dirs = job_dirs_of(config)
    files = {routing.ci_config: config}
    unread: list[str] = []
    for path in job_paths(every, job_dirs):
        try:
            files[path] = read_repo_file(repo, path)
        except PlanFileError as exc:
            unread.append(str(exc))
    for directory in job_dirs:
        if not job_paths(every, (directory,)):
            unread.append(MSG_JOB_DIR_EMPTY.format(config=routing.ci_config, directory=directory))
    yml = sorted(path.relative_to(repo).as_posix() for path in repo.rglob("*.yml"))
    prefixes = tuple(directory.removeprefix("./").rstrip("/") + "/" for directory in job_dirs)
    return files, unread, [path for path in yml if path.startswith(prefixes)]


def _show(plan: SweepPlan, out: TextIO) -> None:
    for path, (old, new) in plan.edits.items():
        out.write(steps_diff(old, new, path))
    lines = [
        MSG_MOVE.format(
            key=move.before.key,
            file=move.before.file,
            line=move.before.line,
            old=_where(move.before),
            new="(gone)" if move.after is None else _where(move.after),
        )
        for move in plan.moves
    ]
    lines += [
        MSG_EXCLUDED.format(key=step.key, file=step.file, line=step.line, reason=reason)
        for step, reason in plan.excluded
    ]
    count = len(plan.moves)
    proven = MSG_PROVEN.format(count=count, s=_s(count))
    lines.append(proven if count else MSG_NOTHING)
    out.write("".join(f"{line}\n" for line in lines))


def _where(step: RoutedStep) -> str:
    return f"{step.queue} ({step.plugin or 'no plugin'})"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _fail(err: TextIO, message: str, code: int = EXIT_FAILED) -> int:
    print(message, file=err)
    return code


__all__ = ["CONFIG_PATH", "plan_migrate"]
