"""The ``followup-bot`` command: serve, doctor, app-manifest, demo, check-config, discover,
routes, plan, report, audit, deliveries."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bot.cli.serve import create_default_database_folder, serve

EXIT_USAGE = 2
DISTRIBUTION = "followup-bot"
DEMO_NEEDS_SANDBOX = (
    "followup-bot demo needs the stand-ins, which the service does not install: from a "
    "checkout, run `make demo` (or `pip install -e ./sandbox`, then the demo again)"
)
DEFAULT_VARIABLE = "ALLOWED_UNSTABLE_LIBRARIES"
DATABASE_VARIABLE = "FOLLOWUP_BOT_DATABASE"
SERVE_HELP = "run the webhook service (configured by the FOLLOWUP_BOT_* variables below)"
DEFAULT_LIST_LIMIT = 50
MSG_FILE_NEEDS_DEPENDENCY = "followup-bot plan bump: --file needs --dependency"
AUDIT_TARGET_HELP = (
    "a .whl file, or the unpacked vllm/ package directory itself (the one holding "
    "_C.abi3.so, e.g. site-packages/vllm): the allowlist's patterns are paths relative to it"
)


def _database_option(parser: argparse.ArgumentParser) -> None:
    from bot.core.settings import DEFAULT_DATABASE_SHOWN, default_database

    parser.add_argument(
        "--database",
        metavar="PATH_OR_URL",
        default=os.environ.get(DATABASE_VARIABLE) or default_database(os.environ),
        help=(
            "the bot's SQLite database file or postgresql:// URL"
            f" (default: ${DATABASE_VARIABLE}, else {DEFAULT_DATABASE_SHOWN},"
            " ~/.local/state without XDG_STATE_HOME)"
        ),
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def version() -> str:
    """The installed distribution's version (the one pyproject.toml names)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="followup-bot",
        description="Follow-up work for vLLM's CI migrations, as a GitHub App.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    from bot.core.settings import env_help

    commands.add_parser(
        "serve",
        help=SERVE_HELP,
        description=SERVE_HELP,
        epilog=env_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )

    commands.add_parser(
        "doctor", help="check the service's environment against GitHub and Buildkite"
    )
    migrate = commands.add_parser(
        "migrate", help="bring the database's schema up to date (serve does it too)"
    )
    _database_option(migrate)
    _manifest_command(commands)

    demo = commands.add_parser(
        "demo", help="run the whole flow offline on loopback against the sandbox"
    )
    demo.add_argument("--keep", type=Path, help="keep the demo's repositories in this directory")

    _config_commands(commands)

    _plan_commands(commands)

    report = commands.add_parser("report", help="reports from the bot's records")
    reports = report.add_subparsers(dest="report", required=True, metavar="REPORT")
    flaky = reports.add_parser("flaky", help="the flakiest steps and rules retry-flaky has seen")
    _database_option(flaky)

    deliveries = commands.add_parser("deliveries", help="look into the inbox; replay a delivery")
    actions = deliveries.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="the newest deliveries (read-only)")
    listing.add_argument("--failed", action="store_true", help="only deliveries that failed")
    listing.add_argument(
        "--limit",
        type=_positive,
        default=DEFAULT_LIST_LIMIT,
        metavar="N",
        help=f"at most N deliveries (default: {DEFAULT_LIST_LIMIT})",
    )
    listing.add_argument("--json", action="store_true", help="one JSON document on stdout")
    _database_option(listing)
    show = actions.add_parser("show", help="one delivery in full (read-only)")
    show.add_argument("delivery_id", metavar="ID")
    show.add_argument("--json", action="store_true", help="one JSON document on stdout")
    show.add_argument("--payload", action="store_true", help="print the stored payload too")
    _database_option(show)
    replay = actions.add_parser(
        "replay", help="queue a failed delivery again, for the running service to run"
    )
    replay.add_argument("delivery_id", metavar="ID")
    replay.add_argument(
        "--force", action="store_true", help="replay a delivery that is done (every handler)"
    )
    _database_option(replay)

    audit = commands.add_parser(
        "audit", help="audit a wheel or package directory against the torch ABI allowlist"
    )
    audit.add_argument("target", type=Path, metavar="TARGET", help=AUDIT_TARGET_HELP)
    audit.add_argument("--allowlist-file", type=Path, required=True, help="check-torch-abi.py")
    audit.add_argument("--variable", default=DEFAULT_VARIABLE, help="the allowlist variable")
    audit.add_argument("--json", action="store_true", help="one JSON document on stdout")
    return parser


