"""A real PostgreSQL server for the tests: ``initdb`` into a temporary directory, loopback only.

The server binaries come from ``pg_config --bindir`` (``FOLLOWUP_BOT_PG_BINDIR`` overrides).
PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
in a directory handed to it. Each test gets a database of its own
(``fresh_database``): a ``CREATE DATABASE`` costs milliseconds, far less than a server.

``make test``'s set-up (``tools/test_setup.sh``) starts one server for the whole suite and
exports its URL as ``FOLLOWUP_BOT_TEST_POSTGRES``; without it, the first test that needs one
starts it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from sandbox.ports import free_port

URL_VARIABLE = "FOLLOWUP_BOT_TEST_POSTGRES"
BINDIR_VARIABLE = "FOLLOWUP_BOT_PG_BINDIR"
SUPERUSER = "followup"
SERVER_USER = "postgres"  # the account Debian's packages make; used only when run as root
READY_LINE = "database system is ready to accept connections"
INITDB = ("-E", "UTF8", "--no-sync", "--locale=C")
SERVER_SETTINGS = (
    "listen_addresses=127.0.0.1",
    "max_connections=400",
    # Test data need not survive a power cut; a process kill it survives either way.
    "fsync=off",
    "full_page_writes=off",
)
# For benchmarks that compare with SQLite's fsync before each 202: commits reach the disk.
DURABLE_SETTINGS = ("listen_addresses=127.0.0.1", "max_connections=400")
NO_BINARIES = (
    "PostgreSQL server binaries not found: install postgresql (pg_config --bindir must name"
    " the folder holding initdb and postgres) or set " + BINDIR_VARIABLE
)
SERVER_FAILED = "postgres exited before it was ready:\n{log}"


def bindir() -> Path:
    explicit = os.environ.get(BINDIR_VARIABLE)
    if explicit:
        return Path(explicit)
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        found = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if found and (Path(found) / "initdb").exists():
            return Path(found)
    initdb = shutil.which("initdb")
    if initdb is not None:
        return Path(initdb).parent
    raise RuntimeError(NO_BINARIES)


def _server_user() -> str | None:
    # Popen(user=...) rather than a runuser wrapper: signals then reach postgres itself.
    return SERVER_USER if os.geteuid() == 0 else None


@dataclass
class PostgresServer:
    """One running server; ``url`` connects as its superuser to the ``postgres`` database."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes]
    settings: tuple[str, ...] = SERVER_SETTINGS

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def halt(self) -> None:
        """Shut the server down, keeping its data (an outage; ``resume`` ends it)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # "fast" shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def resume(self) -> None:
        """Start the halted server again, on the same port with the same data."""
        self.process = _launch(self.directory, self.port, self.settings)

    def stop(self) -> None:
        self.halt()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_server(*, port: int | None = None, durable: bool = False) -> PostgresServer:
    """initdb a new cluster in a temporary directory and start it on loopback
    (``durable``: with fsync, as in production; the tests' server goes without)."""
    binaries = bindir()
    directory = Path(tempfile.mkdtemp(prefix="followup-bot-pg-"))
    data, sockets = directory / "data", directory / "sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(directory, SERVER_USER)
        shutil.chown(sockets, SERVER_USER)
    user = _server_user()
    subprocess.run(
        [str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, "-A", "trust", *INITDB],
        check=True,
        capture_output=True,
        user=user,
    )
    chosen = port if port is not None else free_port()
    settings = DURABLE_SETTINGS if durable else SERVER_SETTINGS
    return PostgresServer(directory, chosen, _launch(directory, chosen, settings), settings)


def _launch(directory: Path, port: int, settings: tuple[str, ...]) -> subprocess.Popen[bytes]:
    binaries, data, sockets = bindir(), directory / "data", directory / "sockets"
    process = subprocess.Popen(
        [str(binaries / "postgres"), "-D", str(data), "-p", str(port), "-k", str(sockets)]
        + [arg for setting in settings for arg in ("-c", setting)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        user=_server_user(),
    )
    _wait_ready(process)
    return process


def _wait_ready(process: subprocess.Popen[bytes]) -> None:
    """Read the server's log until it says it is ready (no polling, no sleeps)."""
    assert process.stderr is not None
    seen: list[str] = []
    for raw in process.stderr:
        line = raw.decode(errors="replace")
        seen.append(line)
        if READY_LINE in line:
            # Keep draining the log, or a chatty server would block on a full pipe.
            _drain_in_background(process)
            return
    raise RuntimeError(SERVER_FAILED.format(log="".join(seen)))


def _drain_in_background(process: subprocess.Popen[bytes]) -> None:
    def drain() -> None:
        assert process.stderr is not None
        for _ in process.stderr:
            pass

    threading.Thread(target=drain, name="postgres-log", daemon=True).start()


def database_url(server_url: str, name: str) -> str:
    return server_url.rsplit("/", 1)[0] + "/" + name


async def create_database(server_url: str, prefix: str = "t") -> str:
    """A new empty database on the server; its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return database_url(server_url, name)


async def drop_database(server_url: str, url: str) -> None:
    name = url.rsplit("/", 1)[1]
    conn = await asyncpg.connect(server_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@contextlib.contextmanager
def server_for_tests() -> Iterator[str]:
    """The URL of the suite's server: the one ``make test`` started, or one started here."""
    given = os.environ.get(URL_VARIABLE)
    if given:
        yield given
        return
    server = start_server()
    try:
        yield server.url
    finally:
        server.stop()
