"""What the dashboard shows of each allowlist pattern: the latest audit evidence, its day
and the pin that owns it, recorded by the allowlist feature as evidence arrives (the
dashboard only reads it, ``Kind.DASHBOARD_ALLOWLIST``)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from bot.allowlist.follow_up import owned
from bot.config.models import RepoConfig
from bot.store.kinds import Kind
from bot.store.protocol import Store


async def record_allowlist_evidence(
    store: Store,
    repo: str,
    config: RepoConfig | None,
    evidence: Mapping[str, str],
    *,
    now: float,
    gone: Iterable[str] = (),
) -> None:
    """Remember the latest evidence per allowlist pattern; forget patterns in ``gone``
    (no longer in the allowlist file)."""
    doc = dict(await store.get_state(Kind.DASHBOARD_ALLOWLIST, repo) or {})
    for pattern in gone:
        doc.pop(pattern, None)
    for pattern, kind in evidence.items():
        doc[pattern] = {
            "evidence": kind,
            "date": time.strftime("%Y-%m-%d", time.gmtime(now)),
            "owner": owner_of(pattern, config),
        }
    await store.put_state(Kind.DASHBOARD_ALLOWLIST, repo, doc)


def owner_of(pattern: str, config: RepoConfig | None) -> str | None:
    if config is None:
        return None
    return next((pin.name for pin in config.pins if owned(pattern, pin)), None)
