"""The PostgreSQL inbox against a queue library made for it (procrastinate), same workload.

One workload, run through each system in turn on the same PostgreSQL server, each in a
database of its own: jobs spread over ``--subjects`` subjects (a pin, a PR), whose jobs
must run one at a time and in the order queued; each job records when it started and
ended (an append to a file per process, which a ``kill -9`` does not lose) and waits
``--work-ms`` (a GitHub round trip). Two replicas (processes) with ``--workers`` each.

- ours: ``bot.store.postgres.PostgresStore`` and ``bot.service.inbox.Inbox`` (claims with
  ``SKIP LOCKED``, the subject as the ordering, ``LISTEN/NOTIFY``, a dead replica's claims
  re-queued once its session lock is free, looked for every 5 s);
- procrastinate: one task, the subject as its ``lock`` (jobs sharing a lock run one at a
  time, oldest first), the job's id as its ``queueing_lock``; its workers beat every
  second, and each replica re-queues jobs whose worker has not beaten for ``--stalled``
  seconds (``get_stalled_jobs`` and ``retry_job``, checked every second: procrastinate
  leaves that loop, or a periodic task doing it, to the application).

Phases, same replicas throughout: a backlog of ``--jobs`` queued before the replicas
start (throughput); ``--rate`` jobs/s for ``--seconds`` (latency from enqueue to the
job's end); a burst of ``--burst`` jobs during which one replica is killed with SIGKILL
while it runs jobs (how long until each interrupted job starts again elsewhere, jobs
lost, jobs ended twice); then ``--redeliver`` jobs that already ran are queued again
under the same id (as a sender's redelivery is): how many run again. Per-subject order
is checked over the first three phases (a job may not start before the subject's
previous job has ended). The replicas' CPU and that of the database's server processes
(its backends for this database) are read from /proc over the steady phase.

Each system runs in its own Python (``--procrastinate-python``: a virtual environment
with procrastinate installed, which the project does not depend on); this process only
starts them and compares what they recorded.

Usage: python bench/queue_library.py --procrastinate-python VENV/bin/python
       [--postgres URL] [--jobs 1000] [--subjects 24] [--work-ms 20] [--rate 100]
       [--seconds 10] [--burst 300] [--redeliver 100] [--workers 4] [--stalled 5]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import itertools
import json
import logging
import os
import signal
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OURS = "ours"
PROCRASTINATE = "procrastinate"
READY = "ready"
REPLICAS = 2
RECOVERY_POLL = 1.0  # how often a procrastinate replica looks for stalled jobs
HEARTBEAT = 1.0  # procrastinate's worker heartbeat (its default: 10 s, stalled after 30 s)
DONE_TIMEOUT = 300.0


# --- what a job records ---------------------------------------------------------------


class Recorder:
    """``S job time`` when a job starts and ``F job time`` when it ends, appended
    unbuffered to this process's file, so a SIGKILL loses nothing written."""

    def __init__(self, folder: Path, system: str) -> None:
        path = folder / f"{system}-{os.getpid()}.log"
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, kind: str, job: str) -> None:
        os.write(self.fd, f"{kind} {job} {time.time():.6f}\n".encode())


async def work(record: Recorder, job: str, seconds: float) -> None:
    record("S", job)
    await asyncio.sleep(seconds)
    record("F", job)


def job_key(subject: int, seq: int) -> str:
    return f"s{subject}-{seq}"


def parse_key(job: str) -> tuple[str, int]:
    subject, _, seq = job.rpartition("-")
    return subject, int(seq)


# --- the two systems (each imported only in its own Python) ---------------------------


class Ours:
    def __init__(self, url: str) -> None:
        from bot.store.postgres import PostgresStore

        self.store = PostgresStore(url)

    async def open(self) -> None:
        await self.store.open()

    async def close(self) -> None:
        await self.store.close()

    async def unfinished(self) -> int:
        return await self.store.count_unfinished()

    async def enqueue(self, job: str, subject: str) -> bool:
        from bot.store.protocol import Delivery

        payload = json.dumps({"job": job}).encode()
        delivery = Delivery(job, "internal", "bench", payload, subject, time.time())
        return await self.store.enqueue(delivery)

    @staticmethod
    async def replica(url: str, record: Recorder, args: argparse.Namespace) -> None:
        from bot.service.inbox import Inbox
        from bot.store.protocol import Delivery

        async def dispatch(delivery: Delivery) -> None:
            await work(record, json.loads(delivery.payload)["job"], args.work_ms / 1000)

        system = Ours(url)
        await system.open()
        inbox = Inbox(system.store, dispatch, workers=args.workers)
        await inbox.start()
        print(READY, flush=True)
        await stopped()
        await inbox.stop()
        await system.close()


