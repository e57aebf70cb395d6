"""The dashboard's CI routing section, rendered and collected."""

from __future__ import annotations

from bot.config.parse import parse_repo_config
from bot.config.routing import RoutingConfig
from bot.dashboard.flow import collect
from bot.dashboard.routing_text import (
    HEADING_ROUTING,
    MORE_PROBLEMS,
    NO_PROBLEMS,
    MigrationRow,
    RoutingSection,
    render_routing,
)
from bot.dashboard.text import DashboardData, render
from bot.routing.model import route
from bot.routing.tables import default_tables
from bot.routing_check.snapshot import MAX_PROBLEMS_KEPT, routing_doc
from bot.store.kinds import Kind, migration_key
from bot.store.sqlite import SQLiteStore
from sandbox.vllm_ci_tree import vllm_ci_files

REPO = "vllm-project/vllm"


def test_no_section_unless_the_repository_asks_about_routing() -> None:
    assert HEADING_ROUTING not in render(DashboardData(repo=REPO), handle="bot")


def test_queues_migrations_and_main_s_problems() -> None:
    section = RoutingSection(
        base="a" * 40,
        queues={"l4-k8s": 31, "gpu_1_queue": 9},
        problems=("x.yaml:3:5: unknown step field 'num_device'",),
        problem_count=1,
        migrations=(
            MigrationRow("l4-eks", 12, 8, "created"),
            MigrationRow("b200", None, None, None),
        ),
    )
    text = "\n\n".join(render_routing(section))
    assert "| `gpu_1_queue` | 9 |\n| `l4-k8s` | 31 |" in text
    assert "| `l4-eks` | #12 | 8 | created |" in text
    assert "| `b200` | - | - | - |" in text
    assert "```text\nx.yaml:3:5: unknown step field 'num_device'\n```" in text
    clean = RoutingSection(base="b" * 40, queues={}, problems=(), problem_count=0)
    assert render_routing(clean)[-1] == NO_PROBLEMS


def test_many_problems_are_cut_with_a_pointer_to_the_command() -> None:
    problems = tuple(f"f.yaml:{n}:1: problem" for n in range(MAX_PROBLEMS_KEPT))
    section = RoutingSection("c" * 40, {}, problems, problem_count=MAX_PROBLEMS_KEPT + 5)
    assert render_routing(section)[-1].endswith(MORE_PROBLEMS.format(count=5))


def test_the_recorded_routing_of_main_counts_steps_per_queue() -> None:
    main = {"BUILDKITE_BRANCH": "main"}
    routes = route(vllm_ci_files(incident_a=True), env=main, tables=default_tables())
    doc = routing_doc(routes, RoutingConfig(), default_tables(), "d" * 40)
    assert sum(doc["queues"].values()) == len(routes.steps)
    assert doc["problem_count"] >= 3  # incident A's audit breaks the CUDA rules
    assert any("torch-stable-abi-audit needs the CUDA build" in p for p in doc["problems"])


MIGRATION = """\
migrations:
  - name: l4-eks
    select: {queue: gpu_1_queue}
    set: {device: l4}
"""


async def test_collect_joins_the_routing_doc_and_the_migrations(store: SQLiteStore) -> None:
    config = parse_repo_config(MIGRATION)
    doc = {"base": "e" * 40, "queues": {"gpu_1_queue": 2}, "problems": [], "problem_count": 0}
    await store.put_state(Kind.DASHBOARD_ROUTING, REPO, doc)
    state = {"pr": 7, "steps_left": 2, "last_result": "updated"}
    await store.put_state(Kind.MIGRATION, migration_key(REPO, "l4-eks"), state)
    data = await collect(store, REPO, config, now=0.0)
    assert data.routing is not None
    assert data.routing.migrations == (MigrationRow("l4-eks", 7, 2, "updated"),)
    assert "| `l4-eks` | #7 | 2 | updated |" in render(data, handle="bot")
