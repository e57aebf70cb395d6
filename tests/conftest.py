"""Suite-wide settings: the Hypothesis profiles, the order tests are handed to workers and
the garbage collector's settings in them."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from hypothesis import is_hypothesis_test, settings

from bot.core.blocking import BlockingRunner
from bot.store.postgres import PostgresStore
from bot.store.protocol import Store
from bot.store.sqlite import SQLiteStore
from sandbox.postgres_server import create_database, drop_database, server_for_tests
from tests import real_data

# HYPOTHESIS_PROFILE=ci (set by .ci/run) makes every property test replay the same
# examples run after run, so a red CI build is the code's fault and reproducible, never a
# lucky draw; without it Hypothesis keeps exploring new examples on developers' machines.
# The example counts stay as they are: the property tests are a few percent of the suite's
# time, and the heaviest ones set their own max_examples, which a profile does not override.
# No deadline in either profile: a per-example time limit is a timed assertion, and on a
# shared two-core machine (the chaos tests run beside the rest) an example that takes
# 200 ms once and 150 ms the next failed CI as "flaky" for no fault of the code.
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# Python's defaults are (700, 10, 10): a young collection per 700 new objects.
GC_THRESHOLDS = (20_000, 20, 20)

TESTS = Path(__file__).parent
E2E = TESTS / "e2e"
# The pure modules' own tests (Makefile's PURE). Their examples (Hypothesis tests aside) are
# marked `branch_gate`: `make test` runs them first, measuring branches, and every branch of
# the pure modules must be taken by them; every other test runs with statement coverage.
BRANCH_GATE_NAMES = frozenset(
    (
        "edit",
        "config",
        "abi",
        "abi_log",
        "allowlist",
        "routing",
        "pins",
        "flaky",
        "landing",
        "main_red",
        "images",
        "registry",
        "routing_check",
    )
)
BRANCH_GATE_DIRS = tuple(TESTS / name for name in sorted(BRANCH_GATE_NAMES))
# The longest tests by far (10 to 30 s each on two workers): handed out first so that
# no worker is still running one of them after the others have run out of work.
LONGEST = {
    "tests/e2e/test_chaos.py::test_three_replicas_on_postgres_killed_under_faults",
    "tests/e2e/test_chaos.py::test_one_replica_on_sqlite_killed_under_faults",
    "tests/e2e/test_crash_effects.py::test_random_kills_over_many_mixed_deliveries",
    "tests/e2e/test_upstream_references.py::test_a_long_upstream_history_lists_the_newest_commits",
}


def _folder(path: Path, folders: dict[Path, str]) -> str:
    """The test folder ``path`` is in (its first part under tests/), worked out once per
    module: every worker sorts and marks all ~3,700 items, and pathlib's comparisons per
    item and folder took seconds of the suite's CPU."""
    folder = folders.get(path)
    if folder is None:
        parts = path.relative_to(TESTS).parts if path.is_relative_to(TESTS) else ()
        folder = folders[path] = parts[0] if len(parts) > 1 else ""
    return folder


def _start_order(item: pytest.Item, folder: str) -> int:
    if item.nodeid in LONGEST:
        return 0
    if folder == E2E.name or is_hypothesis_test(getattr(item, "obj", None)):
        return 1
    return 2


