"""Comparing what the App and the Buildkite token have with what the features need."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from bot.core.app_requirements import BUILDKITE_SCOPES, EVENTS, PERMISSIONS, covers

MISSING_PERMISSION = "{name}: {granted}, needs {needed}"
NO_ACCESS = "none"


def missing_permissions(granted: Mapping[str, object]) -> list[str]:
    """Each permission the features need that ``granted`` lacks or grants too weakly."""
    missing = []
    for permission in PERMISSIONS:
        has = granted.get(permission.name)
        level = has if isinstance(has, str) else None
        if not covers(level, permission.access):
            missing.append(
                MISSING_PERMISSION.format(
                    name=permission.name, granted=level or NO_ACCESS, needed=permission.access
                )
            )
    return missing


def missing_events(subscribed: Collection[object]) -> list[str]:
    return [event.name for event in EVENTS if event.name not in subscribed]


def missing_scopes(scopes: Collection[object]) -> list[str]:
    return [scope.name for scope in BUILDKITE_SCOPES if scope.name not in scopes]
