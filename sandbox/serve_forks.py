"""A fork server for ``followup-bot`` processes: the imports paid once, a process per fork.

The crash and chaos tests run the bot as a real process and kill it with SIGKILL, some
tests many times. Starting ``python -m bot.cli.main`` costs ~0.9 s of one core, nearly
all of it imports (aiohttp, pydantic models, cryptography, asyncpg…), and those tests
started ~150 of them. Here one *zygote* process imports the bot once; each start is a
``fork`` of it that sets the given environment and runs ``bot.cli.main.main(argv)`` —
the same entry point as the command line, in a process of its own (its own pid, killed
and reaped like any other). A test that must prove the command line itself still
starts ``python -m bot.cli.main`` (``tests/e2e/test_crash_restart.py``).

The protocol, over a Unix ``SOCK_SEQPACKET`` socket (one message per request):
the client sends the JSON ``{"argv": [...], "env": {...}}`` with the write end of a
pipe attached (``SCM_RIGHTS``); the zygote forks, the child makes that pipe its stdout
and stderr, and the zygote answers ``pid <n>``; when the child ends it sends
``exit <code>`` (negative: the signal that ended it, as ``asyncio`` reports it) on the
same connection and closes it. The zygote ends when its stdin closes (its parent left).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

READY = b"zygote ready\n"
START_TIMEOUT = 60.0
_MESSAGE_LIMIT = 1 << 20


# --- the zygote (its own process) -------------------------------------------------------


def _request(message: bytes) -> tuple[list[str], dict[str, str]]:
    """``(argv, env)`` of a start request, as the client wrote it."""
    request = json.loads(message)
    return [str(arg) for arg in request["argv"]], {
        str(k): str(v) for k, v in request["env"].items()
    }


def _child(argv: list[str], env: dict[str, str], output: int, inherited: list[int]) -> None:
    """In the forked child: become the requested process, never return.

    ``inherited`` are the zygote's own descriptors (its socket, the other children's
    connections, its wake-up pipe): closed, so that only the zygote holds them.
    """
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the bot's own subprocesses
        for fd in inherited:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        os.close(null)
        os.environ.clear()
        os.environ.update(env)
        from bot.cli.main import main

        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _reap(waiting: dict[int, socket.socket]) -> None:
    """Every ended child: its exit code to its client, its connection closed."""
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.send(f"exit {os.waitstatus_to_exitcode(status)}".encode())
            conn.close()


def load_app_key(env: dict[str, str]) -> None:
    """Load and check the App's key here, once per key, for every child to inherit.

    The check costs ~45 ms of CPU, as much as a child's whole start after the imports, and
    the crash and chaos tests start hundreds of children with one key file. A key that does
    not load is not kept: the child meets the same error and reports it as the bot would.
    """
    from bot.core.settings import private_key_of
    from bot.github.auth import signing_key

    private_key = private_key_of(env)  # read as the child's settings will read it
    if private_key is not None:
        with contextlib.suppress(Exception):
            signing_key(private_key)


def _serve_forks(path: str) -> None:
    # The imports every started process needs, paid here once.
    import bot.cli.main
    import bot.service.app  # noqa: F401

    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wake-up fd hears it
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listening.bind(path)
    listening.listen()
    waiting: dict[int, socket.socket] = {}
    selector = selectors.EpollSelector()
    selector.register(listening, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "child")
    selector.register(sys.stdin, selectors.EVENT_READ, "parent")
    sys.stdout.buffer.write(READY)
    sys.stdout.buffer.flush()
    while True:
        for key, _ in selector.select():
            if key.data == "parent" and not os.read(sys.stdin.fileno(), 1):
                return  # the parent is gone; running children stay theirs to kill
            if key.data == "child":
                os.read(wake_read, 4096)
                _reap(waiting)
            if key.data == "accept":
                conn, _ = listening.accept()
                message, fds, _, _ = socket.recv_fds(conn, _MESSAGE_LIMIT, 1)
                argv, env = _request(message)
                load_app_key(env)
                pid = os.fork()
                if pid == 0:
                    own = [listening.fileno(), wake_read, wake_write, selector.fileno()]
                    own += [c.fileno() for c in (conn, *waiting.values())]
                    _child(argv, env, fds[0], own)
                os.close(fds[0])
                waiting[pid] = conn
                conn.send(f"pid {pid}".encode())
                _reap(waiting)  # it may have ended before it was listed


# --- the client (the test process) ------------------------------------------------------


class ForkedProcess:
    """The part of ``asyncio.subprocess.Process`` the tests use, for a forked process."""

    def __init__(self, pid: int, stdout: asyncio.StreamReader, control: socket.socket) -> None:
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None
        self._control = control

    def kill(self) -> None:
        """SIGKILL, as ``Process.kill``; a process that has ended already is left alone."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    async def wait(self) -> int:
        if self.returncode is None:
            loop = asyncio.get_running_loop()
            answer = (await loop.sock_recv(self._control, 64)).decode()
            self._control.close()
            if not answer.startswith("exit "):
                raise RuntimeError(f"the fork server ended without the exit of {self.pid}")
            self.returncode = int(answer.split()[1])
        return self.returncode


class ForkServer:
    """One zygote for this process, started on first use, ended at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zygote: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._path = ""
        atexit.register(self.close)  # nothing to do unless a zygote was started

    def _started(self) -> str:
        with self._lock:
            if self._zygote is None or self._zygote.poll() is not None:
                self._dir = tempfile.TemporaryDirectory(prefix="serve-forks-")
                self._path = str(Path(self._dir.name) / "zygote.sock")
                self._zygote = subprocess.Popen(
                    [sys.executable, "-m", "sandbox.serve_forks", self._path],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env={"PATH": os.environ.get("PATH", ""), "PYTHONUNBUFFERED": "1"},
                )
                assert self._zygote.stdout is not None
                if self._zygote.stdout.readline() != READY:
                    raise RuntimeError("the fork server did not start")
            return self._path

    def close(self) -> None:
        with self._lock:
            if self._zygote is not None:
                assert self._zygote.stdin is not None
                self._zygote.stdin.close()
                self._zygote.wait(timeout=10)
                self._zygote = None
            if self._dir is not None:
                self._dir.cleanup()
                self._dir = None

    async def start(self, argv: list[str], env: dict[str, str]) -> ForkedProcess:
        """``followup-bot *argv`` with exactly ``env``; stdout and stderr in one pipe."""
        path = await asyncio.wait_for(asyncio.to_thread(self._started), START_TIMEOUT)
        loop = asyncio.get_running_loop()
        control = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        control.setblocking(False)
        read_end, write_end = os.pipe()
        try:
            await loop.sock_connect(control, path)
            message = json.dumps({"argv": argv, "env": env}).encode()
            socket.send_fds(control, [message], [write_end])
            answer = (await loop.sock_recv(control, 64)).decode()
        except BaseException:
            control.close()
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        if not answer.startswith("pid "):
            control.close()
            os.close(read_end)
            raise RuntimeError(f"the fork server did not start {argv}: {answer!r}")
        stdout = asyncio.StreamReader(loop=loop)
        pipe = os.fdopen(read_end, "rb", buffering=0)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), pipe)
        return ForkedProcess(int(answer.split()[1]), stdout, control)


FORKS = ForkServer()


if __name__ == "__main__":
    _serve_forks(sys.argv[1])
