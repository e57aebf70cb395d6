"""This deployment's id: made the first time its database writes a dashboard, kept there.

Each id is a document of its own (the id is the key), never overwritten: two replicas
that make one at the same moment both keep theirs, every id in the database counts as
this deployment's, and the oldest is the one written into dashboards from then on.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.store.kinds import Kind
from bot.store.protocol import Store

# ``followup-bot doctor`` proves the database writable with a document of this kind that
# it deletes at once; no deployment ever takes it for one of its ids.
PROBE_PREFIX = "doctor-probe-"


@dataclass(frozen=True)
class Deployment:
    current: str  # the id written into dashboards
    ids: frozenset[str]  # every id of this database (current among them)


async def known_ids(store: Store) -> frozenset[str]:
    """The ids this database already has (empty before its first dashboard)."""
    return frozenset(key for key, _ in await _ids(store))


async def _ids(store: Store) -> list[tuple[str, dict[str, Any]]]:
    found = await store.list_state(Kind.DEPLOYMENT)
    return [(key, doc) for key, doc in found if not key.startswith(PROBE_PREFIX)]


async def this_deployment(store: Store, *, now: float) -> Deployment:
    """The database's deployment, its id made now when it has none yet."""
    docs = await _ids(store)
    if not docs:
        await store.put_state(Kind.DEPLOYMENT, uuid.uuid4().hex, {"created_at": now})
        docs = await _ids(store)
    current = min(docs, key=_age)[0]
    return Deployment(current, frozenset(key for key, _ in docs))


def _age(item: tuple[str, Mapping[str, Any]]) -> tuple[float, str]:
    key, doc = item
    created = doc.get("created_at")
    return (float(created) if isinstance(created, int | float) else 0.0, key)
