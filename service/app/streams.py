"""Ending a WatchGame stream when its server shuts down, for both transports.

A client resumes a watch by version (``afterVersion``; over SSE the event id
is the version), and :meth:`service.app.GameApp.watch_game` yields each
version's events together, so a stream ended here, between two items, never
cuts a version in half: the client's resume then misses nothing and sees
nothing twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TypeVar

import anyio

T = TypeVar("T")


async def until_closed(events: AsyncIterator[T], closing: asyncio.Event) -> AsyncIterator[T]:
    """The items of ``events`` until ``closing`` is set, which ends at once
    even while the app waits for the next event."""
    closed = asyncio.ensure_future(closing.wait())
    step: asyncio.Future[T] | None = None
    try:
        while not closing.is_set():
            step = asyncio.ensure_future(_next(events))
            await asyncio.wait({step, closed}, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                return
            done, step = step, None
            try:
                item = done.result()
            except StopAsyncIteration:
                return
            yield item
    finally:
        # Closing, or the client went away: stop the app's generator before
        # anyone calls its aclose() (it cannot close while it is running).
        closed.cancel()
        if step is not None:
            step.cancel()
            # Shielded: a cancelled anyio scope would cancel this wait too.
            with anyio.CancelScope(shield=True):
                await asyncio.wait({step})
            if not step.cancelled():
                step.exception()  # the stream is over; only retrieve it


async def _next(events: AsyncIterator[T]) -> T:
    return await anext(events)