def _config_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """check-config, discover and routes: writing the config, checking it against a checkout."""
    check = commands.add_parser("check-config", help="validate a .github/followup-bot.yml file")
    check.add_argument("path", type=Path)
    check.add_argument(
        "--repo", type=Path, help="also check the configured pins in this checkout's files"
    )
    discover = commands.add_parser(
        "discover", help="list a checkout's FetchContent pins and propose their config"
    )
    discover.add_argument("--repo", type=Path, required=True, help="the checkout's root directory")
    discover.add_argument("--json", action="store_true", help="one JSON document on stdout")
    routes = commands.add_parser(
        "routes", help="route a checkout's CI steps as vLLM's pipeline generator would"
    )
    routes.add_argument("--repo", type=Path, required=True, help="the checkout's root directory")
    routes.add_argument(
        "--pull-request", type=_positive, metavar="NUMBER", help="route a PR build of this PR"
    )
    routes.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a generator input (BUILDKITE_BRANCH, TORCH_NIGHTLY...); this process's own "
        "environment is never read",
    )
    routes.add_argument("--json", action="store_true", help="one JSON document on stdout")


def _manifest_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from bot.core.app_requirements import (
        DEFAULT_APP_NAME,
        DEFAULT_HOMEPAGE,
        DEFAULT_WEBHOOK_URL,
    )

    manifest = commands.add_parser(
        "app-manifest", help="print the GitHub App manifest for the bot's permissions and events"
    )
    manifest.add_argument("--name", default=DEFAULT_APP_NAME, help="the App's name")
    manifest.add_argument(
        "--webhook-url", default=DEFAULT_WEBHOOK_URL, help="https://<your host>/webhooks/github"
    )
    manifest.add_argument("--url", default=DEFAULT_HOMEPAGE, help="the App's homepage")
    manifest.add_argument(
        "--redirect-url", help="where GitHub sends the App's code (default: --url)"
    )


def _demo(keep: Path | None) -> int:
    # The stand-ins are a distribution of their own: the runtime image has no use for them.
    try:
        from sandbox.demo import run_demo
    except ImportError:
        print(DEMO_NEEDS_SANDBOX, file=sys.stderr)
        return EXIT_USAGE
    return run_demo(keep=keep, out=sys.stdout, err=sys.stderr)


