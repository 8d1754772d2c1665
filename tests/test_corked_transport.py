"""service.transports.http.limits.CorkedTransport over a real socket: what one turn of
the loop writes leaves in one write of the socket's transport, in order;
closing and ending the sending side send what is pending first; an abort
drops it."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from service.transports.http.limits import CorkedTransport


@asynccontextmanager
async def corked() -> AsyncIterator[tuple[CorkedTransport, list[bytes], socket.socket]]:
    """A corked transport over one end of a socket pair, the writes reaching
    the socket's own transport, and the other end."""
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    raw, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
    assert isinstance(raw, asyncio.Transport)
    writes: list[bytes] = []
    write = raw.write

    def recording(data: bytes | bytearray | memoryview) -> None:
        writes.append(bytes(data))
        write(data)

    raw.write = recording  # type: ignore[method-assign]
    theirs.setblocking(False)
    try:
        yield CorkedTransport(raw, loop), writes, theirs
    finally:
        raw.abort()
        theirs.close()


async def received(peer: socket.socket, size: int) -> bytes:
    loop = asyncio.get_running_loop()
    out = b""
    while len(out) < size:
        out += await loop.sock_recv(peer, size - len(out))
    return out


def test_one_turns_writes_leave_in_one_write_in_order() -> None:
    async def go() -> None:
        async with corked() as (transport, writes, peer):
            transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
            transport.write(b"")  # nothing to send: nothing pending
            transport.writelines([b"body", bytearray(b"-"), memoryview(b"end")])
            assert writes == []
            assert transport.get_write_buffer_size() == 27
            await asyncio.sleep(0)  # the loop's next callbacks
            assert writes == [b"HTTP/1.1 200 OK\r\n\r\nbody-end"]
            assert await received(peer, 27) == b"HTTP/1.1 200 OK\r\n\r\nbody-end"
            transport.write(b"next")
            await asyncio.sleep(0)
            assert writes[1:] == [b"next"]

    asyncio.run(go())


def test_close_and_write_eof_send_what_is_pending_first() -> None:
    async def go() -> None:
        async with corked() as (transport, writes, peer):
            transport.write(b"answer")
            transport.write_eof()
            assert writes == [b"answer"]
            assert await received(peer, 6) == b"answer"
            assert transport.can_write_eof()
        async with corked() as (transport, writes, peer):
            transport.write(b"last")
            transport.close()
            assert writes == [b"last"]
            assert transport.is_closing()
            assert await received(peer, 4) == b"last"
            transport.write(b"too late")  # after the close: dropped
            await asyncio.sleep(0)
            assert writes == [b"last"]

    asyncio.run(go())


def test_abort_drops_what_is_pending() -> None:
    async def go() -> None:
        async with corked() as (transport, writes, _):
            transport.write(b"never")
            transport.abort()
            await asyncio.sleep(0)
            assert writes == []
            assert transport.get_write_buffer_size() == 0

    asyncio.run(go())


def test_the_rest_is_the_socket_transports() -> None:
    async def go() -> None:
        async with corked() as (transport, _, _):
            assert transport.get_extra_info("socket") is not None
            assert transport.get_extra_info("no such thing", 7) == 7
            transport.pause_reading()
            assert not transport.is_reading()
            transport.resume_reading()
            assert transport.is_reading()
            transport.set_write_buffer_limits(high=1 << 16)
            assert transport.get_write_buffer_limits()[1] == 1 << 16
            assert transport.get_protocol() is not None

    asyncio.run(go())