def procrastinate_app(url: str, record: Recorder | None, seconds: float) -> Any:
    # Imported by name: the project does not depend on it (nor have its types).
    procrastinate = importlib.import_module("procrastinate")
    logging.getLogger("procrastinate").setLevel(logging.ERROR)  # as quiet as ours here
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    async def job(job: str) -> None:
        assert record is not None  # only workers run jobs
        await work(record, job, seconds)

    app.task(name="job")(job)
    return app


class Procrastinate:
    def __init__(self, url: str) -> None:
        self.app = procrastinate_app(url, None, 0.0)

    async def open(self) -> None:
        await self.app.open_async()
        await self.app.schema_manager.apply_schema_async()

    async def close(self) -> None:
        await self.app.close_async()

    async def unfinished(self) -> int:
        row = await self.app.connector.execute_query_one_async(
            "SELECT count(*) AS n FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
        )
        return int(row["n"])

    async def enqueue(self, job: str, subject: str) -> bool:
        already = importlib.import_module("procrastinate.exceptions").AlreadyEnqueued
        task = self.app.tasks["job"].configure(lock=subject, queueing_lock=job)
        try:
            await task.defer_async(job=job)
        except already:
            return False
        return True

    @staticmethod
    async def replica(url: str, record: Recorder, args: argparse.Namespace) -> None:
        app = procrastinate_app(url, record, args.work_ms / 1000)
        async with app.open_async():

            async def recover() -> None:
                while True:
                    await asyncio.sleep(RECOVERY_POLL)
                    stalled = await app.job_manager.get_stalled_jobs(
                        seconds_since_heartbeat=args.stalled
                    )
                    for job in stalled:
                        await app.job_manager.retry_job(job)

            recovering = asyncio.create_task(recover())
            worker = asyncio.create_task(
                app.run_worker_async(
                    concurrency=args.workers,
                    update_heartbeat_interval=HEARTBEAT,
                    stalled_worker_timeout=args.stalled,
                    install_signal_handlers=False,
                )
            )
            print(READY, flush=True)
            await stopped()
            worker.cancel()
            recovering.cancel()
            await asyncio.gather(worker, recovering, return_exceptions=True)


SYSTEMS: dict[str, Any] = {OURS: Ours, PROCRASTINATE: Procrastinate}


async def stopped() -> None:
    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    await done.wait()


# --- one system's run (in its own Python) ----------------------------------------------


async def on_server(admin: str, system: str, statement: str) -> None:
    """``statement`` on the server's admin database, outside a transaction."""
    if system == OURS:
        import asyncpg

        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()
    else:
        import psycopg

        async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as aconn:
            await aconn.execute(statement)


async def create_database(admin: str, system: str) -> str:
    name = f"queue_{system}_{uuid.uuid4().hex[:8]}"
    await on_server(admin, system, f'CREATE DATABASE "{name}"')
    base, _, _ = admin.rpartition("/")
    return f"{base}/{name}"


def records(folder: Path, system: str) -> dict[int, list[tuple[str, str, float]]]:
    """Per process id: its (kind, job, time) lines."""
    found = {}
    for path in folder.glob(f"{system}-*.log"):
        lines = [line.split() for line in path.read_text().splitlines()]
        found[int(path.stem.rpartition("-")[2])] = [(k, j, float(t)) for k, j, t in lines]
    return found


def ended(folder: Path, system: str) -> set[str]:
    return {j for lines in records(folder, system).values() for k, j, _ in lines if k == "F"}


async def wait_ended(folder: Path, system: str, jobs: list[str]) -> None:
    deadline = time.monotonic() + DONE_TIMEOUT
    while not set(jobs) <= ended(folder, system):
        if time.monotonic() > deadline:
            return  # what never ended is counted as lost
        await asyncio.sleep(0.1)


