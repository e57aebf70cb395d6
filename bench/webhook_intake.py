"""Webhook intake: deliveries/s and acknowledgement latency, side by side with a bare handler.

Two servers run as child processes on loopback, one after the other, under the
same load from this process:

- ``intake``: the real service (``bot.service.app.create_app``): signature check,
  dedupe, durable write to the SQLite inbox, 202; its workers drain the inbox
  meanwhile (the event has no handler, so the cost is the inbox's own);
- ``bare``: an aiohttp handler that reads the body and answers 202.

Phase 1 (throughput): ``--requests`` signed deliveries from each number of
concurrent senders in ``--concurrency``, as fast as they are answered (the
inbox commits concurrent deliveries together, so more senders, fewer flushes).
Phase 2 (latency): a steady ``--rate`` requests/s for ``--seconds``, reporting
p50/p99 acknowledgement latency.

Usage: python bench/webhook_intake.py [--requests 2000] [--rate 200] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web

SECRET = "bench-secret"
BODY = json.dumps(
    {"zen": "Keep it logically awesome.", "hook_id": 1, "repository": {"full_name": "o/r"}}
    | {"padding": "x" * 6000}  # real push payloads are several KB
).encode()
READY = "ready"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- child side ---------------------------------------------------------------


def serve(kind: str, port: int, workdir: Path) -> None:
    if kind == "bare":

        async def bare(request: web.Request) -> web.Response:
            await request.read()
            return web.json_response({"status": "accepted"}, status=202)

        app = web.Application()
        app.router.add_post("/webhooks/github", bare)
    else:
        from bot.service.app import create_app
        from bot.service.settings import Settings
        from sandbox.keys import generate_app_key

        private_key, _ = generate_app_key()
        settings = Settings(
            webhook_secret=SECRET,
            app_id="1",
            private_key=private_key,
            repositories=(),
            database=str(workdir / "bench.sqlite3"),
            reconcile_interval=0,
        )
        app = create_app(settings)
    web.run_app(app, host="127.0.0.1", port=port, print=lambda _msg: print(READY, flush=True))


# --- load side ----------------------------------------------------------------


def headers() -> dict[str, str]:
    signature = hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()
    return {
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": f"sha256={signature}",
        "Content-Type": "application/json",
    }


async def post(session: aiohttp.ClientSession, url: str) -> float:
    start = time.perf_counter()
    async with session.post(url, data=BODY, headers=headers()) as response:
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


@dataclass(frozen=True)
class Result:
    per_second: dict[int, float]  # by number of concurrent senders
    p50_ms: float
    p99_ms: float


async def measure(kind: str, args: argparse.Namespace) -> Result:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--serve",
            kind,
            "--port",
            str(port),
            "--workdir",
            tmp,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert proc.stdout is not None
        try:
            while READY not in (await proc.stdout.readline()).decode():
                pass
            url = f"http://127.0.0.1:{port}/webhooks/github"
            await throughput(url, 100, 4)  # warm-up
            per_second = {
                senders: await throughput(url, args.requests, senders)
                for senders in args.concurrency
            }
            latencies = sorted(await steady(url, args.rate, args.seconds))
        finally:
            proc.terminate()
            await proc.wait()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return Result(per_second, statistics.median(latencies) * 1000, p99 * 1000)


async def main(args: argparse.Namespace) -> None:
    bare = await measure("bare", args)
    intake = await measure("intake", args)
    print(
        f"{args.requests} deliveries of {len(BODY)} B per sender count; "
        f"latency at a steady {args.rate:.0f}/s for {args.seconds:.0f} s"
    )
    senders = args.concurrency
    head = " | ".join(f"deliveries/s, {n} senders" for n in senders)
    print(f"| server | {head} | p50 ack | p99 ack |")
    print("|---|" + "---|" * (len(senders) + 2))
    for name, r in (("bare aiohttp handler", bare), ("followup-bot intake", intake)):
        rates = " | ".join(f"{r.per_second[n]:.0f}" for n in senders)
        print(f"| {name} | {rates} | {r.p50_ms:.1f} ms | {r.p99_ms:.1f} ms |")
    ratios = ", ".join(
        f"{intake.per_second[n] / bare.per_second[n]:.2f} ({n} senders)" for n in senders
    )
    print(f"ratio intake/bare (deliveries/s): {ratios}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--serve", choices=("bare", "intake"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    if parsed.serve:
        serve(parsed.serve, parsed.port, parsed.workdir)
    else:
        asyncio.run(main(parsed))
