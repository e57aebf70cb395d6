"""Webhook intake: deliveries/s, acknowledgement latency and CPU, against a durable floor.

Servers run as child processes on loopback, one after the other, under the same load
from this process:

- ``floor`` (the reference): the least an intake that keeps the 202's promise must do,
  written here (``Floor``): the HMAC-SHA256 check, the body inserted into SQLite (WAL,
  ``synchronous=FULL``) with group commit, then 202; no log line;
- ``intake``: the real service (``bot.service.app.create_app``), logging as
  ``followup-bot serve`` does (its level and format, its access log; the lines go to a
  file): signature check, dedupe, durable write to the SQLite inbox, 202; its workers
  drain the inbox meanwhile;
- ``bare`` (``--bare``): an aiohttp handler that reads the body and answers 202.

Phase 1 (throughput): ``--requests`` signed deliveries from each number of
concurrent senders in ``--concurrency``, as fast as they are answered (the
inbox commits concurrent deliveries together, so more senders, fewer flushes).
Phase 2 (latency): a steady ``--rate`` requests/s for ``--seconds``, reporting
p50/p99 acknowledgement latency.
Phase 3 (sustained, always run): an open-loop sender offers each rate in
``--rates`` for ``--step-seconds``: every delivery is started on its own
timetable slot (an asyncio task), whether or not earlier ones were answered, and
its latency is counted from that slot, so time spent queued in the client counts
too (no coordinated omission). Per rate: deliveries sent and acknowledged per
second, p50/p99 acknowledgement latency, and for the intake the inbox depth
(deliveries QUEUED or RUNNING, read from its SQLite file) at the step's start and
after the step's last answer. A server *sustains* a rate when p99 ack < 50 ms,
no request failed and (intake) the depth grew by less than 5 % of the deliveries
sent in the step; its sustained capacity is the highest such rate. Between steps
the intake's inbox is given up to ``--drain-seconds`` to empty.

Every delivery is an ``issue_comment`` (``created``) on one PR of a repository the bot
does not serve: a handler wants it (it is claimed, dispatched and finished like real
work; one no handler wants would be stored done at intake and measure nothing of the
workers), and the handler ends at its first guard, without a GitHub request. With ``--subjects 1``
(the default, the worst case) all share one subject (the PR), so the inbox runs them
one at a time, whatever the number of workers; with ``--subjects N`` they go round N
PRs, as real traffic spreads over pins and PRs, and the workers' turns are batched.

With ``--postgres`` one more server is measured the same way: the intake on PostgreSQL
(a server started here with fsync on, as in production; a database of its own), and
its CPU counts PostgreSQL's processes too.

Phase 4 (CPU, always run): ``--cpu-rate`` deliveries/s for ``--cpu-seconds``; the
server's own CPU time (user and system, from /proc; the intake's counted until its
inbox is empty again, so the workers' share is in it) per delivery sent, and the log
lines written per delivery; then the same with a ``star`` event, which no handler
wants (stored done at intake, no worker runs: the intake alone). Every figure is also
given as a ratio to the floor's in the same run.

Usage: python bench/webhook_intake.py [--requests 2000] [--rate 200] [--seconds 5]
       [--rates 100 200 400 800 1200] [--step-seconds 3] [--subjects 1]
       [--workers N] [--cpu-rate 400] [--cpu-seconds 5] [--postgres] [--bare]
       [--log-level INFO] [--log-format text]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import hmac
import itertools
import json
import math
import os
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web

from bot.cli.store_access import opened_store
from bot.store.access import Access
from bot.store.protocol import Store
from sandbox.postgres_server import create_database, start_server

SECRET = "bench-secret"
READY = "ready"


def body(number: int) -> bytes:
    """An ``issue_comment`` on PR ``number`` (the delivery's subject)."""
    return json.dumps(
        {
            "action": "created",
            "repository": {"full_name": "o/r"},
            "issue": {"number": number, "user": {"login": "a"}, "labels": [], "pull_request": {}},
            "comment": {"id": 1, "body": "lgtm", "user": {"login": "b"}, "html_url": "x"},
        }
        | {"padding": "x" * 6000}  # real payloads are several KB
    ).encode()


# One signed body per subject, sent in turn (``--subjects``; set in main).
BODIES: list[tuple[bytes, str]] = []
_sent = itertools.count()
WANTED_EVENT = "issue_comment"  # a handler wants it: claimed, dispatched and finished
UNWANTED_EVENT = "star"  # no handler wants it: stored done at intake, no worker runs
_event = [WANTED_EVENT]


def use_event(name: str) -> None:
    _event[0] = name


def use_subjects(count: int) -> None:
    BODIES[:] = [
        (b, "sha256=" + hmac.new(SECRET.encode(), b, hashlib.sha256).hexdigest())
        for b in (body(n) for n in range(1, count + 1))
    ]


def next_delivery() -> tuple[bytes, dict[str, str]]:
    data, signature = BODIES[next(_sent) % len(BODIES)]
    return data, {
        "X-GitHub-Event": _event[0],
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": signature,
        "Content-Type": "application/json",
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- child side ---------------------------------------------------------------


FLOOR_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS deliveries (delivery_id TEXT PRIMARY KEY, event TEXT NOT NULL,"
    " body BLOB NOT NULL, received_at REAL NOT NULL)"
)
FLOOR_INSERT = "INSERT INTO deliveries VALUES (?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING"


class Floor:
    """The durable floor: the least a webhook intake that keeps its promise must do.

    HMAC-SHA256 over the body, then the body inserted into SQLite (WAL, synchronous=FULL:
    the commit is on disk before the answer), then 202. Group commit: one writer thread
    takes every body that arrived while it was busy and commits them in one transaction,
    one fsync for the lot, as the service's inbox batches its admissions. No log line."""

    def __init__(self, workdir: Path) -> None:
        import sqlite3
        from concurrent.futures import ThreadPoolExecutor

        self.conn = sqlite3.connect(workdir / "floor.sqlite3", check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(FLOOR_SCHEMA)
        self.writer = ThreadPoolExecutor(max_workers=1)
        self.pending: list[tuple[tuple[str, str, bytes, float], asyncio.Future[None]]] = []
        self.flusher: asyncio.Task[None] | None = None
        self.secret = SECRET.encode()

    def commit(self, rows: list[tuple[str, str, bytes, float]]) -> None:
        with self.conn:
            self.conn.executemany(FLOOR_INSERT, rows)

    async def flush(self) -> None:
        loop = asyncio.get_running_loop()
        while self.pending:
            batch, self.pending = self.pending, []
            try:
                await loop.run_in_executor(self.writer, self.commit, [row for row, _ in batch])
            except Exception as exc:  # every waiter of the batch answers 503
                for _, waiter in batch:
                    waiter.set_exception(exc)
            else:
                for _, waiter in batch:
                    waiter.set_result(None)
        self.flusher = None

    async def intake(self, request: web.Request) -> web.Response:
        data = await request.read()
        given = request.headers.get("X-Hub-Signature-256", "")
        expected = "sha256=" + hmac.new(self.secret, data, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, given):
            return web.json_response({"error": "bad signature"}, status=401)
        headers = request.headers
        row = (headers["X-GitHub-Delivery"], headers["X-GitHub-Event"], data, time.time())
        waiter = asyncio.get_running_loop().create_future()
        self.pending.append((row, waiter))
        if self.flusher is None:
            self.flusher = asyncio.create_task(self.flush())
        try:
            await waiter
        except Exception:
            return web.json_response({"error": "not stored"}, status=503)
        return web.json_response({"status": "accepted"}, status=202)


def serve(kind: str, port: int, workdir: Path, workers: int | None, database: str | None) -> None:
    if kind == "floor":
        app = web.Application()
        app.router.add_post("/webhooks/github", Floor(workdir).intake)
        # The floor writes no log line: what the service's lines cost is part of the gap.
        web.run_app(
            app,
            host="127.0.0.1",
            port=port,
            access_log=None,
            print=lambda _msg: print(READY, flush=True),
        )
        return
    if kind == "bare":

        async def bare(request: web.Request) -> web.Response:
            await request.read()
            return web.json_response({"status": "accepted"}, status=202)

        app = web.Application()
        app.router.add_post("/webhooks/github", bare)
    else:
        from bot.core import log_context
        from bot.core.settings import Settings
        from bot.service.app import create_app
        from sandbox.keys import generate_app_key

        private_key, _ = generate_app_key()
        settings = Settings(
            webhook_secret=SECRET,
            app_id="1",
            private_key=private_key,
            repositories=(),
            database=database or str(workdir / "bench.sqlite3"),
            reconcile_interval=0,
        )
        if workers is not None:
            settings = dataclasses.replace(settings, workers=workers)
        # Logged as ``followup-bot serve`` logs, its access log included (to stderr, which
        # the bench sends to a file).
        log_context.configure(
            os.environ.get("BENCH_LOG_LEVEL", settings.log_level),
            os.environ.get("BENCH_LOG_FORMAT", settings.log_format),
        )
        from bot.core.access_log import AccessLogger

        web.run_app(
            create_app(settings),
            host="127.0.0.1",
            port=port,
            access_log_class=AccessLogger,
            print=lambda _msg: print(READY, flush=True),
        )
        return
    web.run_app(app, host="127.0.0.1", port=port, print=lambda _msg: print(READY, flush=True))


# --- load side ----------------------------------------------------------------


async def post(session: aiohttp.ClientSession, url: str) -> float:
    start = time.perf_counter()
    data, headers = next_delivery()
    async with session.post(url, data=data, headers=headers) as response:
        await response.read()
        if response.status != 202:
            raise RuntimeError(f"unexpected {response.status}")
    return time.perf_counter() - start


async def throughput(url: str, total: int, concurrency: int) -> float:
    async with aiohttp.ClientSession() as session:
        remaining = total

        async def sender() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await post(session, url)

        start = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(concurrency)))
        return total / (time.perf_counter() - start)


async def steady(url: str, rate: float, seconds: float) -> list[float]:
    async with aiohttp.ClientSession() as session:
        tasks = []
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)  # pacing the load, not measuring by it
            tasks.append(asyncio.create_task(post(session, url)))
        return list(await asyncio.gather(*tasks))