async def emptied(system: Any) -> None:
    deadline = time.monotonic() + DONE_TIMEOUT
    while await system.unfinished():
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(0.1)


def cpu_of(pids: list[int]) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


async def backends(url: str, system: str) -> list[int]:
    """The server processes serving this database (PostgreSQL runs one per connection)."""
    name = url.rpartition("/")[2]
    query = f"SELECT pid FROM pg_stat_activity WHERE datname = '{name}'"
    if system == OURS:
        import asyncpg

        conn = await asyncpg.connect(url)
        try:
            return [int(r["pid"]) for r in await conn.fetch(query)]
        finally:
            await conn.close()
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as aconn:
        cursor = await aconn.execute(query)
        return [int(row[0]) for row in await cursor.fetchall()]


@dataclass
class Timeline:
    enqueued: dict[str, tuple[str, float]] = field(default_factory=dict)  # job: phase, time
    marks: dict[str, float] = field(default_factory=dict)
    victim: int = 0
    cpu_replicas: float = 0.0
    cpu_server: float = 0.0
    redelivered_accepted: int = 0


class Queuer:
    def __init__(self, system: Any, subjects: int) -> None:
        self.system = system
        self.subjects = subjects
        self.next_seq: dict[int, int] = defaultdict(int)
        self.count = 0

    async def add(self, phase: str, timeline: Timeline) -> str:
        subject = self.count % self.subjects
        self.count += 1
        job = job_key(subject, self.next_seq[subject])
        self.next_seq[subject] += 1
        timeline.enqueued[job] = (phase, time.time())
        await self.system.enqueue(job, f"s{subject}")
        return job


async def start_replica(args: argparse.Namespace, url: str) -> asyncio.subprocess.Process:
    command = [__file__, "--role", "replica", "--system", args.system, "--url", url]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *command,
        *forwarded(args),
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    if READY not in (await proc.stdout.readline()).decode():
        raise RuntimeError(f"a {args.system} replica did not start")
    return proc


def forwarded(args: argparse.Namespace) -> list[str]:
    return [
        "--workdir", str(args.workdir), "--work-ms", str(args.work_ms),
        "--workers", str(args.workers), "--stalled", str(args.stalled),
    ]  # fmt: skip


async def drive(args: argparse.Namespace) -> None:
    url = await create_database(args.postgres, args.system)
    system = SYSTEMS[args.system](url)
    await system.open()
    timeline = Timeline()
    queuer = Queuer(system, args.subjects)
    folder, name = args.workdir, args.system
    backlog = [await queuer.add("backlog", timeline) for _ in range(args.jobs)]
    replicas = [await start_replica(args, url) for _ in range(REPLICAS)]
    try:
        await wait_ended(folder, name, backlog)
        await measured_steady(args, url, queuer, timeline, [p.pid for p in replicas])
        burst = [await queuer.add("burst", timeline) for _ in range(args.burst)]
        victim = replicas[0]
        await running_on(folder, name, victim.pid)
        victim.kill()
        timeline.marks["killed"] = time.time()
        timeline.victim = victim.pid
        await victim.wait()
        await wait_ended(folder, name, burst)
        await emptied(system)  # the dead replica's claims re-run too
        timeline.marks["redeliver"] = time.time()
        for job in backlog[: args.redeliver]:
            timeline.redelivered_accepted += await system.enqueue(job, parse_key(job)[0])
        await asyncio.sleep(args.redeliver_wait)
    finally:
        for proc in replicas:
            if proc.returncode is None:
                proc.terminate()
                await proc.wait()
        await system.close()
        name_on_server = url.rpartition("/")[2]
        await on_server(args.postgres, args.system, f'DROP DATABASE "{name_on_server}"')
    result = {
        "enqueued": timeline.enqueued,
        "marks": timeline.marks,
        "victim": timeline.victim,
        "cpu_replicas": timeline.cpu_replicas,
        "cpu_server": timeline.cpu_server,
        "redelivered_accepted": timeline.redelivered_accepted,
    }
    (folder / f"{name}.json").write_text(json.dumps(result))


