"""The TCP sockets both transports listen on, made one way.

Bound here rather than by uvicorn or the gRPC server so that a taken port is
one line naming its setting (service.ops.serve), and so that ``serve --workers
N``'s workers can share both ports (SO_REUSEPORT, service.ops.workers).
"""

from __future__ import annotations

import socket

from service.settings import Settings


def shares_ports(settings: Settings) -> bool:
    """Whether this process is one of several workers on the same ports
    (service.ops.workers): then both are bound with SO_REUSEPORT."""
    return (settings.workers or 1) > 1


def family(host: str) -> socket.AddressFamily:
    """IPv6 for a host with a colon (``::``, ``[::1]``), else IPv4."""
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def bound_socket(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    """A TCP socket bound to ``host:port`` (brackets around an IPv6 host
    allowed), not listening yet; SO_REUSEPORT when ``reuse_port``. An
    OSError when the port is taken or the host is not this machine's."""
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on a connection whose
    # socket says TCP (accepted ones inherit proto 0 otherwise), and without it
    # Nagle's algorithm held every keep-alive response back until the client's
    # delayed ACK (Linux delays one by 40 ms at least).
    sock = socket.socket(family(name), socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((name, port))
    except OSError:
        sock.close()
        raise
    return sock
