"""The tenants' webhooks: events queued by :meth:`Webhooks.emit`, delivered
by every replica's task (the package's docstring says how)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import random
import secrets
import socket
import ssl
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

import httpx
import orjson

from service.app.webhooks.signing import DELIVERY_HEADER, SIGNATURE_HEADER, sign
from service.app.webhooks.targets import (
    Endpoint,
    GuardedTransport,
    RefusedTargetError,
    Resolve,
    resolve,
)
from service.ops.telemetry import WEBHOOK_OUTCOMES, Count, LogTally, Metrics
from service.ops.tracing import TracedStore
from service.settings import Settings
from service.store import Store, StoreUnavailableError

log = logging.getLogger("railyard.webhooks")

#: The kinds of event a webhook receives.
KINDS: Final = frozenset(
    {"game.created", "game.started", "seat.joined", "seat.left", "round.ended", "game.finished"}
)

#: The User-Agent of every delivery.
USER_AGENT: Final = "railyard-webhooks/1"
#: Retries moved back into a tenant's queue by one look (the rest, next look).
PROMOTE_BATCH: Final = 256
#: Seconds between two counts of the queues for the railyard_webhook_queued gauge.
COUNT_EVERY: Final = 15.0
#: Seconds a consumer holding nothing must have been silent to be forgotten
#: (a process run that ended: each run is a consumer of its own), and
#: between two looks for such consumers.
FORGET_AFTER: Final = 86400.0
FORGET_EVERY: Final = 3600.0
#: Each retry's delay is this share of the nominal one, or more (up to all of
#: it), at random: failures of many events at once do not come back at once.
JITTER: Final = 0.25


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event on its way to its tenant's webhook, as queued: the body is
    fixed when the event is emitted, so every attempt sends the same bytes
    under the same delivery id."""

    delivery_id: str
    body: bytes
    #: When the event was emitted (unix seconds): retries stop ``webhook_retry_for`` later.
    created: float
    #: Attempts that failed so far.
    failures: int = 0

    def to_entry(self) -> bytes:
        return orjson.dumps(
            {
                "id": self.delivery_id,
                "body": self.body.decode(),
                "created": self.created,
                "failures": self.failures,
            }
        )

    @classmethod
    def from_entry(cls, entry: bytes) -> Delivery:
        """ValueError when ``entry`` is not one :meth:`to_entry` wrote."""
        try:
            fields = orjson.loads(entry)
            return cls(
                str(fields["id"]),
                str(fields["body"]).encode(),
                float(fields["created"]),
                int(fields["failures"]),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a queued webhook: {exc}") from None


def event_body(
    delivery_id: str, kind: str, created: int, tenant: str, game_id: str, data: Mapping[str, Any]
) -> bytes:
    """The JSON a webhook receives (docs/operations.md "Webhooks")."""
    return orjson.dumps(
        {
            "id": delivery_id,
            "type": kind,
            "created": created,
            "tenant": tenant,
            "gameId": game_id,
            "data": dict(data),
        }
    )


@dataclass(slots=True)
class _Attempt:
    """A delivery under way in this process."""

    tenant: str
    entry_id: str
    entry: bytes
    task: asyncio.Task[None] | None = None
    #: Cut short by stop(): to hand back to the queue.
    cut: bool = False


class Webhooks:
    """The tenants' webhooks (none configured: :meth:`emit` does nothing).

    :meth:`emit` queues an event in the store; :meth:`start` runs this
    process's delivery task until :meth:`stop`; :meth:`deliver_due` is one
    round of that task, for tests that move ``clock`` by hand."""

    def __init__(
        self,
        store: Store | None = None,
        settings: Settings | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
        *,
        consumer: str | None = None,
        resolver: Resolve = resolve,
        ssl_context: ssl.SSLContext | None = None,
        rng: random.Random | None = None,
    ) -> None:
        """``clock``: unix seconds, for the events' times, the signatures'
        timestamps, retries' due times and their 24 hours; ``consumer``: this
        process's name in the queues (unique per process run); ``resolver``,
        ``ssl_context``: how hosts are resolved and TLS verified (tests).
        Without a ``store`` there are no webhooks, whatever the settings."""
        settings = settings or Settings()
        #: Each tenant's webhook, by tenant.
        self.endpoints: dict[str, Endpoint] = {}
        if store is not None:
            self.endpoints = settings.webhook_endpoints()
        self._store = store
        # The delivery task's own calls go untraced: they are no caller's
        # calls, and would be a root span each, every second.
        self._untraced = store.inner if isinstance(store, TracedStore) else store
        self._clock = clock
        #: This process's name as the queues' consumer.
        self.consumer = consumer or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._allow_private = settings.webhook_allow_private
        self._timeout = settings.webhook_timeout
        self._concurrency = settings.webhook_concurrency
        self._tenant_concurrency = settings.webhook_tenant_concurrency
        self._retry_for = settings.webhook_retry_for
        self._backoff = settings.webhook_backoff
        self._backoff_max = settings.webhook_backoff_max
        self._claim_idle = settings.webhook_claim_idle
        self._poll = settings.webhook_poll
        self._resolver = resolver
        self._ssl_context = ssl_context
        self._rng = rng or random.Random()
        if metrics is not None:
            self._outcomes = metrics.webhook_deliveries
            self._queued = metrics.webhook_queued
        else:
            self._outcomes = {outcome: Count() for outcome in WEBHOOK_OUTCOMES}
            self._queued = Count()
        self._client: httpx.AsyncClient | None = None
        self._attempts: dict[tuple[str, str], _Attempt] = {}
        self._per_tenant: Counter[str] = Counter()
        self._turn = 0  # which tenant a round serves first
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._outage = LogTally(log, "webhooks: the queue is unreachable", 60.0)

    # ------------------------------------------------------------------ emit

    def enabled(self, tenant: str | None) -> bool:
        """Whether ``tenant`` has a webhook (callers skip building the data)."""
        return tenant is not None and tenant in self.endpoints

    async def emit(
        self, tenant: str | None, kind: str, game_id: str, data: Mapping[str, Any]
    ) -> None:
        """Queue ``kind`` (one of :data:`KINDS`) about ``game_id`` for
        ``tenant``'s URL, durably, before returning; nothing when the tenant
        has no webhook. ``data``: the event's details (JSON-serializable).
        Raises :class:`~service.store.StoreUnavailableError` when the queue
        cannot be written."""
        if kind not in KINDS:
            raise ValueError(f"{kind!r} is not a webhook event ({', '.join(sorted(KINDS))})")
        if tenant is None or tenant not in self.endpoints:
            return
        created = self._clock()
        delivery_id = str(uuid.uuid4())
        body = event_body(delivery_id, kind, int(created), tenant, game_id, data)
        assert self._store is not None  # (there are endpoints)
        await self._store.webhook_push(tenant, Delivery(delivery_id, body, created).to_entry())
        self._wake.set()  # this replica starts it at once

    # ------------------------------------------------------------ the task

    @property
    def _queue(self) -> Store:
        """The store, for the delivery task's calls (only made with endpoints,
        which only a store brings)."""
        assert self._untraced is not None
        return self._untraced

    def start(self) -> None:
        """Run this process's delivery task (nothing to run without webhooks)."""
        if not self.endpoints or self._task is not None:
            return
        self._stopping.clear()
        # httpx logs every request at INFO with its URL, which may carry a
        # receiver's token: this module's own lines name the tenant instead.
        logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger("httpx").level))
        self._task = asyncio.get_running_loop().create_task(self._run(), name="railyard-webhooks")
        log.info(
            "webhooks: %d tenant(s), delivering as %s (%d at once, %d per tenant)",
            len(self.endpoints),
            self.consumer,
            self._concurrency,
            self._tenant_concurrency,
        )

    async def stop(self, grace: float = 5.0) -> None:
        """Stop taking events; let the deliveries under way finish (``grace``
        seconds at most), and hand those cut short back to the queue, due at
        once, for another replica (the receiver may have them already: it
        drops duplicates by their id)."""
        self._stopping.set()
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        attempts = list(self._attempts.values())
        tasks = [a.task for a in attempts if a.task is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        now = self._clock()
        for attempt in attempts:
            if attempt.cut:
                with contextlib.suppress(StoreUnavailableError):  # (reclaimed after the idle time)
                    await self._queue.webhook_retry(
                        attempt.tenant, attempt.entry_id, self.consumer, attempt.entry, now
                    )
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections (:meth:`stop` does)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def deliver_due(self) -> int:
        """One round of the delivery task: retries due by the clock back into
        the queues, deliveries of dead replicas taken over, then attempts
        started as far as the limits allow; returns when they are over, with
        how many there were. Tests call it with a clock moved by hand."""
        started = await self._round(promote=True, reclaim=True, count=True)
        await asyncio.gather(*started)
        return len(started)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        # (Cadences of the loop, by the loop's clock; due times are the injected clock's.)
        next_promote = next_reclaim = next_count = loop.time()
        next_forget = loop.time() + FORGET_EVERY
        while not self._stopping.is_set():
            self._wake.clear()
            now = loop.time()
            promote, reclaim, count = (
                now >= next_promote,
                now >= next_reclaim,
                now >= next_count,
            )
            try:
                if now >= next_forget:
                    next_forget = now + FORGET_EVERY
                    await self._forget()
                await self._round(promote=promote, reclaim=reclaim, count=count)
            except StoreUnavailableError as exc:
                self._outage.add(loop, str(exc))
            except Exception:
                log.exception("webhooks: a round of deliveries failed")
            if promote:
                next_promote = now + self._poll
            if reclaim:
                next_reclaim = now + self._claim_idle / 4
            if count:
                next_count = now + COUNT_EVERY
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._poll)

    async def _round(
        self, *, promote: bool, reclaim: bool, count: bool
    ) -> list[asyncio.Task[None]]:
        """One look at every tenant's queue; the attempts it started."""
        tenants = list(self.endpoints)
        if not tenants:
            return []
        # A different tenant first each round: when slots are scarce, each
        # gets its turn.
        self._turn = (self._turn + 1) % len(tenants)
        tenants = tenants[self._turn :] + tenants[: self._turn]
        queue = self._queue
        failure: BaseException | None = None
        if promote:
            now = self._clock()
            moved = await asyncio.gather(
                *(queue.webhook_promote(t, now, PROMOTE_BATCH) for t in tenants),
                return_exceptions=True,
            )
            failure = next((m for m in moved if isinstance(m, BaseException)), None)
        allowances = self._allowances(tenants)
        taken = await asyncio.gather(
            *(self._take(t, n, reclaim) for t, n in allowances.items()), return_exceptions=True
        )
        started: list[asyncio.Task[None]] = []
        for tenant, batch in zip(allowances, taken, strict=True):
            if isinstance(batch, BaseException):
                failure = failure or batch
                continue
            for entry_id, entry in batch:
                started.append(self._start(tenant, entry_id, entry))
        if count:
            counts = await asyncio.gather(
                *(queue.webhook_backlog(t) for t in tenants), return_exceptions=True
            )
            if all(isinstance(c, int) for c in counts):
                self._queued.value = sum(c for c in counts if isinstance(c, int))
        if failure is not None:
            raise failure
        return started

    async def _forget(self) -> None:
        """Forget the queues' consumers gone for a day (and holding nothing)."""
        gone = await asyncio.gather(
            *(self._queue.webhook_forget(t, FORGET_AFTER) for t in self.endpoints)
        )
        if sum(gone):
            log.info("webhooks: forgot %d consumers gone for a day", sum(gone))

    def _allowances(self, tenants: list[str]) -> dict[str, int]:
        """How many attempts each tenant may start now, in ``tenants``'
        order, within both limits."""
        free = self._concurrency - len(self._attempts)
        allowances: dict[str, int] = {}
        for tenant in tenants:
            if free <= 0:
                break
            allowed = min(free, self._tenant_concurrency - self._per_tenant[tenant])
            if allowed > 0:
                allowances[tenant] = allowed
                free -= allowed
        return allowances

    async def _take(self, tenant: str, limit: int, reclaim: bool) -> list[tuple[str, bytes]]:
        """Up to ``limit`` entries of ``tenant``: dead replicas' first (when
        ``reclaim``), then new ones."""
        taken: list[tuple[str, bytes]] = []
        if reclaim:
            stale = await self._queue.webhook_reclaim(
                tenant, self.consumer, self._claim_idle, limit
            )
            # (Our own, under way for longer than the idle time: not twice.)
            taken = [(i, e) for i, e in stale if (tenant, i) not in self._attempts]
            if taken:
                log.info("webhooks: took over %d deliveries of tenant %s", len(taken), tenant)
        if len(taken) < limit:
            taken += await self._queue.webhook_read(tenant, self.consumer, limit - len(taken))
        return taken

    def _start(self, tenant: str, entry_id: str, entry: bytes) -> asyncio.Task[None]:
        attempt = _Attempt(tenant, entry_id, entry)
        attempt.task = asyncio.get_running_loop().create_task(
            self._deliver(attempt), name=f"railyard-webhook-{tenant}"
        )
        self._attempts[tenant, entry_id] = attempt
        self._per_tenant[tenant] += 1
        attempt.task.add_done_callback(functools.partial(self._done, attempt))
        return attempt.task

    def _done(self, attempt: _Attempt, task: asyncio.Task[None]) -> None:
        if self._attempts.get((attempt.tenant, attempt.entry_id)) is attempt:
            del self._attempts[attempt.tenant, attempt.entry_id]
        self._per_tenant[attempt.tenant] -= 1
        if not self._per_tenant[attempt.tenant]:
            del self._per_tenant[attempt.tenant]
        self._wake.set()  # a slot is free
        if not task.cancelled() and task.exception() is not None:
            # Not settled: the entry stays this consumer's, and another
            # replica (or this one) takes it over after the idle time.
            log.warning(
                "webhooks: delivery %s of tenant %s not settled: %s",
                attempt.entry_id,
                attempt.tenant,
                task.exception(),
            )

    # ------------------------------------------------------------ one delivery

    async def _deliver(self, attempt: _Attempt) -> None:
        """Attempt one queued event, then settle it: done, or a retry."""
        tenant, entry_id, queue = attempt.tenant, attempt.entry_id, self._queue
        try:
            delivery = Delivery.from_entry(attempt.entry)
        except ValueError as exc:
            log.error("webhooks: entry %s of tenant %s dropped: %s", entry_id, tenant, exc)
            self._outcomes["dropped"].inc()
            await queue.webhook_done(tenant, entry_id)
            return
        try:
            await self._attempt(attempt, delivery)
        except asyncio.CancelledError:
            attempt.cut = True  # (stop() hands it back; one already settled stays so)
            raise

    async def _attempt(self, attempt: _Attempt, delivery: Delivery) -> None:
        tenant, entry_id, queue = attempt.tenant, attempt.entry_id, self._queue
        outcome, detail = await self._post(self.endpoints[tenant], delivery)
        self._outcomes[outcome].inc()
        if outcome == "delivered":
            await queue.webhook_done(tenant, entry_id)
            return
        now = self._clock()
        failed = replace(delivery, failures=delivery.failures + 1)
        if now - delivery.created >= self._retry_for:
            log.warning(
                "webhook %s of tenant %s dropped: %d attempts over %.1f h failed (last: %s)",
                delivery.delivery_id,
                tenant,
                failed.failures,
                (now - delivery.created) / 3600,
                detail,
            )
            self._outcomes["dropped"].inc()
            await queue.webhook_done(tenant, entry_id)
            return
        delay = self.backoff(failed.failures)
        entry = failed.to_entry()
        if await queue.webhook_retry(tenant, entry_id, self.consumer, entry, now + delay):
            log.info(
                "webhook %s of tenant %s: %s; retried in %.0f s (attempt %d)",
                delivery.delivery_id,
                tenant,
                detail,
                delay,
                failed.failures + 1,
            )

    def backoff(self, failures: int) -> float:
        """Seconds before the attempt after ``failures`` failed ones:
        ``webhook_backoff`` doubling with each, up to ``webhook_backoff_max``,
        times a random 75-100%."""
        nominal = min(self._backoff_max, self._backoff * 2.0 ** min(failures - 1, 64))
        return nominal * self._rng.uniform(1 - JITTER, 1)

    async def _post(self, endpoint: Endpoint, delivery: Delivery) -> tuple[str, str]:
        """POST ``delivery`` to ``endpoint``, signed now: ("delivered", "")
        on a 2xx, else ("failed" or "refused", what happened)."""
        timestamp = int(self._clock())
        headers = {
            "content-type": "application/json",
            SIGNATURE_HEADER: sign(endpoint.secrets, timestamp, delivery.body),
            DELIVERY_HEADER: delivery.delivery_id,
        }
        client = self._http()
        try:
            async with asyncio.timeout(self._timeout):
                request = client.build_request(
                    "POST", endpoint.url, content=delivery.body, headers=headers
                )
                # Streamed, and closed unread: only the status counts, and a
                # receiver's body is not this process's to hold.
                response = await client.send(request, stream=True)
                await response.aclose()
        except RefusedTargetError as exc:
            return "refused", str(exc)
        except TimeoutError:
            return "failed", f"no answer within {self._timeout:g} s"
        except (httpx.HTTPError, OSError) as exc:
            return "failed", f"{type(exc).__name__}: {exc}"
        if 200 <= response.status_code < 300:
            return "delivered", ""
        return "failed", f"answered {response.status_code}"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            transport = GuardedTransport(
                allow_private=self._allow_private,
                max_connections=self._concurrency,
                resolver=self._resolver,
                ssl_context=self._ssl_context,
            )
            self._client = httpx.AsyncClient(
                transport=transport,
                timeout=self._timeout,
                follow_redirects=False,
                trust_env=False,
                headers={"user-agent": USER_AGENT},
            )
        return self._client