async def measured_steady(
    args: argparse.Namespace, url: str, queuer: Queuer, timeline: Timeline, replicas: list[int]
) -> None:
    """``--rate`` jobs/s for ``--seconds``, until all have ended; the CPU the replicas and
    the database's server processes spent meanwhile."""
    servers = await backends(url, args.system)
    replicas_before, servers_before = cpu_of(replicas), cpu_of(servers)
    steady = []
    start = time.perf_counter()
    for i in range(int(args.rate * args.seconds)):
        await asyncio.sleep(max(0.0, start + i / args.rate - time.perf_counter()))
        steady.append(await queuer.add("steady", timeline))
    await wait_ended(args.workdir, args.system, steady)
    joined = [pid for pid in await backends(url, args.system) if pid not in servers]
    timeline.cpu_replicas = cpu_of(replicas) - replicas_before
    timeline.cpu_server = cpu_of(servers) - servers_before + cpu_of(joined)


async def running_on(folder: Path, system: str, pid: int) -> None:
    """Return once process ``pid`` has a job started and not ended."""
    path = folder / f"{system}-{pid}.log"
    while True:
        with path.open("rb") as stream:  # the file's tail: what it runs now
            stream.seek(max(0, path.stat().st_size - 4096))
            lines = [line.split() for line in stream.read().decode().splitlines()[1:]]
        started = {line[1] for line in lines if line[0] == "S"}
        if started - {line[1] for line in lines if line[0] == "F"}:
            return
        await asyncio.sleep(0.002)


# --- what the records say ----------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    backlog_per_second: float
    p50_ms: float
    p99_ms: float
    order_violations: int
    interrupted: int  # jobs the killed replica had started and not ended
    recovery_s: list[float]  # per interrupted job: kill until it started again elsewhere
    lost: int
    ended_twice: int
    redelivered_ran: int
    redelivered_accepted: int
    cpu_ms_per_job: float  # the replicas' CPU over the steady phase, per job
    server_cpu_ms_per_job: float


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def figures(folder: Path, system: str) -> Figures:
    run = json.loads((folder / f"{system}.json").read_text())
    enqueued: dict[str, tuple[str, float]] = {j: (p, t) for j, (p, t) in run["enqueued"].items()}
    killed, redeliver = run["marks"]["killed"], run["marks"]["redeliver"]
    per_process = records(folder, system)
    starts: dict[str, list[float]] = defaultdict(list)
    ends: dict[str, list[float]] = defaultdict(list)
    again = 0
    for lines in per_process.values():
        for kind, job, at in lines:
            if at >= redeliver:
                again += kind == "S"
                continue
            (starts if kind == "S" else ends)[job].append(at)
    backlog = [j for j, (p, _) in enqueued.items() if p == "backlog"]
    first = min(min(starts[j]) for j in backlog)
    last = max(max(ends[j]) for j in backlog)
    steady = [max(ends[j]) - t for j, (p, t) in enqueued.items() if p == "steady" and ends[j]]
    victim = per_process.get(run["victim"], [])
    victim_ended = {j for k, j, _ in victim if k == "F"}
    interrupted = {j for k, j, _ in victim if k == "S"} - victim_ended
    recovery = [min(t for t in starts[j] if t > killed) - killed for j in interrupted if ends[j]]
    steady_count = sum(1 for p, _ in enqueued.values() if p == "steady")
    return Figures(
        backlog_per_second=len(backlog) / (last - first),
        p50_ms=percentile(steady, 0.5) * 1000,
        p99_ms=percentile(steady, 0.99) * 1000,
        order_violations=violations(enqueued, starts, ends),
        interrupted=len(interrupted),
        recovery_s=sorted(recovery),
        lost=sum(1 for j in enqueued if not ends[j]),
        ended_twice=sum(1 for j in enqueued if len(ends[j]) > 1),
        redelivered_ran=again,
        redelivered_accepted=run["redelivered_accepted"],
        cpu_ms_per_job=run["cpu_replicas"] / steady_count * 1000,
        server_cpu_ms_per_job=run["cpu_server"] / steady_count * 1000,
    )


