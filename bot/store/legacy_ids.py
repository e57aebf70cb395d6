"""Handler ids as releases before 0.2 recorded them (module path and function name),
and the explicit id each handler has now.

Frozen: schema migration 4 of the SQLite store rewrites recorded handler runs with
it, so an upgrade never re-runs a handler of a delivery in flight. Never edit it.
"""

from __future__ import annotations

LEGACY_HANDLER_IDS: dict[str, str] = {
    "handlers.allowlist.on_build_finished": "allowlist.build-finished",
    "handlers.allowlist.on_reconcile": "allowlist.reconcile",
    "handlers.bump.on_push": "pins.push",
    "handlers.bump.on_sync": "pins.sync",
    "handlers.bump.on_reconcile": "pins.reconcile",
    "handlers.commands.on_comment": "commands.comment",
    "handlers.commands.on_job_finished": "retry.job-finished",
    "handlers.dashboard.on_reconcile": "dashboard.reconcile",
    "handlers.landing.on_review": "landing.review",
    "handlers.landing.on_new_head": "landing.new-head",
    "handlers.landing.on_closed": "landing.closed",
    "handlers.landing.on_status": "landing.status",
    "handlers.landing.on_build_finished": "landing.build-finished",
}
