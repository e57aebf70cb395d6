"""The dashboard tests use the core tests' real SQLite store (in memory)."""

from __future__ import annotations

from ..core.conftest import blocking, store

__all__ = ["blocking", "store"]
