"""The doctor's GitHub checks: the App's key, its permissions and events, each repository's
installation and config, and each pin's upstream and file.

Every call is made once, through the App's JWT or the repository's installation token,
with the service's own readers (the config parser, the CMake pin reader).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gidgethub
import gidgethub.aiohttp

from bot.config.errors import ConfigError
from bot.config.models import PinConfig, RepoConfig
from bot.config.parse import CONFIG_PATH, parse_repo_config_bytes
from bot.doctor import fixes
from bot.doctor.registry_check import RegistryAccess, check_registry
from bot.doctor.requirements import missing_events, missing_permissions
from bot.doctor.result import CheckResult, failed, ok, skipped
from bot.edit.cmake_pin import PinError, read_pin
from bot.github import changes
from bot.github.auth import make_app_jwt
from bot.github.changes import Repo
from bot.github.client import GitHubApp
from bot.pins.facts import same_repository

CHECK_KEY = "GitHub App key"
CHECK_PERMISSIONS = "App permissions"
CHECK_EVENTS = "App events"
CHECK_INSTALLATION = "installation {repo}"
CHECK_CONFIG = "config {repo}"
CHECK_UPSTREAM = "pin {repo} {pin}: upstream"
CHECK_PIN_FILE = "pin {repo} {pin}: file"

DETAIL_APP = "App {slug} (id {id}) accepts the key"
DETAIL_KEY_REFUSED = "GitHub refused the App's JWT ({status}: {message})"
DETAIL_PERMISSIONS = "{count} permissions cover every feature"
DETAIL_MISSING_PERMISSIONS = "missing: {missing}"
DETAIL_EVENTS = "{count} events subscribed"
DETAIL_MISSING_EVENTS = "not subscribed: {missing}"
DETAIL_INSTALLED = "installation {id}"
DETAIL_NOT_INSTALLED = "the App is not installed on {repo}"
DETAIL_INSTALLATION_PERMISSIONS = "installation {id} lacks {missing}"
DETAIL_CONFIG = "{pins} pin(s) configured"
DETAIL_NO_CONFIG = "no " + CONFIG_PATH + " on the default branch"
DETAIL_UPSTREAM = "{upstream} through installation {id}"
DETAIL_PIN = "{file}:{line}: {dependency} at {value}"
DETAIL_OTHER_REPOSITORY = "{file}:{line}: GIT_REPOSITORY {repository} is not {upstream}"
DETAIL_NO_FILE = "{file} is not on the default branch"
DETAIL_NEEDS_KEY = "needs the App's key to work"
DETAIL_NEEDS_INSTALLATION = "needs the installation"
DETAIL_NEEDS_CONFIG = "needs a valid config"
DETAIL_REQUEST_FAILED = "{what}: {error}"

NOT_FOUND = 404


@dataclass
class GitHubSide:
    """The App's JWT client and its installations' clients, on the doctor's session."""

    app_id: str
    private_key: str
    jwt_api: gidgethub.aiohttp.GitHubAPI
    app: GitHubApp
    registry: RegistryAccess | None = None  # asked where a config names images.registry_url

    def jwt(self) -> str:
        return make_app_jwt(self.app_id, self.private_key, time.time())