def _plan_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``plan`` dry runs: bump, migrate, prune."""
    plan = commands.add_parser("plan", help="local dry runs of the bot's file edits")
    plans = plan.add_subparsers(dest="plan", required=True, metavar="PLAN")
    bump = plans.add_parser("bump", help="edit one FetchContent pin in a local checkout")
    bump.add_argument("--repo", type=Path, required=True, help="the checkout's root directory")
    which = bump.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--pin", help="a pin of the checkout's .github/followup-bot.yml: its file and also: files"
    )
    which.add_argument("--file", help="the CMake file, relative to --repo (with --dependency)")
    bump.add_argument("--dependency", help="the FetchContent_Declare name (with --file)")
    bump.add_argument("--to", required=True, help="the new value (a commit sha or a tag)")
    bump.add_argument(
        "--write", action="store_true", help="apply the edit (default: print the diff)"
    )
    migrate = plans.add_parser("migrate", help="a migration sweep of the config, on a checkout")
    migrate.add_argument("--repo", type=Path, required=True, help="the checkout's root directory")
    migrate.add_argument("--migration", required=True, help="the migration's name in the config")
    migrate.add_argument(
        "--config",
        default=".github/followup-bot.yml",
        help="the config, relative to --repo (default: .github/followup-bot.yml)",
    )
    migrate.add_argument(
        "--write", action="store_true", help="apply the edits (default: print the diff)"
    )
    prune = plans.add_parser("prune", help="remove or narrow torch ABI allowlist entries locally")
    prune.add_argument("--repo", type=Path, required=True, help="the checkout's root directory")
    prune.add_argument("--file", required=True, help="the allowlist file, relative to --repo")
    prune.add_argument("--variable", default=DEFAULT_VARIABLE, help="the allowlist variable")
    prune.add_argument(
        "--remove", action="append", default=[], metavar="PATTERN", help="an entry to delete"
    )
    prune.add_argument(
        "--replace",
        action="append",
        default=[],
        metavar="PATTERN=NEW[,NEW...]",
        help="an entry to replace with narrower ones",
    )
    prune.add_argument(
        "--write", action="store_true", help="apply the edit (default: print the diff)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return serve()
    if args.command in ("doctor", "app-manifest"):
        return _set_up(args)
    if args.command == "demo":
        return _demo(args.keep)
    if args.command == "check-config":
        from bot.cli.check_checkout import check_config_command

        return check_config_command(args.path, args.repo, sys.stdout, sys.stderr)
    if args.command == "discover":
        from bot.cli.discover import discover_command

        return discover_command(args.repo, as_json=args.json, out=sys.stdout, err=sys.stderr)
    if args.command == "routes":
        return _routes(args)
    if args.command in ("migrate", "deliveries", "report"):
        return _database_command(args)
    if args.command == "audit":
        from bot.cli.audit import audit_command

        return audit_command(
            args.target,
            args.allowlist_file,
            variable=args.variable,
            as_json=args.json,
            out=sys.stdout,
            err=sys.stderr,
        )
    return _plan(args)


def _database_command(args: argparse.Namespace) -> int:
    """The commands on the bot's database: its schema, its inbox, its records."""
    if args.command == "migrate":
        from bot.cli.migrate import migrate_command

        create_default_database_folder(args.database)
        return migrate_command(args.database, sys.stdout, sys.stderr)
    if args.command == "deliveries":
        from bot.cli.deliveries import deliveries_command

        return deliveries_command(args, sys.stdout, sys.stderr)
    from bot.cli.report_flaky import report_command

    return report_command(args.database, sys.stdout, sys.stderr)


def _set_up(args: argparse.Namespace) -> int:
    """The commands for setting the App up: its manifest, and the doctor."""
    if args.command == "doctor":
        from bot.cli.doctor import doctor_command

        return doctor_command(os.environ, sys.stdout)
    from bot.cli.app_manifest import app_manifest_command

    return app_manifest_command(
        name=args.name,
        homepage=args.url,
        webhook_url=args.webhook_url,
        redirect_url=args.redirect_url,
        out=sys.stdout,
    )


def _routes(args: argparse.Namespace) -> int:
    from bot.cli.routes import routes_command

    return routes_command(
        args.repo,
        pull_request=args.pull_request,
        env_items=args.env,
        as_json=args.json,
        out=sys.stdout,
        err=sys.stderr,
    )


def _plan(args: argparse.Namespace) -> int:
    if args.plan == "migrate":
        from bot.cli.plan_migrate import plan_migrate

        return plan_migrate(
            args.repo,
            args.migration,
            config_path=args.config,
            write=args.write,
            out=sys.stdout,
            err=sys.stderr,
        )
    if args.plan == "prune":
        from bot.cli.plan_prune import plan_prune

        return plan_prune(
            args.repo,
            args.file,
            variable=args.variable,
            remove=args.remove,
            replace=args.replace,
            write=args.write,
            out=sys.stdout,
            err=sys.stderr,
        )
    from bot.cli.plan_bump import plan_bump, plan_pin_bump

    if args.pin is not None:
        return plan_pin_bump(
            args.repo, args.pin, args.to, write=args.write, out=sys.stdout, err=sys.stderr
        )
    if args.dependency is None:
        print(MSG_FILE_NEEDS_DEPENDENCY, file=sys.stderr)
        return EXIT_USAGE
    return plan_bump(
        args.repo,
        args.file,
        args.dependency,
        args.to,
        write=args.write,
        out=sys.stdout,
        err=sys.stderr,
    )


if __name__ == "__main__":
    raise SystemExit(main())
