"""``followup-bot app-manifest``: the GitHub App manifest, from the bot's own requirements."""

from __future__ import annotations

from typing import TextIO

from bot.core.app_requirements import manifest_json


def app_manifest_command(
    *, name: str, homepage: str, webhook_url: str, redirect_url: str | None, out: TextIO
) -> int:
    out.write(
        manifest_json(
            name=name, homepage=homepage, webhook_url=webhook_url, redirect_url=redirect_url
        )
    )
    return 0