# --- sustained (open-loop) ------------------------------------------------------

P99_LIMIT_MS = 50.0
GROWTH_LIMIT = 0.05  # of the deliveries sent in the step
CLIENT_CONNECTIONS = 1000  # a cap on sockets only; waiting for one counts as latency
REQUEST_TIMEOUT = 15.0


async def post_at(session: aiohttp.ClientSession, url: str, slot: float) -> float:
    """Latency from the delivery's timetable slot to its 202; ``inf`` if it failed."""
    data, headers = next_delivery()
    try:
        async with session.post(url, data=data, headers=headers) as response:
            await response.read()
            ok = response.status == 202
    except (aiohttp.ClientError, TimeoutError):
        ok = False
    return time.perf_counter() - slot if ok else math.inf


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


@dataclass(frozen=True)
class Step:
    offered: float
    sent: int
    sent_per_second: float  # timetable slots actually started per second
    acked_per_second: float  # 202s per second, first slot to last answer
    p50_ms: float
    p99_ms: float
    failed: int
    depth_start: int | None  # inbox deliveries QUEUED/RUNNING (intake only)
    depth_end: int | None

    @property
    def growth(self) -> int | None:
        if self.depth_start is None or self.depth_end is None:
            return None
        return self.depth_end - self.depth_start

    @property
    def sustained(self) -> bool:
        flat = self.growth is None or self.growth < GROWTH_LIMIT * self.sent
        return self.failed == 0 and self.p99_ms < P99_LIMIT_MS and flat