def violations(
    enqueued: dict[str, tuple[str, float]],
    starts: dict[str, list[float]],
    ends: dict[str, list[float]],
) -> int:
    """Jobs that started before the previous job of their subject had ended for good."""
    by_subject: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for job in enqueued:
        subject, seq = parse_key(job)
        by_subject[subject].append((seq, job))
    count = 0
    for jobs in by_subject.values():
        jobs.sort()
        for (_, earlier), (_, later) in itertools.pairwise(jobs):
            if not ends[earlier] or any(t < max(ends[earlier]) for t in starts[later]):
                count += 1
    return count


def report(found: dict[str, Figures], args: argparse.Namespace) -> None:
    print(
        f"{REPLICAS} replicas x {args.workers} workers; {args.subjects} subjects; jobs wait"
        f" {args.work_ms:.0f} ms; backlog {args.jobs}; steady {args.rate:.0f}/s for"
        f" {args.seconds:.0f} s; burst {args.burst} with one replica killed (SIGKILL);"
        f" {args.redeliver} redelivered"
    )
    names = list(found)
    print("| | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    rows: list[tuple[str, Callable[[Figures], str]]] = [
        ("backlog drained, jobs/s", lambda f: f"{f.backlog_per_second:.0f}"),
        ("steady: p50 enqueue to end", lambda f: f"{f.p50_ms:.1f} ms"),
        ("steady: p99 enqueue to end", lambda f: f"{f.p99_ms:.1f} ms"),
        ("replicas' CPU per job (steady)", lambda f: f"{f.cpu_ms_per_job:.2f} ms"),
        ("PostgreSQL's CPU per job (steady)", lambda f: f"{f.server_cpu_ms_per_job:.2f} ms"),
        ("per-subject order violations", lambda f: str(f.order_violations)),
        ("jobs interrupted by the kill", lambda f: str(f.interrupted)),
        ("kill to restarted elsewhere (min-max)", recovery_cell),
        ("jobs lost", lambda f: str(f.lost)),
        ("jobs ended twice", lambda f: str(f.ended_twice)),
        ("redeliveries (same id) taken / run again", redelivery_cell),
    ]
    for label, cell in rows:
        print(f"| {label} | " + " | ".join(cell(found[n]) for n in names) + " |")


def recovery_cell(f: Figures) -> str:
    if not f.recovery_s:
        return "-"
    return f"{f.recovery_s[0]:.1f}-{f.recovery_s[-1]:.1f} s"


def redelivery_cell(f: Figures) -> str:
    return f"{f.redelivered_accepted} / {f.redelivered_ran}"


def compare(args: argparse.Namespace) -> None:
    pythons = {OURS: sys.executable, PROCRASTINATE: args.procrastinate_python}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for system, python in pythons.items():
            driver = [__file__, "--role", "driver", "--system", system]
            settings = ["--postgres", args.postgres, *forwarded_all(args, folder)]
            os.spawnv(os.P_WAIT, python, [python, *driver, *settings])
        report({system: figures(folder, system) for system in pythons}, args)


def forwarded_all(args: argparse.Namespace, folder: Path) -> list[str]:
    args.workdir = folder
    return [
        *forwarded(args),
        "--jobs", str(args.jobs), "--subjects", str(args.subjects),
        "--rate", str(args.rate), "--seconds", str(args.seconds),
        "--burst", str(args.burst), "--redeliver", str(args.redeliver),
        "--redeliver-wait", str(args.redeliver_wait),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procrastinate-python", default=sys.executable)
    parser.add_argument("--postgres", default=os.environ.get("FOLLOWUP_BOT_TEST_POSTGRES"))
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--subjects", type=int, default=24)
    parser.add_argument("--work-ms", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--burst", type=int, default=300)
    parser.add_argument("--redeliver", type=int, default=100)
    parser.add_argument("--redeliver-wait", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--stalled", type=float, default=5.0)
    parser.add_argument("--role", choices=("driver", "replica"), help=argparse.SUPPRESS)
    parser.add_argument("--system", choices=(OURS, PROCRASTINATE), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "replica":
        record = Recorder(args.workdir, args.system)
        asyncio.run(SYSTEMS[args.system].replica(args.url, record, args))
    elif args.role == "driver":
        asyncio.run(drive(args))
    elif not args.postgres:
        parser.error("--postgres (or FOLLOWUP_BOT_TEST_POSTGRES) names the server")
    else:
        compare(args)


if __name__ == "__main__":
    main()