def flat(text: str) -> str:
    """One table cell: a multi-line message (a config's problems) on one line."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def request_error(what: str, exc: BaseException) -> str:
    if isinstance(exc, gidgethub.BadRequest | gidgethub.GitHubBroken):
        message = exc.args[0] if exc.args else type(exc).__name__
        return DETAIL_REQUEST_FAILED.format(what=what, error=f"{exc.status_code}: {message}")
    if isinstance(exc, TimeoutError):
        return DETAIL_REQUEST_FAILED.format(what=what, error="timed out")
    return DETAIL_REQUEST_FAILED.format(what=what, error=str(exc) or type(exc).__name__)


async def check_app(side: GitHubSide) -> tuple[list[CheckResult], dict[str, Any] | None]:
    """The key check, then (from the same answer) the permissions and events checks."""
    try:
        app = await side.jwt_api.getitem("/app", jwt=side.jwt())
    except gidgethub.BadRequest as exc:
        message = exc.args[0] if exc.args else ""
        detail = DETAIL_KEY_REFUSED.format(status=exc.status_code, message=message)
        key = failed(CHECK_KEY, detail, fixes.FIX_KEY)
        return [key, *_needs_key(CHECK_PERMISSIONS, CHECK_EVENTS)], None
    except Exception as exc:  # unreachable, 5xx, a key that is no RSA key: all named
        key = failed(CHECK_KEY, request_error("GET /app", exc), _key_or_network(exc))
        return [key, *_needs_key(CHECK_PERMISSIONS, CHECK_EVENTS)], None
    results = [ok(CHECK_KEY, DETAIL_APP.format(slug=app.get("slug"), id=app.get("id")))]
    permissions = app.get("permissions") or {}
    missing = missing_permissions(permissions)
    if missing:
        detail = DETAIL_MISSING_PERMISSIONS.format(missing="; ".join(missing))
        results.append(failed(CHECK_PERMISSIONS, detail, fixes.FIX_PERMISSIONS))
    else:
        results.append(ok(CHECK_PERMISSIONS, DETAIL_PERMISSIONS.format(count=len(permissions))))
    events = app.get("events") or []
    absent = missing_events(events)
    if absent:
        detail = DETAIL_MISSING_EVENTS.format(missing=", ".join(absent))
        results.append(failed(CHECK_EVENTS, detail, fixes.FIX_EVENTS))
    else:
        results.append(ok(CHECK_EVENTS, DETAIL_EVENTS.format(count=len(events))))
    return results, app


def _key_or_network(exc: BaseException) -> str:
    if isinstance(exc, gidgethub.GitHubBroken | OSError | TimeoutError):
        return fixes.FIX_GITHUB_UNREACHABLE
    return fixes.FIX_KEY


def _needs_key(*checks: str) -> list[CheckResult]:
    return [skipped(check, DETAIL_NEEDS_KEY) for check in checks]


def skipped_repository(full_name: str) -> list[CheckResult]:
    checks = (CHECK_INSTALLATION.format(repo=full_name), CHECK_CONFIG.format(repo=full_name))
    return _needs_key(*checks)


async def installation_of(side: GitHubSide, full_name: str) -> dict[str, Any] | None:
    """The installation covering ``full_name``, None when the App is not installed there."""
    repo = Repo.parse(full_name)
    try:
        data: dict[str, Any] = await side.jwt_api.getitem(
            "/repos/{owner}/{repo}/installation", repo.vars(), jwt=side.jwt()
        )
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == NOT_FOUND:
            return None
        raise
    return data


async def check_repository(side: GitHubSide, full_name: str) -> list[CheckResult]:
    installation_check = CHECK_INSTALLATION.format(repo=full_name)
    config_check = CHECK_CONFIG.format(repo=full_name)
    try:
        installation = await installation_of(side, full_name)
    except Exception as exc:
        detail = request_error("GET installation", exc)
        fix = fixes.FIX_NOT_INSTALLED.format(repo=full_name)
        return [
            failed(installation_check, detail, fix),
            skipped(config_check, DETAIL_NEEDS_INSTALLATION),
        ]
    if installation is None:
        detail = DETAIL_NOT_INSTALLED.format(repo=full_name)
        fix = fixes.FIX_NOT_INSTALLED.format(repo=full_name)
        return [
            failed(installation_check, detail, fix),
            skipped(config_check, DETAIL_NEEDS_INSTALLATION),
        ]
    installation_id = int(installation["id"])
    lacking = missing_permissions(installation.get("permissions") or {})
    if lacking:
        detail = DETAIL_INSTALLATION_PERMISSIONS.format(
            id=installation_id, missing="; ".join(lacking)
        )
        first = failed(
            installation_check, detail, fixes.FIX_INSTALLATION_PERMISSIONS.format(repo=full_name)
        )
    else:
        first = ok(installation_check, DETAIL_INSTALLED.format(id=installation_id))
    gh = await side.app.installation_client(installation_id)
    config, config_result = await _config(gh, full_name, config_check)
    results = [first, config_result]
    if config is not None:
        pin_results = await asyncio.gather(
            *(check_pin(side, gh, full_name, pin) for pin in config.pins)
        )
        results.extend(result for pair in pin_results for result in pair)
        if config.images.registry_url is not None and side.registry is not None:
            url = str(config.images.registry_url)
            results.append(await check_registry(side.registry, full_name, url))
    return results


async def _config(
    gh: gidgethub.aiohttp.GitHubAPI, full_name: str, check: str
) -> tuple[RepoConfig | None, CheckResult]:
    fix = fixes.FIX_CONFIG.format(repo=full_name)
    try:
        raw = await changes.read_file(gh, Repo.parse(full_name), CONFIG_PATH, None)
    except Exception as exc:
        return None, failed(check, request_error("read " + CONFIG_PATH, exc), fix)
    if raw is None:
        return None, failed(check, DETAIL_NO_CONFIG, fixes.FIX_NO_CONFIG.format(repo=full_name))
    try:
        config = parse_repo_config_bytes(raw, filename=CONFIG_PATH)
    except ConfigError as exc:
        return None, failed(check, flat(str(exc)), fix)
    return config, ok(check, DETAIL_CONFIG.format(pins=len(config.pins)))


async def check_pin(
    side: GitHubSide, gh: gidgethub.aiohttp.GitHubAPI, full_name: str, pin: PinConfig
) -> Sequence[CheckResult]:
    upstream, file = await asyncio.gather(
        _check_upstream(side, full_name, pin), _check_pin_file(gh, full_name, pin)
    )
    return upstream, file


async def _check_upstream(side: GitHubSide, full_name: str, pin: PinConfig) -> CheckResult:
    check = CHECK_UPSTREAM.format(repo=full_name, pin=pin.name)
    fix = fixes.FIX_UPSTREAM.format(upstream=pin.upstream)
    try:
        installation = await installation_of(side, pin.upstream)
        if installation is None:
            return failed(check, DETAIL_NOT_INSTALLED.format(repo=pin.upstream), fix)
        installation_id = int(installation["id"])
        gh = await side.app.installation_client(installation_id)
        await gh.getitem("/repos/{owner}/{repo}", Repo.parse(pin.upstream).vars())
    except Exception as exc:
        return failed(check, request_error(pin.upstream, exc), fix)
    return ok(check, DETAIL_UPSTREAM.format(upstream=pin.upstream, id=installation_id))


async def _check_pin_file(
    gh: gidgethub.aiohttp.GitHubAPI, full_name: str, pin: PinConfig
) -> CheckResult:
    check = CHECK_PIN_FILE.format(repo=full_name, pin=pin.name)
    try:
        raw = await changes.read_file(gh, Repo.parse(full_name), pin.file, None)
    except Exception as exc:
        return failed(check, request_error("read " + pin.file, exc), fixes.FIX_PIN_FILE)
    if raw is None:
        return failed(check, DETAIL_NO_FILE.format(file=pin.file), fixes.FIX_PIN_FILE)
    try:
        found = read_pin(raw.decode("utf-8"), pin.dependency, filename=pin.file)
    except (PinError, UnicodeDecodeError) as exc:
        return failed(check, flat(str(exc)), fixes.FIX_PIN_FILE)
    if found.repository is not None and not same_repository(found.repository, pin.upstream):
        detail = DETAIL_OTHER_REPOSITORY.format(
            file=pin.file, line=found.line, repository=found.repository, upstream=pin.upstream
        )
        return failed(check, detail, fixes.FIX_PIN_FILE)
    detail = DETAIL_PIN.format(
        file=pin.file, line=found.line, dependency=pin.dependency, value=found.value
    )
    return ok(check, detail)
