"""What the dashboard shows for a pin, recorded by the bump flow as it reads upstream:
how far behind upstream the pin is and since when."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.config.models import PinConfig
from bot.pins.facts import BumpScope
from bot.store.kinds import Kind, pin_key


async def snapshot(
    ctx: BumpScope,
    pin: PinConfig,
    *,
    pinned: str,
    upstream_head: str,
    behind: int,
    oldest: float | None,
) -> None:
    """What the dashboard shows for this pin: how far behind upstream it is."""
    doc = pin_snapshot(
        pinned=pinned, upstream_head=upstream_head, behind=behind, oldest_unrolled_at=oldest
    )
    await ctx.store.put_state(Kind.DASHBOARD_PIN, pin_key(ctx.repo.full_name, pin.name), doc)


def commit_time(commit: Mapping[str, Any]) -> float | None:
    """When an upstream commit (from a compare) was authored, as a timestamp."""
    stamp = ((commit.get("commit") or {}).get("author") or {}).get("date")
    if not isinstance(stamp, str):
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def pin_snapshot(
    *,
    pinned: str,
    upstream_head: str,
    behind: int,
    oldest_unrolled_at: float | None,
    pr_state: str | None = None,
) -> dict[str, Any]:
    """The ``dashboard-pin`` document for one pin (store it under ``bump.pin_key``)."""
    return {
        "pinned": pinned,
        "upstream_head": upstream_head,
        "behind": behind,
        "oldest_unrolled_at": oldest_unrolled_at if behind else None,
        "pr_state": pr_state,
    }
