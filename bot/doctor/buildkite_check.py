"""The doctor's Buildkite checks: the API token works and has the scopes the features need,
and Buildkite's webhooks can be verified."""

from __future__ import annotations

import aiohttp

from bot.core.settings import Settings
from bot.doctor import fixes
from bot.doctor.requirements import missing_scopes
from bot.doctor.result import CheckResult, failed, ok, skipped

CHECK_TOKEN = "Buildkite token"
CHECK_WEBHOOK = "Buildkite webhook secret"
ACCESS_TOKEN_PATH = "/access-token"  # under the API's /v2 base

DETAIL_OFF = "no FOLLOWUP_BOT_BUILDKITE_API_TOKEN: the Buildkite side is off"
DETAIL_SCOPES = "scopes {scopes}"
DETAIL_MISSING_SCOPES = "missing scopes: {missing} (has {scopes})"
DETAIL_REFUSED = "GET /v2/access-token answered {status}"
DETAIL_UNREACHABLE = "GET /v2/access-token: {error}"
DETAIL_WEBHOOK_SET = "{kind} set"
DETAIL_WEBHOOK_MISSING = "neither FOLLOWUP_BOT_BUILDKITE_WEBHOOK_SECRET nor _TOKEN is set"
UNAUTHORIZED = (401, 403)


async def check_token(session: aiohttp.ClientSession, settings: Settings) -> CheckResult:
    token = settings.buildkite_api_token
    if token is None:
        return skipped(CHECK_TOKEN, DETAIL_OFF)
    url = settings.buildkite_api_url + ACCESS_TOKEN_PATH
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    try:
        async with session.get(url, headers=headers) as response:
            if response.status in UNAUTHORIZED:
                detail = DETAIL_REFUSED.format(status=response.status)
                return failed(CHECK_TOKEN, detail, fixes.FIX_BUILDKITE_TOKEN)
            if response.status != 200:
                detail = DETAIL_REFUSED.format(status=response.status)
                return failed(CHECK_TOKEN, detail, fixes.FIX_BUILDKITE_UNREACHABLE)
            body = await response.json()
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        detail = DETAIL_UNREACHABLE.format(error=str(exc) or type(exc).__name__)
        return failed(CHECK_TOKEN, detail, fixes.FIX_BUILDKITE_UNREACHABLE)
    scopes = body.get("scopes") if isinstance(body, dict) else None
    has = [s for s in scopes if isinstance(s, str)] if isinstance(scopes, list) else []
    missing = missing_scopes(has)
    listed = ", ".join(has) or "none"
    if missing:
        detail = DETAIL_MISSING_SCOPES.format(missing=", ".join(missing), scopes=listed)
        fix = fixes.FIX_BUILDKITE_SCOPES.format(scopes=", ".join(missing))
        return failed(CHECK_TOKEN, detail, fix)
    return ok(CHECK_TOKEN, DETAIL_SCOPES.format(scopes=listed))


def check_webhook(settings: Settings) -> CheckResult:
    if not settings.buildkite_enabled:
        return skipped(CHECK_WEBHOOK, DETAIL_OFF)
    if settings.buildkite_webhook_secret is not None:
        return ok(CHECK_WEBHOOK, DETAIL_WEBHOOK_SET.format(kind="signature secret"))
    if settings.buildkite_webhook_token is not None:
        return ok(CHECK_WEBHOOK, DETAIL_WEBHOOK_SET.format(kind="plain token"))
    return failed(CHECK_WEBHOOK, DETAIL_WEBHOOK_MISSING, fixes.FIX_BUILDKITE_WEBHOOK)