async def open_loop(
    session: aiohttp.ClientSession, url: str, rate: float, seconds: float
) -> tuple[list[float], float, float]:
    """Start one request per timetable slot; (latencies, sending time, total time)."""
    count = int(rate * seconds)
    tasks = []
    start = time.perf_counter()
    for i in range(count):
        slot = start + i / rate
        delay = slot - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)  # pacing the load, not measuring by it
        tasks.append(asyncio.create_task(post_at(session, url, slot)))
    sending = time.perf_counter() - start
    latencies = list(await asyncio.gather(*tasks))
    return latencies, sending, time.perf_counter() - start


async def drain(inbox: Store, limit: float) -> None:
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        if await inbox.count_unfinished() == 0:
            return
        await asyncio.sleep(0.1)


async def sustained(url: str, inbox: Store | None, args: argparse.Namespace) -> list[Step]:
    steps = []
    connector = aiohttp.TCPConnector(limit=CLIENT_CONNECTIONS)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        for rate in args.rates:
            if inbox is not None:
                await drain(inbox, args.drain_seconds)
            await asyncio.sleep(0.5)  # let the server settle (WAL checkpoint, GC)
            depth_start = None if inbox is None else await inbox.count_unfinished()
            latencies, sending, total = await open_loop(session, url, rate, args.step_seconds)
            depth_end = None if inbox is None else await inbox.count_unfinished()
            acked = [x for x in latencies if math.isfinite(x)]
            steps.append(
                Step(
                    offered=rate,
                    sent=len(latencies),
                    sent_per_second=len(latencies) / max(sending, 1 / rate),
                    acked_per_second=len(acked) / total,
                    p50_ms=statistics.median(latencies) * 1000,
                    p99_ms=percentile(latencies, 0.99) * 1000,
                    failed=len(latencies) - len(acked),
                    depth_start=depth_start,
                    depth_end=depth_end,
                )
            )
    return steps


