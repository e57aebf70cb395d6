"""Loopback ports for the servers the test world starts and binds by number."""

from __future__ import annotations

import random
import socket

# Ports for servers the tests start and later bind by number (a replica, a restarted
# server). Below Linux's ephemeral range (32768-60999): a port the kernel hands out for
# outgoing connections (the many clients of a parallel suite) could be taken between
# choosing it and binding it, which made a bot fail to start with "address in use".
LISTEN_PORTS = range(20000, 32000)


def free_port() -> int:
    """A loopback port, outside the ephemeral range, that nothing listens on now."""
    rng = random.SystemRandom()
    while True:
        port = rng.choice(LISTEN_PORTS)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: another server of the suite
            return port
