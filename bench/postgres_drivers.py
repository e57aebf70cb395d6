"""asyncpg against psycopg 3 (async) on the statements the PostgreSQL store lives on.

One real server (``sandbox.postgres_server``: initdb into a temporary directory), one
connection per driver, interleaved rounds so a busy machine hurts both alike. Each
round runs, per driver, ``--ops`` times: an insert with ON CONFLICT (an enqueue), an
UPDATE ... RETURNING of one row (a claim), and a small SELECT (a handler-log read); a
round trip each, as the store makes them. Reports operations per second per driver,
the median over rounds, and the ratio.

psycopg is not a dependency of the project; install it to run this (``pip install
"psycopg[binary]"``). Usage: python bench/postgres_drivers.py [--ops 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

import asyncpg

from sandbox.postgres_server import create_database, start_server

SCHEMA = """
CREATE TABLE items (id TEXT PRIMARY KEY, status TEXT NOT NULL, attempts INT NOT NULL DEFAULT 0);
"""


async def with_asyncpg(url: str, ops: int, tag: str) -> float:
    conn = await asyncpg.connect(url)
    try:
        start = time.perf_counter()
        for n in range(ops):
            key = f"{tag}-{n}"
            await conn.execute(
                "INSERT INTO items (id, status) VALUES ($1, 'queued') ON CONFLICT (id) DO NOTHING",
                key,
            )
            await conn.fetchrow(
                "UPDATE items SET status = 'running', attempts = attempts + 1 WHERE id = $1"
                " RETURNING id, attempts",
                key,
            )
            await conn.fetch("SELECT id FROM items WHERE id = $1", key)
        return ops / (time.perf_counter() - start)
    finally:
        await conn.close()


async def with_psycopg(url: str, ops: int, tag: str) -> float:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        start = time.perf_counter()
        for n in range(ops):
            key = f"{tag}-{n}"
            await conn.execute(
                "INSERT INTO items (id, status) VALUES (%s, 'queued') ON CONFLICT (id) DO NOTHING",
                (key,),
            )
            cursor = await conn.execute(
                "UPDATE items SET status = 'running', attempts = attempts + 1 WHERE id = %s"
                " RETURNING id, attempts",
                (key,),
            )
            await cursor.fetchone()
            cursor = await conn.execute("SELECT id FROM items WHERE id = %s", (key,))
            await cursor.fetchall()
        return ops / (time.perf_counter() - start)


async def main(args: argparse.Namespace) -> None:
    server = start_server()
    try:
        url = await create_database(server.url, "bench")
        setup = await asyncpg.connect(url)
        await setup.execute(SCHEMA)
        await setup.close()
        drivers: dict[str, Callable[[str, int, str], Awaitable[float]]] = {
            "asyncpg": with_asyncpg,
            "psycopg": with_psycopg,
        }
        rates: dict[str, list[float]] = {name: [] for name in drivers}
        for round_ in range(args.rounds):
            for name, run in drivers.items():
                rates[name].append(await run(url, args.ops, f"{name}-{round_}"))
        print(f"{args.ops} x (insert, update-returning, select) per round, {args.rounds} rounds")
        print("| driver | round trips/s (median) | ops/s (median) |")
        print("|---|---|---|")
        for name, values in rates.items():
            median = statistics.median(values)
            print(f"| {name} | {median * 3:.0f} | {median:.0f} |")
        ratio = statistics.median(rates["asyncpg"]) / statistics.median(rates["psycopg"])
        print(f"ratio asyncpg/psycopg: {ratio:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args()))