def capacity(steps: list[Step]) -> float:
    """The highest offered rate sustained (0 if none)."""
    return max((step.offered for step in steps if step.sustained), default=0.0)


def fmt_ms(value: float) -> str:
    return "timeout" if math.isinf(value) else f"{value:.1f} ms"


def print_sustained(name: str, steps: list[Step]) -> None:
    intake = steps[0].depth_start is not None
    print(f"\n{name}, open loop, {steps[0].sent / steps[0].offered:.0f} s per rate:")
    extra = " inbox at start | inbox at end | growth |" if intake else ""
    print(f"| offered/s | sent/s | acked/s | p50 ack | p99 ack | failed |{extra} sustained |")
    print("|---|---|---|---|---|---|" + ("---|" * 3 if intake else "") + "---|")
    for st in steps:
        cells = [
            f"{st.offered:.0f}",
            f"{st.sent_per_second:.0f}",
            f"{st.acked_per_second:.0f}",
            fmt_ms(st.p50_ms),
            fmt_ms(st.p99_ms),
            str(st.failed),
        ]
        if intake:
            growth = st.growth or 0
            share = 100 * growth / st.sent
            cells += [str(st.depth_start), str(st.depth_end), f"{growth:+d} ({share:+.1f} %)"]
        cells.append("yes" if st.sustained else "no")
        print("| " + " | ".join(cells) + " |")


def _stat(path: Path) -> list[str]:
    """The fields of a ``/proc/PID/stat`` after the command name (which may hold spaces)."""
    return path.read_text().rsplit(")", 1)[1].split()


def _cpu(fields: list[str]) -> tuple[float, float]:
    """(user, system) CPU seconds from a process's stat fields."""
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pids: list[int]) -> tuple[float, float]:
    """(user, system) CPU seconds used so far by ``pids`` and their children (PostgreSQL's
    backends), from /proc (Linux)."""
    user = system = 0.0
    for path in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = _stat(path)
        except OSError:
            continue  # a process that just ended
        if int(path.parent.name) in pids or int(fields[1]) in pids:
            more_user, more_system = _cpu(fields)
            user, system = user + more_user, system + more_system
    return user, system


@dataclass(frozen=True)
class Cpu:
    """CPU the server spent per delivery in a paced run, the intake's inbox drained."""

    user_us: float
    system_us: float

    @property
    def total_us(self) -> float:
        return self.user_us + self.system_us


async def cpu_per_delivery(
    url: str, pids: list[int], inbox: Store | None, log: Path, args: argparse.Namespace
) -> tuple[Cpu, float]:
    """Phase 4: ``--cpu-rate`` deliveries/s for ``--cpu-seconds``; the server's CPU time
    (the intake's until its inbox is empty again) over the deliveries sent, and the log
    lines it wrote per delivery. Unlike the capacities, this hardly moves with what else
    the machine is doing."""
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    connector = aiohttp.TCPConnector(limit=CLIENT_CONNECTIONS)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        if inbox is not None:
            await drain(inbox, args.drain_seconds)
        lines = _lines(log)
        user, system = cpu_seconds(pids)
        latencies, _sending, _total = await open_loop(session, url, args.cpu_rate, args.cpu_seconds)
        if inbox is not None:
            await drain(inbox, 60.0)
        user_after, system_after = cpu_seconds(pids)
    count = len(latencies)
    cpu = Cpu((user_after - user) / count * 1e6, (system_after - system) / count * 1e6)
    return cpu, (_lines(log) - lines) / count