def _in_branch_gate(item: pytest.Item, folder: str) -> bool:
    return folder in BRANCH_GATE_NAMES and not is_hypothesis_test(getattr(item, "obj", None))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "branch_gate: an example test of a pure module, measured with branches"
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``-m branch_gate`` (``make test``'s pure part) takes only tests in BRANCH_GATE_DIRS:
    the other test folders are not even imported (~2 s of each of its workers' start)."""
    if config.getoption("markexpr") != "branch_gate":
        return None
    if collection_path.parent == TESTS and collection_path.is_dir():
        return None if collection_path in BRANCH_GATE_DIRS else True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first, then the end-to-end and property tests (~75% of the suite's time; a
    property test may take seconds, and one left for last kept a worker busy alone), then
    the many short unit tests, which fill the workers' tails evenly. Only an order: a test
    missing from LONGEST still runs, and the sort is stable and the same on every xdist
    worker, as xdist requires. The pure modules' example tests are marked.
    """
    folders: dict[Path, str] = {}
    items.sort(key=lambda item: _start_order(item, _folder(item.path, folders)))
    for item in items:
        if _in_branch_gate(item, _folder(item.path, folders)):
            item.add_marker(pytest.mark.branch_gate)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Set the collected modules aside from the garbage collector, and let it run less
    often. Python's full collection walks every tracked object, and a worker holds the
    whole collected suite (~2,100 tests, aiohttp, pydantic, Hypothesis): the workers spent
    ~8 s of CPU a run there (the README's suite figures: the side-by-side rounds). Reference
    cycles made by a test are still collected, later.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL server's URL: the one ``make test``'s set-up started
    (``tools/test_setup.sh``), or one started for this worker on first use
    (``sandbox.postgres_server``)."""
    with server_for_tests() as url:
        yield url


@pytest.fixture
async def postgres_url(postgres_server: str) -> AsyncIterator[str]:
    """An empty database of its own for one test, dropped afterwards."""
    url = await create_database(postgres_server)
    yield url
    await drop_database(postgres_server, url)


@asynccontextmanager
async def backend_store(
    backend: str, request: pytest.FixtureRequest, clock: Callable[[], float] = time.time
) -> AsyncIterator[Store]:
    """An open, empty store of ``backend`` ("sqlite": in memory; "postgres": a database of
    its own on the suite's server, dropped afterwards), closed when the block ends."""
    if backend == "sqlite":
        blocking = BlockingRunner(max_workers=2, timeout=10.0)
        store: Store = SQLiteStore(":memory:", blocking, clock=clock)
        await store.open()
        try:
            yield store
        finally:
            await store.close()
            blocking.close()
        return
    server = request.getfixturevalue("postgres_server")
    url = await create_database(server)
    store = PostgresStore(url, clock=clock)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
        await drop_database(server, url)


@pytest.fixture(params=["sqlite", "postgres"])
async def any_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """The store contract's subject: each test runs on both backends."""
    async with backend_store(request.param, request) as store:
        yield store


def _unexpected_skips(terminalreporter: pytest.TerminalReporter) -> list[pytest.TestReport]:
    """The skipped tests other than those of the real-data pack (skipped when it is absent)."""
    skipped: list[pytest.TestReport] = terminalreporter.stats.get("skipped", [])
    return [report for report in skipped if real_data.SETTING not in str(report.longrepr)]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A skipped test fails the run, the real-data pack's aside: ``make test``'s set-up
    installs every tool the tests need, so a skip could only be a check that silently never
    runs (a missing g++ once skipped the ABI tests, and the branch gate then failed at
    98 % with no word why). Listed in the summary (``pytest_terminal_summary``)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or hasattr(session.config, "workerinput"):
        return
    if _unexpected_skips(reporter) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The skipped tests that fail the run (``pytest_sessionfinish``), and one line when
    vLLM's real-data pack is absent (a user's clone): its tests were skipped, not passed."""
    unexpected = _unexpected_skips(terminalreporter)
    for report in unexpected:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else longrepr
        terminalreporter.write_line(f"SKIPPED, which fails the run: {report.nodeid}: {reason}")
    if real_data.available():
        return
    skipped = terminalreporter.stats.get("skipped", [])
    count = sum(1 for report in skipped if real_data.SETTING in str(report.longrepr))
    message = real_data.MSG_ABSENT.format(
        path=real_data.pack_root(),
        setting=real_data.SETTING,
        count=count,
        tests="test" if count == 1 else "tests",
    )
    terminalreporter.write_line(message)