def _lines(log: Path) -> int:
    with log.open("rb") as stream:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: stream.read(1 << 16), b""))


@dataclass(frozen=True)
class Result:
    per_second: dict[int, float]  # by number of concurrent senders
    p50_ms: float
    p99_ms: float
    steps: list[Step]
    cpu: Cpu  # a delivery a handler wants: intake, then a worker's claim, dispatch, end
    cpu_intake: Cpu  # a delivery no handler wants: the intake alone
    log_lines: float  # per delivery a handler wants


@contextlib.asynccontextmanager
async def inbox_of(
    kind: str, postgres: Postgres | None, workdir: Path
) -> AsyncIterator[Store | None]:
    """The intake's inbox, read through the bot's own store opened read-only (None for
    the floor and the bare handler, which have no workers to wait for)."""
    if kind != "intake":
        yield None
        return
    database = postgres.url if postgres else str(workdir / "bench.sqlite3")
    async with opened_store(database, Access.READ) as store:
        yield store


async def measure(kind: str, args: argparse.Namespace, postgres: Postgres | None = None) -> Result:
    """One server under every phase; ``postgres``: the intake on that database instead of
    a SQLite file (the database server's CPU counted with the bot's)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        with log.open("wb") as log_file:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--serve",
                kind,
                "--port",
                str(port),
                "--workdir",
                tmp,
                *(("--workers", str(args.workers)) if args.workers is not None else ()),
                *(("--database", postgres.url) if postgres is not None else ()),
                stdout=asyncio.subprocess.PIPE,
                stderr=log_file,
                env={
                    **os.environ,
                    "PYTHONUNBUFFERED": "1",
                    "BENCH_LOG_FORMAT": args.log_format,
                    "BENCH_LOG_LEVEL": args.log_level,
                },
            )
        assert proc.stdout is not None
        try:
            while READY not in (line := (await proc.stdout.readline()).decode()):
                if not line:
                    raise RuntimeError(f"the {kind} server exited before it was ready")
            url = f"http://127.0.0.1:{port}/webhooks/github"
            await throughput(url, 100, 4)  # warm-up
            per_second = {
                senders: await throughput(url, args.requests, senders)
                for senders in args.concurrency
            }
            latencies = sorted(await steady(url, args.rate, args.seconds))
            async with inbox_of(kind, postgres, Path(tmp)) as inbox:
                steps = await sustained(url, inbox, args)
                pids = [proc.pid, *([postgres.server_pid] if postgres else [])]
                cpu, log_lines = await cpu_per_delivery(url, pids, inbox, log, args)
                use_event(UNWANTED_EVENT)
                try:
                    cpu_intake, _ = await cpu_per_delivery(url, pids, inbox, log, args)
                finally:
                    use_event(WANTED_EVENT)
        finally:
            proc.terminate()
            await proc.wait()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return Result(
        per_second,
        statistics.median(latencies) * 1000,
        p99 * 1000,
        steps,
        cpu,
        cpu_intake,
        log_lines,
    )


@dataclass(frozen=True)
class Postgres:
    url: str  # the bench's own database on the server
    server_pid: int


FLOOR = "durable floor"


async def main(args: argparse.Namespace) -> None:
    use_subjects(args.subjects)
    servers = [
        (FLOOR, await measure("floor", args)),
        ("followup-bot intake (SQLite)", await measure("intake", args)),
    ]
    if args.bare:
        servers.append(("bare aiohttp handler", await measure("bare", args)))
    if args.postgres:
        server = start_server(durable=True)
        try:
            postgres = Postgres(await create_database(server.url, "bench"), server.process.pid)
            servers.append(
                ("followup-bot intake (PostgreSQL)", await measure("intake", args, postgres))
            )
        finally:
            server.stop()
    report(servers, args)


def report(servers: list[tuple[str, Result]], args: argparse.Namespace) -> None:
    floor = servers[0][1]
    print(
        f"{args.requests} deliveries of {len(BODIES[0][0])} B on {args.subjects} subject(s)"
        " per sender count; "
        f"latency at a steady {args.rate:.0f}/s for {args.seconds:.0f} s"
    )
    senders = args.concurrency
    head = " | ".join(f"deliveries/s, {n} senders" for n in senders)
    print(f"| server | {head} | p50 ack | p99 ack |")
    print("|---|" + "---|" * (len(senders) + 2))
    for name, r in servers:
        rates = " | ".join(f"{r.per_second[n]:.0f}" for n in senders)
        print(f"| {name} | {rates} | {r.p50_ms:.1f} ms | {r.p99_ms:.1f} ms |")
    for name, r in servers[1:]:
        ratios = ", ".join(
            f"{r.per_second[n] / floor.per_second[n]:.2f} ({n} senders)" for n in senders
        )
        print(f"ratio {name}/floor (deliveries/s): {ratios}")

    for name, r in servers:
        print_sustained(name, r.steps)
    print("\np50 and p99 ack against the floor's, per offered rate:")
    print("| offered/s | " + " | ".join(f"{name}: p50 / p99" for name, _ in servers[1:]) + " |")
    print("|---|" + "---|" * (len(servers) - 1))
    for i, step in enumerate(floor.steps):
        cells = [
            f"{r.steps[i].p50_ms / step.p50_ms:.2f}x / {r.steps[i].p99_ms / step.p99_ms:.2f}x"
            for _, r in servers[1:]
        ]
        print(f"| {step.offered:.0f} | " + " | ".join(cells) + " |")
    top = max(args.rates)
    caps = {name: capacity(r.steps) for name, r in servers}
    shown = ", ".join(
        f"{name} " + (f"≥ {cap:.0f}" if cap == top else f"{cap:.0f}") + "/s"
        for name, cap in caps.items()
    )
    print(
        f"\nsustained capacity (p99 ack < {P99_LIMIT_MS:.0f} ms, no failure, inbox growth"
        f" < {GROWTH_LIMIT:.0%} of the step): {shown}"
    )

    print(
        f"\nserver CPU per delivery at {args.cpu_rate:.0f}/s for {args.cpu_seconds:.0f} s"
        " (an intake's until its inbox is empty; PostgreSQL's own processes included);"
        f" {WANTED_EVENT}: a handler wants it (intake and worker), {UNWANTED_EVENT}: none"
        " does (the intake alone):"
    )
    print(
        f"| server | {WANTED_EVENT}: user | system | total | x floor | log lines"
        f" | {UNWANTED_EVENT}: total | x floor |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, r in servers:
        c, alone = r.cpu, r.cpu_intake
        print(
            f"| {name} | {c.user_us:.0f} µs | {c.system_us:.0f} µs | {c.total_us:.0f} µs"
            f" | {c.total_us / floor.cpu.total_us:.2f} | {r.log_lines:.2f}"
            f" | {alone.total_us:.0f} µs | {alone.total_us / floor.cpu_intake.total_us:.2f} |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rates", type=float, nargs="+", default=[100, 200, 400, 800, 1200])
    parser.add_argument("--step-seconds", type=float, default=3.0)
    parser.add_argument("--drain-seconds", type=float, default=5.0)
    parser.add_argument("--subjects", type=int, default=1)
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="also the intake on PostgreSQL (a server started here, with fsync)",
    )
    parser.add_argument("--database", help=argparse.SUPPRESS)
    parser.add_argument("--cpu-rate", type=float, default=400.0)
    parser.add_argument("--cpu-seconds", type=float, default=5.0)
    parser.add_argument(
        "--workers", type=int, help="the intake's inbox workers (default: the service's)"
    )
    parser.add_argument(
        "--bare", action="store_true", help="also an aiohttp handler that checks and keeps nothing"
    )
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="the intake's log lines"
    )
    parser.add_argument("--log-level", default="INFO", help="the intake's log level")
    parser.add_argument("--serve", choices=("floor", "bare", "intake"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.serve:
        serve(parsed.serve, parsed.port, parsed.workdir, parsed.workers, parsed.database)
    else:
        asyncio.run(main(parsed))
